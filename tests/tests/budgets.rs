//! Budgets that pause and ask: `[sessions] max_tokens`, `max_cost_usd`, `max_run_secs` and a
//! definition's `maxTokens`, reached before a model call, pause the run with `budgetExceeded`;
//! any client answers with `budget/respond` (continue with a higher limit, or stop), and with
//! nobody who answers the run ends with status `budget` naming the budget.

use agentd_tests::harness::Client;
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::budget::{BudgetDecision, BudgetKind, BudgetRequest};
use protocol::event::{Event, RunStatus};
use serde_json::json;

/// Model prices for the mock: $1000 per million tokens, so one token costs $0.001.
const PRICES: &str = "[providers.mock.prices]\ninput = 1000.0\noutput = 1000.0\n";

/// The budget pause in `events` (the last one).
pub(crate) fn paused(events: &[Envelope]) -> BudgetRequest {
    events
        .iter()
        .rev()
        .find_map(|e| match &e.event {
            Event::BudgetExceeded { request, .. } => Some(request.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no budgetExceeded in {events:#?}"))
}

/// How the budget pause in `events` was decided: decision, by whom, the new limit.
pub(crate) fn resolved(events: &[Envelope]) -> (BudgetDecision, String, Option<f64>) {
    events
        .iter()
        .rev()
        .find_map(|e| match &e.event {
            Event::BudgetResolved {
                decision,
                decided_by,
                new_limit,
                ..
            } => Some((*decision, decided_by.clone(), *new_limit)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no budgetResolved in {events:#?}"))
}

pub(crate) async fn until_paused(client: &mut Client) -> BudgetRequest {
    let events = client
        .persisted_events_until(|event| matches!(event, Event::BudgetExceeded { .. }))
        .await;
    paused(&events)
}

/// A token budget needs no prices. The run pauses before its second model call; another
/// client than the one that started it raises the limit and the run finishes. The next run
/// counts from nothing, pauses again, and a `stop` ends it with status `budget`.
#[tokio::test]
async fn a_token_budget_pauses_and_another_client_continues_or_stops_it() {
    let s = Scenario::start_with(Format::OpenAi, "[sessions]\nmax_tokens = 20\n").await;
    s.mock
        .push(Reply::tool_call("call_1", "list_dir", json!({"path": "."})).usage(30, 10, 0));
    s.mock.push(Reply::text("done").usage(50, 5, 0));
    let (mut client, session) = s.session().await;
    let mut other = s.client().await;
    client.prompt(&session, "look around").await;
    let request = until_paused(&mut client).await;
    assert_eq!(request.budget, BudgetKind::Tokens);
    assert_eq!((request.used, request.limit), (40.0, 20.0));
    assert_eq!(request.suggested_limit, 60.0);
    assert!(request.message.contains("max_tokens"), "{request:?}");
    assert_eq!(s.mock.requests().len(), 1, "paused before the second call");

    let answer = other
        .request(
            "budget/respond",
            json!({"requestId": request.request_id, "decision": "continue", "newLimit": 1000}),
        )
        .await
        .unwrap();
    assert_eq!(answer["newLimit"], json!(1000.0));
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let (decision, by, limit) = resolved(&events);
    assert_eq!(decision, BudgetDecision::Continue);
    assert!(by.starts_with("client:"), "{by}");
    assert_eq!(limit, Some(1000.0));
    assert_eq!(s.mock.requests().len(), 2);
    // The first answer won: a late one is told so.
    let late = client
        .request(
            "budget/respond",
            json!({"requestId": request.request_id, "decision": "stop"}),
        )
        .await
        .unwrap_err();
    assert_eq!(
        late.code,
        i64::from(protocol::error::ALREADY_DECIDED),
        "{late:?}"
    );

    // Per run: the next one starts from nothing, so its first call is made.
    s.mock
        .push(Reply::tool_call("call_2", "list_dir", json!({"path": "."})).usage(30, 10, 0));
    client.prompt(&session, "again").await;
    let request = until_paused(&mut client).await;
    assert_eq!(s.mock.requests().len(), 3);
    other
        .request(
            "budget/respond",
            json!({"requestId": request.request_id, "decision": "stop"}),
        )
        .await
        .unwrap();
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Budget);
    let error = run_error(&events);
    assert!(
        error.contains("max_tokens in [sessions]") && error.contains("stopped by client:"),
        "{error}"
    );
    assert_eq!(s.mock.requests().len(), 3, "no call after the stop");
}

/// Nobody who answers follows (a viewer does not count): the run ends at once with status
/// `budget`, its error naming the budget and how to raise it; the pause is still recorded.
#[tokio::test]
async fn with_nobody_to_answer_a_cost_budget_ends_the_run_at_once() {
    let s = Scenario::start_with(
        Format::OpenAi,
        &format!("{PRICES}[sessions]\nmax_cost_usd = 0.01\n"),
    )
    .await;
    s.mock
        .push(Reply::tool_call("call_1", "list_dir", json!({"path": "."})));
    s.mock.push(Reply::text("never asked for"));
    let mut viewer = Client::connect_raw(s.daemon.socket()).await.unwrap();
    viewer.initialize_as("viewer", false).await;
    let session = create_session(&mut viewer, &s.workspace()).await;
    viewer.subscribe(&session, Some(0)).await;
    viewer.prompt(&session, "spend").await;
    let events = viewer.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Budget);
    let error = run_error(&events);
    assert!(
        error.contains("$0.0150")
            && error.contains("max_cost_usd in [sessions] of config.toml")
            && error.contains("no client that answers"),
        "{error}"
    );
    assert_eq!(paused(&events).budget, BudgetKind::CostUsd);
    assert_eq!(resolved(&events).1, "mode");
    assert_eq!(s.mock.requests().len(), 1);
}

/// A run that works past `max_run_secs` (its model call is slow) pauses at its next step;
/// continued, it finishes.
#[tokio::test]
async fn a_run_past_its_time_budget_pauses_at_its_next_step() {
    let s = Scenario::start_with(Format::OpenAi, "[sessions]\nmax_run_secs = 1\n").await;
    s.mock
        .push(Reply::tool_call("call_1", "list_dir", json!({"path": "."})).delay_ms(1500));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "slowly").await;
    let request = until_paused(&mut client).await;
    assert_eq!(request.budget, BudgetKind::RunSecs);
    assert!(request.used >= 1.0 && request.limit == 1.0, "{request:?}");
    assert!(request.message.contains("max_run_secs"), "{request:?}");
    client
        .request(
            "budget/respond",
            json!({"requestId": request.request_id, "decision": "continue", "newLimit": 3600}),
        )
        .await
        .unwrap();
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(s.mock.requests().len(), 2);
}

/// A subagent `counter` with `maxTokens: 20`, and a run that delegates to it: its first model
/// call (40 tokens) reaches its budget; the parent's second call ends the run.
pub(crate) fn script_counting_subagent(s: &Scenario) {
    let dir = s.workspace().join(".agents/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("counter.md"),
        "---\nname: counter\ndescription: Counts\nmaxTokens: 20\n---\nCount.",
    )
    .unwrap();
    s.mock.push(Reply::tool_call(
        "call_t",
        "task",
        json!({"prompt": "count the files", "agentType": "counter"}),
    ));
    s.mock
        .push(Reply::tool_call("call_c", "list_dir", json!({"path": "."})).usage(30, 10, 0));
    s.mock.push(Reply::text("the counter ran out"));
}

/// A subagent's `maxTokens`: its pause reaches the parent session labelled with the task, is
/// answered there, and a stopped child's task records the budget.
#[tokio::test]
async fn a_subagents_token_budget_pauses_in_its_parent_and_the_task_records_the_stop() {
    let s = Scenario::start(Format::OpenAi).await;
    script_counting_subagent(&s);
    let (mut client, session) = s.session().await;
    client.prompt(&session, "count").await;
    let request = until_paused(&mut client).await;
    assert_eq!(request.budget, BudgetKind::Tokens);
    assert!(request.message.contains("maxTokens"), "{request:?}");
    assert_eq!(request.agent_type.as_deref(), Some("counter"));
    let task_id = request.task_id.clone().expect("the pause names its task");
    client
        .request(
            "budget/respond",
            json!({"requestId": request.request_id, "decision": "stop"}),
        )
        .await
        .unwrap();
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let got = client
        .request("task/get", json!({"taskId": task_id}))
        .await
        .unwrap();
    assert_eq!(got["task"]["status"], "failed", "{got}");
    let error = got["task"]["error"].as_str().unwrap_or_default();
    assert!(error.contains("maxTokens"), "{got}");
    assert_eq!(s.mock.requests().len(), 3);
}
