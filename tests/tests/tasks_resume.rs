//! Background subagents that survive a restart: a background task whose child is inside a
//! tool call when the daemon is stopped (SIGTERM: its run is suspended, its record stays
//! `running`) or killed (SIGKILL) goes on at the next start: `taskResumed` in its parent's
//! log, the child's run resumed with the call answered "interrupted by a daemon restart"
//! (never run again), the task finished with the child's answer and the parent notified.
//! A task started by a client (`task/start`) resumes too.

use agentd_tests::gate::HttpGate;
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use agentd_tests::task_records;
use protocol::event::{Event, RunStatus};
use protocol::task::{TaskInfo, TaskStatus};
use serde_json::{Value, json};

/// What only a child's request holds: its prompt as its user message.
const CHILD_MARK: &str = r#""content":""#;

/// Children may fetch from the gate without asking.
const BYPASS_FETCH: &str =
    "[permissions]\ndefault_mode = \"bypass\"\nallow = [\"WebFetch(domain:127.0.0.1)\"]\n";

/// What a started call's result says after a restart.
const UNKNOWN_EFFECT: &str = "interrupted by a daemon restart";

/// The task's record file, as JSON (`None` before it is written).
fn record_file(s: &Scenario, task_id: &str) -> Option<Value> {
    let path = task_records::tasks_dir(&s.daemon.env).join(format!("{task_id}.json"));
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// The requests the child made (its prompt is their user message).
fn child_requests(s: &Scenario, prompt: &str) -> Vec<agentd_tests::mock_llm::RecordedRequest> {
    let mark = format!("{CHILD_MARK}{prompt}");
    s.mock
        .requests()
        .into_iter()
        .filter(|request| request.body.contains(&mark))
        .collect()
}

/// The task of the first task event `pick` takes among `events`.
fn task_in(events: &[Envelope], pick: fn(&Event) -> Option<&TaskInfo>) -> Option<TaskInfo> {
    events
        .iter()
        .find_map(|envelope| pick(&envelope.event).cloned())
}

fn started(event: &Event) -> Option<&TaskInfo> {
    match event {
        Event::TaskStarted { task } => Some(task),
        _ => None,
    }
}

fn resumed(event: &Event) -> Option<&TaskInfo> {
    match event {
        Event::TaskResumed { task } => Some(task),
        _ => None,
    }
}

fn finished(event: &Event) -> Option<&TaskInfo> {
    match event {
        Event::TaskFinished { task } => Some(task),
        _ => None,
    }
}

/// Stops the daemon gracefully (the task's record stays `running`, its child's run is
/// suspended) or kills it, then waits until it is gone.
async fn stop_daemon(s: &mut Scenario, graceful: bool, task_id: &str) {
    if graceful {
        s.daemon.signal(libc::SIGTERM);
        assert!(s.daemon.wait_exit().await.success());
    } else {
        s.daemon.kill().await;
    }
    // A stop never ends a background subagent: as the file now says, it was running.
    let record = record_file(s, task_id).expect("the task's record");
    assert_eq!(record["status"], "running", "{record:#}");
}

async fn a_background_subagent_goes_on_after(graceful: bool) {
    let gate = HttpGate::start().await;
    let mut s = Scenario::start_with(Format::OpenAi, BYPASS_FETCH).await;
    s.mock.push(Reply::tool_call(
        "call_t",
        "task",
        json!({"prompt": "hold on", "runInBackground": true}),
    ));
    s.mock.push(Reply::text("started"));
    s.mock.push_for(
        format!("{CHILD_MARK}hold on"),
        Reply::tool_call("call_f", "fetch_url", json!({"url": gate.url("held")})),
    );
    s.mock.push_for(
        format!("{CHILD_MARK}hold on"),
        Reply::text("checked again: all fine"),
    );
    // The parent's run the notification starts.
    s.mock.push(Reply::text("noted the result"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "delegate").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed, "{events:#?}");
    let task = task_in(&events, started).expect("a taskStarted");
    // The child is inside its tool call (the gate is never opened), its record says running.
    wait_until("the child's fetch to reach the gate", || {
        gate.requests() > 0
    })
    .await;
    wait_until("the record to say running", || {
        record_file(&s, &task.task_id).is_some_and(|record| record["status"] == "running")
    })
    .await;
    let last_seq = events.last().map(|envelope| envelope.seq).unwrap_or(0);
    drop(client);
    stop_daemon(&mut s, graceful, &task.task_id).await;

    s.daemon.restart().await;
    let mut client = s.client().await;
    client.subscribe(&session, Some(last_seq)).await;
    let after = client.events_until_run_finished().await;
    let resumed_task = task_in(&after, resumed).expect("a taskResumed in the parent's log");
    assert_eq!(resumed_task.task_id, task.task_id);
    assert_eq!(resumed_task.status, TaskStatus::Running);
    let done = task_in(&after, finished).expect("a taskFinished");
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
    assert_eq!(done.result.as_deref(), Some("checked again: all fine"));
    // Resumed before it finished, and its result reached the parent as a notification run.
    let position = |pick: fn(&Event) -> Option<&TaskInfo>| {
        after
            .iter()
            .position(|envelope| pick(&envelope.event).is_some())
            .unwrap()
    };
    assert!(position(resumed) < position(finished), "{after:#?}");
    assert_eq!(run_status(&after), RunStatus::Completed, "{after:#?}");
    let parent_saw = request_user_texts(Format::OpenAi, s.mock.requests().last().unwrap());
    assert!(
        parent_saw.last().is_some_and(
            |text| text.contains(&task.task_id) && text.contains("checked again: all fine")
        ),
        "{parent_saw:#?}"
    );

    // The child was asked once more, with the call's effect unknown; the call never ran again.
    let asked = child_requests(&s, "hold on");
    assert_eq!(asked.len(), 2, "{asked:#?}");
    let seen = request_tool_results(Format::OpenAi, &asked[1]);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].0, "call_f");
    assert!(seen[0].1.starts_with(UNKNOWN_EFFECT), "{seen:?}");
    assert_eq!(gate.requests(), 1, "the fetch ran again");

    // The child's own log says it resumed, under its one run.
    let child = done.child_session_id.clone().expect("a child session");
    let mut reader = s.client().await;
    reader.subscribe(&child, Some(0)).await;
    let child_log = reader.events_until_run_finished().await;
    let runs_resumed = child_log
        .iter()
        .filter(|envelope| matches!(envelope.event, Event::RunResumed { .. }))
        .count();
    assert_eq!(runs_resumed, 1, "{child_log:#?}");
    assert_eq!(run_status(&child_log), RunStatus::Completed);
    let record = record_file(&s, &task.task_id).unwrap();
    assert_eq!(record["status"], "completed", "{record:#}");
}

#[tokio::test]
async fn a_background_subagent_stopped_gracefully_goes_on_after_the_restart() {
    a_background_subagent_goes_on_after(true).await;
}

#[tokio::test]
async fn a_background_subagent_killed_mid_tool_goes_on_after_the_restart() {
    a_background_subagent_goes_on_after(false).await;
}

#[tokio::test]
async fn a_clients_task_goes_on_after_a_crash_and_keeps_its_result() {
    let gate = HttpGate::start().await;
    let mut s = Scenario::start_with(Format::OpenAi, BYPASS_FETCH).await;
    s.mock.push_for(
        format!("{CHILD_MARK}look it up"),
        Reply::tool_call("call_f", "fetch_url", json!({"url": gate.url("held")})),
    );
    s.mock.push_for(
        format!("{CHILD_MARK}look it up"),
        Reply::text("looked it up"),
    );
    let mut client = s.client().await;
    let cwd = s.workspace().display().to_string();
    let started = client
        .request("task/start", json!({"prompt": "look it up", "cwd": cwd}))
        .await
        .expect("task/start");
    let task_id = started["task"]["taskId"].as_str().unwrap().to_owned();
    wait_until("the child's fetch to reach the gate", || {
        gate.requests() > 0
    })
    .await;
    wait_until("the record to say running", || {
        record_file(&s, &task_id).is_some_and(|record| record["status"] == "running")
    })
    .await;
    drop(client);
    stop_daemon(&mut s, false, &task_id).await;

    s.daemon.restart().await;
    let mut client = s.client().await;
    client.subscribe_daemon().await;
    // It may have finished before the subscription: ask until it has.
    let task = loop {
        let got = client
            .request("task/get", json!({"taskId": task_id}))
            .await
            .unwrap();
        let task: TaskInfo = serde_json::from_value(got["task"].clone()).unwrap();
        if task.status.is_finished() {
            break task;
        }
        client
            .daemon_events_until(|event| matches!(event, Event::TaskFinished { .. }))
            .await;
    };
    assert_eq!(task.status, TaskStatus::Completed, "{task:#?}");
    assert_eq!(task.result.as_deref(), Some("looked it up"));
    assert_eq!(gate.requests(), 1, "the fetch ran again");
}
