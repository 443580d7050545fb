//! Approvals know who can answer: only subscriptions of clients that declared
//! `capabilities.approvals` in `initialize` make a run wait for an answer. A status bar on
//! `daemon/subscribe` or a viewer of the session without it (or an older client that declares
//! nothing) leaves a headless session deciding at once by its mode.

use agentd_tests::harness::Client;
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::approval::ApprovalDecision;
use protocol::event::{Event, RunStatus};
use serde_json::json;

use crate::approvals::{ASK, ASK_FAST_TIMEOUT, model_saw, respond, shell};

/// A client named `name` that declares `capabilities.approvals` as given.
async fn client_declaring(s: &Scenario, name: &str, answers_approvals: bool) -> Client {
    let mut client = Client::connect_raw(s.daemon.socket())
        .await
        .expect("connect");
    client.initialize_as(name, answers_approvals).await;
    client
}

/// A status bar: a client on `daemon/subscribe`; returns it and its subscription id.
async fn status_bar(s: &Scenario, answers_approvals: bool) -> (Client, serde_json::Value) {
    let mut client = client_declaring(s, "status-bar", answers_approvals).await;
    let subscription = client
        .request("daemon/subscribe", json!({}))
        .await
        .expect("daemon/subscribe");
    (client, subscription)
}

/// A session with a prompt that asks to run `touch FILE`, started by a client that never
/// subscribes (a headless run, as from a script).
async fn headless_run(s: &Scenario, file: &str) -> String {
    s.mock.push(shell("c1", &format!("touch {file}")));
    s.mock.push(Reply::text("done"));
    let mut owner = s.client().await;
    let session = create_session(&mut owner, &s.workspace()).await;
    owner.prompt(&session, "touch it").await;
    session
}

/// `(decision, decidedBy)` of every `approvalResolved` in `events`.
fn decisions(events: &[Envelope]) -> Vec<(ApprovalDecision, String)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ApprovalResolved {
                decision,
                decided_by,
                ..
            } => Some((*decision, decided_by.clone())),
            _ => None,
        })
        .collect()
}

fn is_run_finished(event: &Event) -> bool {
    matches!(event, Event::RunFinished { .. })
}

/// The run was decided by mode without waiting: denied, the model told, nothing ran.
fn assert_decided_by_mode(s: &Scenario, events: &[Envelope], file: &str) {
    assert_eq!(run_status(events), RunStatus::Completed);
    assert_eq!(
        decisions(events),
        [(ApprovalDecision::Deny, "mode".to_owned())],
        "{events:#?}"
    );
    assert!(model_saw(s, "c1").contains("denied"));
    assert!(!s.workspace().join(file).exists(), "the command ran");
}

// The approval timeout is one second in the tests where nobody may answer: a daemon that
// still waited would end the approval as `timeout`, not `mode`.

#[tokio::test]
async fn a_status_bar_that_does_not_answer_approvals_does_not_hold_a_headless_approval() {
    let s = Scenario::start_with(Format::OpenAi, ASK_FAST_TIMEOUT).await;
    let (mut bar, _) = status_bar(&s, false).await;
    headless_run(&s, "bar.txt").await;
    let events = bar.daemon_events_until(is_run_finished).await;
    assert_decided_by_mode(&s, &events, "bar.txt");
}

#[tokio::test]
async fn a_status_bar_that_answers_approvals_holds_the_approval_and_answers_it() {
    let s = Scenario::start_with(Format::OpenAi, ASK).await;
    let (mut bar, _) = status_bar(&s, true).await;
    headless_run(&s, "answered.txt").await;
    let asked = bar
        .daemon_events_until(|event| matches!(event, Event::ApprovalRequested { .. }))
        .await;
    let Some(Event::ApprovalRequested { approval, .. }) = asked.last().map(|e| &e.event) else {
        unreachable!("{asked:#?}")
    };
    assert!(
        decisions(&asked).is_empty(),
        "decided before anyone answered"
    );
    assert!(!s.workspace().join("answered.txt").exists());
    respond(&mut bar, &approval.approval_id, "allowOnce", None)
        .await
        .expect("approval/respond");
    let events = bar.daemon_events_until(is_run_finished).await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(
        decisions(&events),
        [(ApprovalDecision::AllowOnce, "client:status-bar".to_owned())]
    );
    assert!(s.workspace().join("answered.txt").exists());
}

#[tokio::test]
async fn a_session_subscriber_of_an_older_client_that_declares_nothing_does_not_count() {
    let s = Scenario::start_with(Format::OpenAi, ASK_FAST_TIMEOUT).await;
    let mut owner = s.client().await;
    let session = create_session(&mut owner, &s.workspace()).await;
    // An older client: `initialize` without `capabilities` at all.
    let mut viewer = Client::connect_raw(s.daemon.socket())
        .await
        .expect("connect");
    viewer
        .request(
            "initialize",
            json!({
                "clientInfo": {"name": "viewer", "version": "0"},
                "protocolVersion": protocol::PROTOCOL_VERSION,
            }),
        )
        .await
        .expect("initialize without capabilities");
    viewer.subscribe(&session, Some(0)).await;
    s.mock.push(shell("c1", "touch viewer.txt"));
    s.mock.push(Reply::text("done"));
    owner.prompt(&session, "touch it").await;
    let events = viewer.events_until_run_finished().await;
    assert_decided_by_mode(&s, &events, "viewer.txt");
}

#[tokio::test]
async fn a_session_subscriber_that_declares_approvals_false_does_not_count() {
    let s = Scenario::start_with(Format::OpenAi, ASK_FAST_TIMEOUT).await;
    let mut viewer = client_declaring(&s, "viewer", false).await;
    let session = create_session(&mut viewer, &s.workspace()).await;
    viewer.subscribe(&session, Some(0)).await;
    s.mock.push(shell("c1", "touch own.txt"));
    s.mock.push(Reply::text("done"));
    viewer.prompt(&session, "touch it").await;
    let events = viewer.events_until_run_finished().await;
    assert_decided_by_mode(&s, &events, "own.txt");
}

#[tokio::test]
async fn an_answering_subscription_stops_counting_once_unsubscribed() {
    let s = Scenario::start_with(Format::OpenAi, ASK_FAST_TIMEOUT).await;
    // Watches without counting.
    let (mut watcher, _) = status_bar(&s, false).await;
    let mut owner = client_declaring(&s, "owner", true).await;
    let session = create_session(&mut owner, &s.workspace()).await;
    let on_session = owner.subscribe(&session, Some(0)).await;
    let (mut bar, on_daemon) = status_bar(&s, true).await;
    let ended = owner
        .request("session/unsubscribe", json!([on_session]))
        .await
        .expect("session/unsubscribe");
    assert_eq!(ended, json!({"unsubscribed": true}));
    let ended = bar
        .request("daemon/unsubscribe", json!([on_daemon]))
        .await
        .expect("daemon/unsubscribe");
    assert_eq!(ended, json!({"unsubscribed": true}));
    s.mock.push(shell("c1", "touch after.txt"));
    s.mock.push(Reply::text("done"));
    owner.prompt(&session, "touch it").await;
    let events = watcher.daemon_events_until(is_run_finished).await;
    assert_decided_by_mode(&s, &events, "after.txt");
}
