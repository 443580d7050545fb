//! Background task notifications cannot chain without bound: after `[tasks]
//! max_notification_runs` runs in a row started by `<task-notification>`s without user input,
//! a result waits for the user's next prompt, and a warning says so.

use agentd_tests::gate::HttpGate;
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use protocol::event::Event;
use serde_json::json;

/// What only a child's request holds before its prompt: the prompt as its user message.
const CHILD_MARK: &str = r#""content":""#;

/// The parent starts background task `chain N` and ends its run; the child fetches gate `N`
/// (held until the test opens it, so it ends only once the parent is idle) and reports.
fn chain_link(s: &Scenario, gate: &HttpGate, n: u32) {
    let prompt = format!("chain {n}");
    s.mock.push(Reply::tool_call(
        format!("call_t{n}"),
        "task",
        json!({"prompt": prompt, "runInBackground": true}),
    ));
    s.mock.push(Reply::text(format!("started {n}")));
    s.mock.push_for(
        format!("{CHILD_MARK}{prompt}"),
        Reply::tool_call(
            format!("call_f{n}"),
            "fetch_url",
            json!({"url": gate.url(&n.to_string())}),
        ),
    );
    s.mock.push_for(
        format!("{CHILD_MARK}{prompt}"),
        Reply::text(format!("done {n}")),
    );
}

#[tokio::test]
async fn a_model_that_starts_a_task_on_every_notification_stops_after_the_cap() {
    let gate = HttpGate::start().await;
    let s = Scenario::start_with(
        Format::OpenAi,
        "[permissions]\ndefault_mode = \"bypass\"\nallow = [\"WebFetch(domain:127.0.0.1)\"]\n\
         [tasks]\nmax_notification_runs = 2\n",
    )
    .await;
    // The user's run and the two notification runs the cap allows each start a task.
    for n in 1..=3 {
        chain_link(&s, &gate, n);
    }
    let (mut client, session) = s.session().await;
    client.prompt(&session, "go").await;
    for n in 1..=3 {
        let events = client.events_until_run_finished().await;
        assert!(
            events
                .iter()
                .any(|e| matches!(&e.event, Event::TaskStarted { .. })),
            "run {n} started no task: {events:#?}"
        );
        // The run is over: the child's result starts the next run (or, the third time, waits).
        gate.open(&n.to_string(), &format!("page {n}"));
    }
    let events = client
        .persisted_events_until(|event| matches!(event, Event::Warning { .. }))
        .await;
    let Some(Event::Warning { message }) = events.last().map(|e| &e.event) else {
        unreachable!()
    };
    assert!(
        message.contains("waits for your next prompt")
            && message.contains("max_notification_runs = 2"),
        "{message}"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(&e.event, Event::RunStarted { .. })),
        "a fourth run started: {events:#?}"
    );
    let before = s.mock.requests().len();

    // The user's next prompt delivers the held result, before its own words, and resets the
    // count.
    s.mock.push(Reply::text("task 3 finished too"));
    client.prompt(&session, "anything new?").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), protocol::event::RunStatus::Completed);
    let requests = s.mock.requests();
    assert_eq!(
        requests.len(),
        before + 1,
        "only the user's run asked the model"
    );
    let said = request_user_texts(Format::OpenAi, requests.last().unwrap()).join("\n");
    let held = said
        .rfind("<task-notification>")
        .filter(|at| said[*at..].contains("done 3"))
        .unwrap_or_else(|| panic!("the held result was not delivered: {said}"));
    let asked = said
        .rfind("anything new?")
        .unwrap_or_else(|| panic!("no prompt: {said}"));
    assert!(held < asked, "{said}");
}
