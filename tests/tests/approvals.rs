//! Approvals and permissions end to end, against the real daemon and the mock LLM (OpenAI and
//! Anthropic formats): several clients answering one approval (first wins), replay to late
//! subscribers, a restart while pending, timeout, allow-for-session, always-allow, deny and
//! deny-and-cancel, headless sessions, the modes and hard limits, and rule layers.

use std::path::Path;

use agentd_tests::harness::{Client, RpcError, decode};
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::approval::{ApprovalDecision, PendingApproval};
use protocol::error as codes;
use protocol::event::{Event, RunStatus};
use serde_json::{Value, json};

/// The daemon's user config.toml as it is on disk now.
pub(crate) fn user_config(s: &Scenario) -> toml::Table {
    let path = s
        .daemon
        .env
        .path("config")
        .join("agentd")
        .join("config.toml");
    std::fs::read_to_string(&path).unwrap().parse().unwrap()
}

/// Sessions ask before shell commands and writes (scenarios default to bypass otherwise).
pub(crate) const ASK: &str = "[permissions]\ndefault_mode = \"default\"\n";

/// As `ASK`, with approvals that time out after one second.
pub(crate) const ASK_FAST_TIMEOUT: &str =
    "[permissions]\ndefault_mode = \"default\"\napproval_timeout_secs = 1\n";

pub(crate) fn shell(id: &str, command: &str) -> Reply {
    Reply::tool_call(id, "run_shell", json!({"command": command}))
}

pub(crate) fn write(id: &str, path: &str, content: &str) -> Reply {
    Reply::tool_call(id, "write_file", json!({"path": path, "content": content}))
}

/// A client that introduces itself as `name` (answers are attributed to `client:<name>`) and
/// declares that it answers approvals.
pub(crate) async fn named_client(s: &Scenario, name: &str) -> Client {
    let mut client = Client::connect_raw(s.daemon.socket())
        .await
        .expect("connect");
    client.initialize_as(name, true).await;
    client
}

/// `session/create` in the workspace with extra params (`permissionMode`, `permissionRules`).
pub(crate) async fn create_with(client: &mut Client, cwd: &Path, extra: Value) -> String {
    let mut params = json!({"cwd": cwd.display().to_string()});
    for (key, value) in extra.as_object().into_iter().flatten() {
        params[key] = value.clone();
    }
    let result = client
        .request("session/create", params)
        .await
        .expect("session/create");
    result["sessionId"].as_str().expect("sessionId").to_owned()
}

/// Events up to and including the next `approvalRequested`, and its approval.
pub(crate) async fn until_approval(client: &mut Client) -> (Vec<Envelope>, PendingApproval) {
    let events = client
        .persisted_events_until(|event| matches!(event, Event::ApprovalRequested { .. }))
        .await;
    let approval = match &events.last().expect("an event").event {
        Event::ApprovalRequested { approval, .. } => approval.clone(),
        other => unreachable!("{other:?}"),
    };
    (events, approval)
}

pub(crate) async fn respond(
    client: &mut Client,
    approval_id: &str,
    decision: &str,
    reason: Option<&str>,
) -> Result<Value, RpcError> {
    let mut params = json!({"approvalId": approval_id, "decision": decision});
    if let Some(reason) = reason {
        params["reason"] = json!(reason);
    }
    client.request("approval/respond", params).await
}

/// An `approvalResolved` event, flattened.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resolved {
    approval_id: String,
    tool_call_id: String,
    decision: ApprovalDecision,
    decided_by: String,
    reason: Option<String>,
    session_rule: Option<String>,
}

pub(crate) fn resolutions(events: &[Envelope]) -> Vec<Resolved> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ApprovalResolved {
                approval_id,
                tool_call_id,
                decision,
                decided_by,
                reason,
                session_rule,
                ..
            } => Some(Resolved {
                approval_id: approval_id.clone(),
                tool_call_id: tool_call_id.clone(),
                decision: *decision,
                decided_by: decided_by.clone(),
                reason: reason.clone(),
                session_rule: session_rule.clone(),
            }),
            _ => None,
        })
        .collect()
}

pub(crate) fn requested(events: &[Envelope]) -> Vec<PendingApproval> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ApprovalRequested { approval, .. } => Some(approval.clone()),
            _ => None,
        })
        .collect()
}

/// The tool result of call `id` as the model saw it in the last recorded request.
pub(crate) fn model_saw(s: &Scenario, id: &str) -> String {
    let requests = s.mock.requests();
    let last = requests.last().expect("a recorded request");
    request_tool_results(s.format, last)
        .into_iter()
        .find(|(call, _)| call == id)
        .unwrap_or_else(|| panic!("no result for {id} in the last request: {}", last.body))
        .1
}

/// The tool result of call `id` in `events`: `(output, isError)`.
pub(crate) fn result_of(events: &[Envelope], id: &str) -> (String, bool) {
    tool_results(events)
        .into_iter()
        .find(|(call, _, _)| call == id)
        .map(|(_, output, is_error)| (output, is_error))
        .unwrap_or_else(|| panic!("no toolCompleted for {id} in {events:#?}"))
}

/// Whether call `id` started executing (calls the gate decides against never start).
pub(crate) fn started(events: &[Envelope], id: &str) -> bool {
    events
        .iter()
        .any(|e| matches!(&e.event, Event::ToolStarted { tool_call_id, .. } if tool_call_id == id))
}

/// The whole log of `session_id`, replayed to a new subscription.
pub(crate) async fn replay_log(client: &mut Client, session_id: &str) -> Vec<Envelope> {
    let got = client
        .request("session/get", json!({"sessionId": session_id}))
        .await
        .expect("session/get");
    let last_seq = got["session"]["lastSeq"].as_u64().expect("lastSeq");
    client.subscribe(session_id, Some(0)).await;
    client.events_through_seq(last_seq).await
}

pub(crate) async fn pending_approvals(client: &mut Client) -> Vec<PendingApproval> {
    let list = client
        .request("approval/list", json!({}))
        .await
        .expect("approval/list");
    decode(list["approvals"].clone())
}

// --- several clients -----------------------------------------------------------------------

both_formats!(two_clients_see_the_approval_and_the_first_answer_wins);
async fn two_clients_see_the_approval_and_the_first_answer_wins(format: Format) {
    let s = Scenario::start_with(format, ASK).await;
    s.mock.push(shell("c1", "touch ran.txt"));
    s.mock.push(Reply::text("done"));
    let mut alice = named_client(&s, "alice").await;
    let mut bob = named_client(&s, "bob").await;
    let session = create_with(&mut alice, &s.workspace(), json!({})).await;
    alice.subscribe(&session, Some(0)).await;
    bob.subscribe(&session, Some(0)).await;
    alice.prompt(&session, "touch it").await;

    let (_, seen_by_alice) = until_approval(&mut alice).await;
    let (_, seen_by_bob) = until_approval(&mut bob).await;
    assert_eq!(
        seen_by_alice, seen_by_bob,
        "one approval, announced to both"
    );
    assert_eq!(seen_by_alice.tool, "run_shell");
    assert_eq!(seen_by_alice.tool_call_id, "c1");
    assert!(
        !s.workspace().join("ran.txt").exists(),
        "ran before approval"
    );
    let id = seen_by_alice.approval_id.clone();

    let answer = respond(&mut alice, &id, "allowOnce", None).await.unwrap();
    assert_eq!(answer["decision"], "allowOnce");
    let alice_events = alice.events_until_run_finished().await;
    let bob_events = bob.events_until_run_finished().await;
    for events in [&alice_events, &bob_events] {
        assert_eq!(run_status(events), RunStatus::Completed);
        let resolved = resolutions(events);
        assert_eq!(resolved.len(), 1, "{resolved:?}");
        assert_eq!(resolved[0].approval_id, id);
        assert_eq!(resolved[0].decision, ApprovalDecision::AllowOnce);
        assert_eq!(resolved[0].decided_by, "client:alice");
    }
    let late = respond(&mut bob, &id, "deny", None).await.unwrap_err();
    assert_eq!(late.code, i64::from(codes::ALREADY_DECIDED), "{late:?}");
    assert!(
        late.message.contains("already decided") && late.message.contains("client:alice"),
        "{late:?}"
    );
    assert!(s.workspace().join("ran.txt").exists(), "the command ran");
    assert!(!result_of(&alice_events, "c1").1);
}

both_formats!(a_late_subscriber_gets_the_pending_approval_replayed_and_can_answer_it);
async fn a_late_subscriber_gets_the_pending_approval_replayed_and_can_answer_it(format: Format) {
    let s = Scenario::start_with(format, ASK).await;
    s.mock.push(shell("c1", "touch late.txt"));
    s.mock.push(Reply::text("done"));
    let (mut owner, session) = s.session().await;
    owner.prompt(&session, "touch it").await;
    let (_, approval) = until_approval(&mut owner).await;

    let mut late = named_client(&s, "late").await;
    late.subscribe(&session, Some(0)).await;
    let (_, replayed) = until_approval(&mut late).await;
    assert_eq!(replayed, approval);

    let listed = pending_approvals(&mut late).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].approval_id, approval.approval_id);
    assert_eq!(listed[0].session_id, session);
    assert_eq!(listed[0].summary, "touch late.txt");
    assert_eq!(
        listed[0].options,
        [
            ApprovalDecision::AllowOnce,
            ApprovalDecision::AllowSession,
            ApprovalDecision::AllowAlways,
            ApprovalDecision::Deny,
            ApprovalDecision::DenyAndCancel,
            ApprovalDecision::DenyAlways,
        ]
    );
    let requested_at = humantime_secs(&listed[0].requested_at);
    let expires_at = humantime_secs(&listed[0].expires_at);
    assert!(expires_at > requested_at, "{listed:?}");

    respond(&mut late, &approval.approval_id, "allowOnce", None)
        .await
        .unwrap();
    let events = owner.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(resolutions(&events)[0].decided_by, "client:late");
    assert!(s.workspace().join("late.txt").exists());
    assert!(pending_approvals(&mut late).await.is_empty());
}

/// Seconds since the epoch of an RFC 3339 time, via agentctl's parser.
pub(crate) fn humantime_secs(text: &str) -> i64 {
    agentctl::commands::approvals::unix_seconds(text)
        .unwrap_or_else(|| panic!("not an RFC 3339 time: {text}"))
}

// --- restart, timeout, headless --------------------------------------------------------------

#[tokio::test]
async fn with_resume_off_a_graceful_restart_expires_the_pending_approval_and_nothing_runs() {
    restart_while_pending(true).await;
}

#[tokio::test]
async fn with_resume_off_a_crash_expires_the_pending_approval_and_nothing_runs() {
    restart_while_pending(false).await;
}

/// Stop the daemon (SIGTERM, or SIGKILL as a crash) while an approval is pending, start it
/// again with resumes off, and read what the session's log says (with them on, the approval
/// is pending again: `restart_resume`).
pub(crate) async fn restart_while_pending(graceful: bool) {
    let config = format!("{ASK}{}", crate::restart_resume::RESUME_OFF);
    let mut s = Scenario::start_with(Format::OpenAi, &config).await;
    s.mock.push(shell("c1", "touch never.txt"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "touch it").await;
    let (_, approval) = until_approval(&mut client).await;

    if graceful {
        s.daemon.signal(libc::SIGTERM);
        s.daemon.wait_exit().await;
    } else {
        s.daemon.kill().await;
    }
    s.daemon.restart().await;

    let mut client = s.client().await;
    let log = replay_log(&mut client, &session).await;
    let resolved = resolutions(&log);
    assert_eq!(resolved.len(), 1, "{log:#?}");
    assert_eq!(resolved[0].approval_id, approval.approval_id);
    assert_eq!(resolved[0].decision, ApprovalDecision::Deny);
    assert_eq!(resolved[0].decided_by, "restart");
    assert_eq!(run_status(&log), RunStatus::Interrupted);
    assert!(pending_approvals(&mut client).await.is_empty());
    assert!(
        respond(&mut client, &approval.approval_id, "allowOnce", None)
            .await
            .is_err(),
        "an expired approval cannot be answered"
    );
    assert!(!s.workspace().join("never.txt").exists(), "the command ran");
}

both_formats!(an_unanswered_approval_times_out_as_a_denial_the_model_reads);
async fn an_unanswered_approval_times_out_as_a_denial_the_model_reads(format: Format) {
    let s = Scenario::start_with(format, ASK_FAST_TIMEOUT).await;
    s.mock.push(shell("c1", "touch slow.txt"));
    s.mock.push(Reply::text("ok, not touching it"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "touch it").await;
    let events = client.events_until_run_finished().await;

    assert_eq!(run_status(&events), RunStatus::Completed);
    let resolved = resolutions(&events);
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0].decision, ApprovalDecision::Deny);
    assert_eq!(resolved[0].decided_by, "timeout");
    let seen = model_saw(&s, "c1");
    assert!(
        seen.contains("denied") && seen.contains("timeout"),
        "the model is told why: {seen}"
    );
    assert!(!s.workspace().join("slow.txt").exists());
}

both_formats!(a_session_nobody_watches_decides_by_mode_and_never_hangs);
async fn a_session_nobody_watches_decides_by_mode_and_never_hangs(format: Format) {
    let s = Scenario::start_with(format, ASK).await;
    s.mock.push(shell("c1", "touch headless.txt"));
    s.mock.push(Reply::text("could not"));
    let mut client = s.client().await;
    let session = create_session(&mut client, &s.workspace()).await;
    client.prompt(&session, "touch it").await;
    // The test client answers approvals, so its subscription would count as someone who could
    // answer: it subscribes only once the model has been sent the tool result (the approval
    // was decided without anyone), then replays the run from the log and waits for its end.
    s.mock.wait_for_requests(2).await;
    client.subscribe(&session, Some(0)).await;
    let log = client.events_until_run_finished().await;
    assert_eq!(run_status(&log), RunStatus::Completed);
    assert_eq!(requested(&log).len(), 1, "the approval is still recorded");
    let resolved = resolutions(&log);
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0].decision, ApprovalDecision::Deny);
    assert_eq!(resolved[0].decided_by, "mode");
    assert!(model_saw(&s, "c1").contains("denied"));
    assert!(!s.workspace().join("headless.txt").exists());
}

// --- decisions -------------------------------------------------------------------------------

both_formats!(allow_for_session_covers_the_same_key_and_a_different_command_still_asks);
async fn allow_for_session_covers_the_same_key_and_a_different_command_still_asks(format: Format) {
    let s = Scenario::start_with(format, ASK).await;
    // `touch a.txt` is remembered as `run_shell(touch a.txt:*)`.
    s.mock.push(shell("c1", "touch a.txt"));
    s.mock.push(shell("c2", "touch a.txt b.txt"));
    s.mock.push(shell("c3", "touch c.txt"));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "touch things").await;

    let (mut events, first) = until_approval(&mut client).await;
    assert_eq!(first.tool_call_id, "c1");
    respond(&mut client, &first.approval_id, "allowSession", None)
        .await
        .unwrap();
    let (more, second) = until_approval(&mut client).await;
    events.extend(more);
    assert_eq!(second.tool_call_id, "c3", "c2 shares the session key");
    respond(&mut client, &second.approval_id, "deny", None)
        .await
        .unwrap();
    events.extend(client.events_until_run_finished().await);

    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(requested(&events).len(), 2);
    let resolved = resolutions(&events);
    assert_eq!(
        resolved[0].session_rule.as_deref(),
        Some("run_shell(touch a.txt:*)")
    );
    assert_eq!(resolved[1].session_rule, None);
    assert!(
        !result_of(&events, "c2").1,
        "{:?}",
        result_of(&events, "c2")
    );
    assert!(s.workspace().join("a.txt").exists());
    assert!(s.workspace().join("b.txt").exists());
    assert!(!s.workspace().join("c.txt").exists());
}

both_formats!(allow_always_writes_the_rule_and_a_new_session_does_not_ask);
async fn allow_always_writes_the_rule_and_a_new_session_does_not_ask(format: Format) {
    let s = Scenario::start_with(format, ASK).await;
    s.mock.push(shell("c1", "touch always.txt"));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "touch it").await;
    let (_, approval) = until_approval(&mut client).await;
    assert!(approval.options.contains(&ApprovalDecision::AllowAlways));
    let answer = respond(&mut client, &approval.approval_id, "allowAlways", None)
        .await
        .unwrap();
    assert_eq!(answer["ruleAdded"], "run_shell(touch always.txt:*)");
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert!(s.workspace().join("always.txt").exists());

    let config = user_config(&s);
    assert_eq!(
        config["permissions"]["allow"],
        toml::Value::Array(vec!["run_shell(touch always.txt:*)".into()]),
        "{config:#?}"
    );
    assert_eq!(
        config["permissions"]["default_mode"].as_str(),
        Some("default"),
        "the rest of the file is kept"
    );

    // A new session of the same daemon runs a matching command without asking.
    std::fs::remove_file(s.workspace().join("always.txt")).unwrap();
    s.mock.push(shell("c2", "touch always.txt"));
    s.mock.push(Reply::text("done again"));
    let (mut other, second_session) = s.session().await;
    other.prompt(&second_session, "touch it again").await;
    let events = other.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(requested(&events), [], "a remembered rule does not ask");
    assert!(s.workspace().join("always.txt").exists());
}

both_formats!(a_broad_command_is_not_offered_always_and_answering_always_is_refused);
async fn a_broad_command_is_not_offered_always_and_answering_always_is_refused(format: Format) {
    let s = Scenario::start_with(format, ASK).await;
    s.mock.push(shell("c1", "bash -c 'touch broad.txt'"));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "run it").await;
    let (_, approval) = until_approval(&mut client).await;
    assert!(
        !approval.options.contains(&ApprovalDecision::AllowAlways),
        "{:?}",
        approval.options
    );
    assert!(approval.options.contains(&ApprovalDecision::AllowSession));
    let refused = respond(&mut client, &approval.approval_id, "allowAlways", None)
        .await
        .unwrap_err();
    assert_eq!(
        refused.code,
        i64::from(codes::INVALID_PARAMS),
        "{refused:?}"
    );
    assert!(refused.message.contains("allowAlways"), "{refused:?}");
    // Still pending: a proper answer is taken.
    assert_eq!(pending_approvals(&mut client).await.len(), 1);
    respond(&mut client, &approval.approval_id, "deny", None)
        .await
        .unwrap();
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let config = std::fs::read_to_string(
        s.daemon
            .env
            .path("config")
            .join("agentd")
            .join("config.toml"),
    )
    .unwrap();
    assert!(!config.contains("allow"), "no rule was added:\n{config}");
    assert!(!s.workspace().join("broad.txt").exists());
}

both_formats!(deny_tells_the_model_the_user_said_no_and_the_run_goes_on);
async fn deny_tells_the_model_the_user_said_no_and_the_run_goes_on(format: Format) {
    let s = Scenario::start_with(format, ASK).await;
    s.mock.push(shell("c1", "touch denied.txt"));
    s.mock.push(Reply::text("understood"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "touch it").await;
    let (_, approval) = until_approval(&mut client).await;
    respond(
        &mut client,
        &approval.approval_id,
        "deny",
        Some("use the scratch directory instead"),
    )
    .await
    .unwrap();
    let events = client.events_until_run_finished().await;

    assert_eq!(run_status(&events), RunStatus::Completed);
    let resolved = resolutions(&events);
    assert_eq!(
        resolved[0].reason.as_deref(),
        Some("use the scratch directory instead")
    );
    let seen = model_saw(&s, "c1");
    assert!(seen.contains("denied by the user"), "{seen}");
    assert!(seen.contains("use the scratch directory instead"), "{seen}");
    assert!(!s.workspace().join("denied.txt").exists());
}

both_formats!(deny_and_cancel_ends_the_run_cancelled);
async fn deny_and_cancel_ends_the_run_cancelled(format: Format) {
    let s = Scenario::start_with(format, ASK).await;
    s.mock.push(shell("c1", "touch cancelled.txt"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "touch it").await;
    let (_, approval) = until_approval(&mut client).await;
    respond(&mut client, &approval.approval_id, "denyAndCancel", None)
        .await
        .unwrap();
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Cancelled);
    assert_eq!(
        resolutions(&events)[0].decision,
        ApprovalDecision::DenyAndCancel
    );
    assert_eq!(s.mock.requests().len(), 1, "the model was not asked again");
    assert!(!s.workspace().join("cancelled.txt").exists());
}

// --- modes and hard limits -------------------------------------------------------------------

both_formats!(plan_mode_denies_writes_with_a_message_about_plan_mode);
async fn plan_mode_denies_writes_with_a_message_about_plan_mode(format: Format) {
    let s = Scenario::start_with(format, ASK).await;
    s.mock.push(write("c1", "plan.txt", "x"));
    s.mock.push(Reply::text("here is the plan"));
    let mut client = s.client().await;
    let session = create_with(
        &mut client,
        &s.workspace(),
        json!({"permissionMode": "plan"}),
    )
    .await;
    client.subscribe(&session, Some(0)).await;
    client.prompt(&session, "write it").await;
    let events = client.events_until_run_finished().await;

    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(requested(&events), [], "plan mode denies, it does not ask");
    let (output, is_error) = result_of(&events, "c1");
    assert!(is_error, "{output}");
    assert!(model_saw(&s, "c1").contains("plan mode"), "{output}");
    assert!(!s.workspace().join("plan.txt").exists());
}

both_formats!(accept_edits_writes_without_asking_but_shell_still_asks);
async fn accept_edits_writes_without_asking_but_shell_still_asks(format: Format) {
    let s = Scenario::start_with(format, ASK).await;
    s.mock.push(write("c1", "edit.txt", "accepted"));
    s.mock.push(shell("c2", "touch shell.txt"));
    s.mock.push(Reply::text("done"));
    let mut client = s.client().await;
    let session = create_with(
        &mut client,
        &s.workspace(),
        json!({"permissionMode": "acceptEdits"}),
    )
    .await;
    client.subscribe(&session, Some(0)).await;
    client.prompt(&session, "edit and run").await;
    let (mut events, approval) = until_approval(&mut client).await;
    assert_eq!(approval.tool_call_id, "c2", "only the shell call asks");
    assert_eq!(
        std::fs::read_to_string(s.workspace().join("edit.txt")).unwrap(),
        "accepted"
    );
    respond(&mut client, &approval.approval_id, "deny", None)
        .await
        .unwrap();
    events.extend(client.events_until_run_finished().await);
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(requested(&events).len(), 1);
    assert!(!s.workspace().join("shell.txt").exists());
}

both_formats!(bypass_runs_shell_but_the_hard_limits_hold);
async fn bypass_runs_shell_but_the_hard_limits_hold(format: Format) {
    let s = Scenario::start(format).await; // bypass
    let workspace = s.workspace();
    let outside = s.daemon.env.path("home").join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, workspace.join("link")).unwrap();
    std::fs::create_dir_all(workspace.join(".git")).unwrap();
    std::fs::write(workspace.join(".git/config"), "[core]\n").unwrap();
    s.mock.push(shell("c_shell", "touch bypass.txt"));
    s.mock.push(write("c_up", "../outside.txt", "escaped"));
    s.mock
        .push(write("c_git", ".git/config", "[core]\nhooksPath = /tmp\n"));
    s.mock.push(shell("c_rm", "rm -rf /"));
    s.mock.push(write("c_link", "link/x.txt", "escaped"));
    s.mock.push(Reply::text("done"));
    let mut client = s.client().await;
    let session = create_with(&mut client, &workspace, json!({"permissionMode": "bypass"})).await;
    client.subscribe(&session, Some(0)).await;
    client.prompt(&session, "do everything").await;
    let events = client.events_until_run_finished().await;

    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(requested(&events), [], "bypass never asks");
    let (output, is_error) = result_of(&events, "c_shell");
    assert!(!is_error, "{output}");
    assert!(workspace.join("bypass.txt").exists());
    for id in ["c_up", "c_git", "c_rm", "c_link"] {
        let (output, is_error) = result_of(&events, id);
        assert!(
            is_error && output.contains("permission denied"),
            "{id}: {output}"
        );
        assert!(!started(&events, id), "{id} started");
    }
    assert!(!s.daemon.env.path("outside.txt").exists());
    assert!(!outside.join("x.txt").exists());
    assert_eq!(
        std::fs::read_to_string(workspace.join(".git/config")).unwrap(),
        "[core]\n"
    );
}

// --- rules -----------------------------------------------------------------------------------

#[tokio::test]
async fn a_config_deny_wins_over_a_session_allow() {
    let s = Scenario::start_with(
        Format::OpenAi,
        "[permissions]\ndefault_mode = \"default\"\ndeny = [\"Bash(rm:*)\"]\n",
    )
    .await;
    std::fs::write(s.workspace().join("victim.txt"), "keep me").unwrap();
    s.mock.push(shell("c1", "rm victim.txt"));
    s.mock.push(Reply::text("could not"));
    let mut client = s.client().await;
    let session = create_with(
        &mut client,
        &s.workspace(),
        json!({"permissionRules": {"allow": ["Bash(rm:*)"]}}),
    )
    .await;
    client.subscribe(&session, Some(0)).await;
    client.prompt(&session, "remove it").await;
    let events = client.events_until_run_finished().await;

    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(requested(&events), [], "a deny rule does not ask");
    let (output, is_error) = result_of(&events, "c1");
    assert!(is_error && output.contains("Bash(rm:*)"), "{output}");
    assert!(!started(&events, "c1"));
    assert!(s.workspace().join("victim.txt").exists());
}

both_formats!(a_project_allow_rule_runs_the_exact_command_but_not_a_compound_one);
async fn a_project_allow_rule_runs_the_exact_command_but_not_a_compound_one(format: Format) {
    let s = Scenario::start_with(format, ASK).await;
    let settings = s.workspace().join(".agents");
    std::fs::create_dir_all(&settings).unwrap();
    std::fs::write(
        settings.join("settings.toml"),
        "[permissions]\nallow = [\"Bash(git status)\"]\n",
    )
    .unwrap();
    // Project allow rules apply once the project is trusted.
    let mut trusting = s.client().await;
    trusting
        .request(
            "project/trust",
            json!({"path": s.workspace().display().to_string()}),
        )
        .await
        .unwrap();
    s.mock.push(shell("c1", "git status"));
    s.mock.push(shell("c2", "git status && touch x"));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "status").await;
    let (mut events, approval) = until_approval(&mut client).await;
    assert_eq!(approval.tool_call_id, "c2", "the compound command asks");
    respond(&mut client, &approval.approval_id, "deny", None)
        .await
        .unwrap();
    events.extend(client.events_until_run_finished().await);

    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(requested(&events).len(), 1);
    let (output, _) = result_of(&events, "c1");
    assert!(started(&events, "c1"), "git status ran: {output}");
    assert!(!output.contains("denied"), "{output}");
    assert!(!started(&events, "c2"));
    assert!(!s.workspace().join("x").exists());
}

both_formats!(a_bad_rule_in_the_config_is_reported_by_daemon_status_with_its_source);
async fn a_bad_rule_in_the_config_is_reported_by_daemon_status_with_its_source(format: Format) {
    let s = Scenario::start_with(format, "[permissions]\nallow = [\"Bsh(ls)\"]\n").await;
    let mut client = s.client().await;
    let status = client.request("daemon/status", json!({})).await.unwrap();
    let error = status["configError"].as_str().unwrap_or_else(|| {
        panic!("no configError in {status}");
    });
    let config_path = s
        .daemon
        .env
        .path("config")
        .join("agentd")
        .join("config.toml");
    assert!(
        error.contains(&format!("{}:2:", config_path.display())),
        "the file and line: {error}"
    );
    assert!(
        error.contains("Bsh(ls)") && error.contains("Bash"),
        "{error}"
    );
}
