//! A child task's approvals are decided as its parent's would be: with nobody who answers on
//! the parent or the child, by mode at once; `agentctl run --approve never|all` answers the
//! approvals of its run's children as it answers its own (they name the parent's run,
//! `parentRunId`), so a headless run never waits on a child.

use agentd_tests::harness::{Client, TestEnv, text};
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::scenario::*;
use protocol::event::{Event, RunStatus};
use serde_json::{Value, json};

use crate::approvals::{ASK, write};

/// The parent delegates a write to a foreground child, which then says `child_says`; the
/// parent ends with `parent_says`.
fn delegate_a_write(mock: &MockLlm, child_says: &str, parent_says: &str) {
    mock.push(Reply::tool_call(
        "call_t",
        "task",
        json!({"prompt": "write the note"}),
    ));
    mock.push(write("call_w", "note.txt", "from the child\n"));
    mock.push(Reply::text(child_says));
    mock.push(Reply::text(parent_says));
}

/// The child's tool result as the model saw it (its second request holds it).
fn child_tool_result(mock: &MockLlm) -> String {
    let requests = mock.requests();
    let child = requests.get(2).expect("the child's second request");
    request_tool_results(Format::OpenAi, child)
        .into_iter()
        .find(|(call, _)| call == "call_w")
        .unwrap_or_else(|| panic!("no result for call_w: {}", child.body))
        .1
}

#[tokio::test]
async fn a_childs_approval_with_nobody_who_answers_is_denied_by_mode_at_once() {
    let s = Scenario::start_with(Format::OpenAi, ASK).await;
    delegate_a_write(&s.mock, "I was not allowed to", "the child could not write");
    // A viewer follows the parent but answers nothing: nobody who answers is attached.
    let mut viewer = Client::connect_raw(s.daemon.socket()).await.unwrap();
    viewer.initialize_as("viewer", false).await;
    let session = create_session(&mut viewer, &s.workspace()).await;
    viewer.subscribe(&session, Some(0)).await;
    let run_id = viewer.prompt(&session, "delegate a write").await;
    // Bounded by the harness's wait, far below the 600 s approval timeout it waited before.
    let events = viewer.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed, "{events:#?}");
    let requested = events
        .iter()
        .find_map(|envelope| match &envelope.event {
            Event::ApprovalRequested { approval, .. } => Some(approval.clone()),
            _ => None,
        })
        .expect("the child's approval reached the parent");
    assert!(requested.task_id.is_some(), "{requested:#?}");
    assert_eq!(requested.parent_run_id.as_deref(), Some(run_id.as_str()));
    let decided_by = events
        .iter()
        .find_map(|envelope| match &envelope.event {
            Event::ApprovalResolved {
                approval_id,
                decided_by,
                ..
            } if *approval_id == requested.approval_id => Some(decided_by.clone()),
            _ => None,
        })
        .expect("the child's approval was resolved");
    assert_eq!(decided_by, "mode");
    assert!(!s.workspace().join("note.txt").exists());
    let seen = child_tool_result(&s.mock);
    assert!(seen.contains("no client is attached"), "{seen}");
}

#[tokio::test]
async fn a_childs_pending_approval_is_denied_by_mode_once_the_last_answerer_leaves() {
    let s = Scenario::start_with(Format::OpenAi, ASK).await;
    delegate_a_write(&s.mock, "I was not allowed to", "the child could not write");
    // The answerer is there when the child asks, and leaves without answering.
    let (mut answerer, session) = s.session().await;
    let mut viewer = Client::connect_raw(s.daemon.socket()).await.unwrap();
    viewer.initialize_as("viewer", false).await;
    viewer.subscribe(&session, Some(0)).await;
    answerer.prompt(&session, "delegate a write").await;
    let events = viewer
        .persisted_events_until(|event| matches!(event, Event::ApprovalRequested { .. }))
        .await;
    let Some(Event::ApprovalRequested { approval, .. }) = events.last().map(|e| &e.event) else {
        unreachable!()
    };
    let approval_id = approval.approval_id.clone();
    drop(answerer);
    // Bounded by the harness's wait, far below the 600 s approval timeout it waited before.
    let events = viewer.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed, "{events:#?}");
    let decided_by = events
        .iter()
        .find_map(|envelope| match &envelope.event {
            Event::ApprovalResolved {
                approval_id: id,
                decided_by,
                ..
            } if *id == approval_id => Some(decided_by.clone()),
            _ => None,
        })
        .expect("the child's approval was resolved");
    assert_eq!(decided_by, "mode");
    assert!(!s.workspace().join("note.txt").exists());
    let seen = child_tool_result(&s.mock);
    assert!(seen.contains("attached any more"), "{seen}");
}

/// An agentctl environment whose daemon talks to `mock` and asks before shell and writes.
fn asking_env(mock: &MockLlm) -> TestEnv {
    TestEnv::new()
        .var("OPENAI_API_KEY", "sk-test")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .config(ASK)
}

/// The event envelopes `agentctl run --json` printed (its last line, the result, left out).
fn printed_events(stdout: &[u8]) -> Vec<Value> {
    text(stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|value| value["type"] != "result")
        .collect()
}

/// The child's approval `run --json` printed and how it was resolved: (approval, resolution).
fn child_approval(events: &[Value]) -> (Value, Value) {
    let requested = events
        .iter()
        .map(|envelope| &envelope["event"])
        .find(|event| {
            event["type"] == "approvalRequested" && event["approval"]["taskId"].is_string()
        })
        .unwrap_or_else(|| panic!("no child approval: {events:#?}"))
        .clone();
    let id = &requested["approval"]["approvalId"];
    let resolved = events
        .iter()
        .map(|envelope| &envelope["event"])
        .find(|event| event["type"] == "approvalResolved" && event["approvalId"] == *id)
        .unwrap_or_else(|| panic!("the child's approval was not resolved: {events:#?}"))
        .clone();
    (requested, resolved)
}

/// The run id of the first `runStarted` printed.
fn parent_run_id(events: &[Value]) -> Value {
    events
        .iter()
        .map(|envelope| &envelope["event"])
        .find(|event| event["type"] == "runStarted")
        .map(|event| event["runId"].clone())
        .expect("runStarted")
}

#[tokio::test]
async fn agentctl_run_approve_never_denies_its_childs_approval_at_once() {
    let mock = MockLlm::start().await;
    delegate_a_write(&mock, "I was not allowed to", "the child could not write");
    let env = asking_env(&mock);
    // Bounded by the harness's wait, far below the 600 s approval timeout it waited before.
    let output = env
        .run_agentctl(&["run", "--json", "--approve", "never", "delegate a write"])
        .await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let events = printed_events(&output.stdout);
    let (requested, resolved) = child_approval(&events);
    assert_eq!(
        requested["approval"]["parentRunId"],
        parent_run_id(&events),
        "{requested:#}"
    );
    assert_eq!(resolved["decision"], "deny", "{resolved:#}");
    assert_eq!(resolved["decidedBy"], "policy:agentctl", "{resolved:#}");
    assert!(!env.workspace().join("note.txt").exists());
    let seen = child_tool_result(&mock);
    assert!(seen.contains("not interactive"), "{seen}");
}

#[tokio::test]
async fn agentctl_run_approve_all_lets_its_childs_call_run() {
    let mock = MockLlm::start().await;
    delegate_a_write(&mock, "wrote it", "the child wrote it");
    let env = asking_env(&mock);
    let output = env
        .run_agentctl(&["run", "--approve", "all", "delegate a write"])
        .await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("allowed once write_file"), "{stderr}");
    assert_eq!(text(&output.stdout), "the child wrote it\n", "{stderr}");
    assert_eq!(
        std::fs::read_to_string(env.workspace().join("note.txt")).unwrap(),
        "from the child\n"
    );
}
