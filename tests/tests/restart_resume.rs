//! Runs and approvals that survive a restart: a run active at a crash (SIGKILL) or a graceful
//! stop (SIGTERM) goes on at the next start under its own run id, its started tool call
//! answered "interrupted by a daemon restart" (never run again); a pending approval stays
//! pending with its id and can be answered after the restart; a run resumes at most twice;
//! `[sessions] resume_after_restart = false` records it interrupted as before.

use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::event::{Event, RunStatus};
use serde_json::json;

use crate::approvals::{
    ASK, named_client, pending_approvals, replay_log, respond, shell, until_approval,
};

/// `[sessions]` turning resumes off: a run active at a stop is recorded interrupted.
pub(crate) const RESUME_OFF: &str = "[sessions]\nresume_after_restart = false\n";

/// What a started call's result says after a restart.
const UNKNOWN_EFFECT: &str = "interrupted by a daemon restart";

/// A shell call that writes its pid, then blocks until it is killed: a tool in flight.
pub(crate) fn blocking_call(id: &str) -> Reply {
    Reply::tool_call(
        id,
        "run_shell",
        json!({"command": "echo $$ >> shell.pids; exec sleep 60"}),
    )
}

/// Wait for the blocking call's shell to have started (its pid written), and return the pid.
pub(crate) async fn started_shell(s: &Scenario, count: usize) -> i32 {
    started_shell_in(&s.workspace(), count).await
}

/// `started_shell` for the workspace `workspace`.
pub(crate) async fn started_shell_in(workspace: &std::path::Path, count: usize) -> i32 {
    let pid_file = workspace.join("shell.pids");
    wait_until("the shell pid file", || {
        std::fs::read_to_string(&pid_file)
            .is_ok_and(|text| text.ends_with('\n') && text.lines().count() >= count)
    })
    .await;
    std::fs::read_to_string(&pid_file)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .parse()
        .unwrap()
}

/// Kill what a crashed daemon could not: its tool's process group.
pub(crate) fn kill_group(pid: i32) {
    // SAFETY: kill has no memory-safety preconditions; the group is the shell's own.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

/// The events of `run_id` in the session's whole log, once its run has finished.
pub(crate) async fn finished_log(s: &Scenario, session: &str) -> Vec<Envelope> {
    let mut client = s.client().await;
    client.subscribe(session, Some(0)).await;
    client.events_until_run_finished().await
}

async fn resumes_after(graceful: bool) {
    let mut s = Scenario::start(Format::OpenAi).await;
    s.mock.push(blocking_call("c_block"));
    s.mock.push(Reply::text("checked, all done"));
    let (mut client, session) = s.session().await;
    let run_id = client.prompt(&session, "block").await;
    client
        .persisted_events_until(|event| matches!(event, Event::ToolStarted { .. }))
        .await;
    let shell = started_shell(&s, 1).await;
    if graceful {
        s.daemon.signal(libc::SIGTERM);
        let suspended = client
            .persisted_events_until(|event| matches!(event, Event::RunSuspended { .. }))
            .await;
        assert!(
            matches!(&suspended.last().unwrap().event, Event::RunSuspended { run_id: r, .. } if *r == run_id)
        );
        s.daemon.wait_exit().await;
    } else {
        s.daemon.kill().await;
        kill_group(shell);
    }
    drop(client);
    s.daemon.restart().await;

    let log = finished_log(&s, &session).await;
    assert_seqs_increase(&log);
    let finished = log.last().unwrap();
    assert!(
        matches!(&finished.event, Event::RunFinished { run_id: r, status: RunStatus::Completed, .. } if *r == run_id),
        "{log:#?}"
    );
    let resumed: Vec<_> = log
        .iter()
        .filter_map(|e| match &e.event {
            Event::RunResumed {
                run_id: r,
                attempt,
                interrupted_tool_calls,
            } => Some((r.clone(), *attempt, interrupted_tool_calls.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        resumed,
        vec![(run_id.clone(), 1, vec!["c_block".to_owned()])]
    );
    // One run: no second runStarted.
    let started = log
        .iter()
        .filter(|e| matches!(e.event, Event::RunStarted { .. }))
        .count();
    assert_eq!(started, 1);

    // The model was asked once more (not to redo the call blindly): it read the unknown-effect
    // result and the note, and the call was never run again.
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let seen = request_tool_results(Format::OpenAi, &requests[1]);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, "c_block");
    assert!(seen[0].1.starts_with(UNKNOWN_EFFECT), "{seen:?}");
    let texts = request_user_texts(Format::OpenAi, &requests[1]);
    assert!(
        texts
            .last()
            .is_some_and(|text| text.contains("daemon restarted")),
        "{texts:?}"
    );
    let pids = std::fs::read_to_string(s.workspace().join("shell.pids")).unwrap();
    assert_eq!(pids.lines().count(), 1, "the call ran again: {pids}");
}

#[tokio::test]
async fn a_run_killed_mid_tool_goes_on_after_the_restart_without_repeating_the_call() {
    resumes_after(false).await;
}

#[tokio::test]
async fn a_run_stopped_gracefully_mid_tool_is_suspended_and_goes_on_after_the_restart() {
    resumes_after(true).await;
}

async fn approval_answered_after(graceful: bool) {
    let mut s = Scenario::start_with(Format::OpenAi, ASK).await;
    s.mock.push(shell("c1", "touch approved.txt"));
    s.mock.push(Reply::text("touched"));
    let mut client = named_client(&s, "desk").await;
    let session = crate::approvals::create_with(&mut client, &s.workspace(), json!({})).await;
    client.subscribe(&session, None).await;
    let run_id = client.prompt(&session, "touch it").await;
    let (_, approval) = until_approval(&mut client).await;
    if graceful {
        s.daemon.signal(libc::SIGTERM);
        s.daemon.wait_exit().await;
    } else {
        s.daemon.kill().await;
    }
    drop(client);
    s.daemon.restart().await;

    // Pending again with the same id; nobody who answers is attached, and it still waits.
    let mut client = named_client(&s, "desk").await;
    client.subscribe(&session, Some(0)).await;
    let mut pending = pending_approvals(&mut client).await;
    if pending.is_empty() {
        // The resumed run may not have asked yet: wait for its re-announcement.
        client
            .persisted_events_until(|event| matches!(event, Event::RunResumed { .. }))
            .await;
        client
            .persisted_events_until(|event| matches!(event, Event::ApprovalRequested { .. }))
            .await;
        pending = pending_approvals(&mut client).await;
    }
    assert_eq!(pending.len(), 1, "{pending:#?}");
    assert_eq!(pending[0].approval_id, approval.approval_id);
    assert_eq!(pending[0].tool_call_id, "c1");
    respond(&mut client, &approval.approval_id, "allowOnce", None)
        .await
        .expect("the approval is answered after the restart");
    let events = client.events_until_run_finished().await;
    assert!(
        matches!(&events.last().unwrap().event, Event::RunFinished { run_id: r, status: RunStatus::Completed, .. } if *r == run_id),
        "{events:#?}"
    );
    assert!(s.workspace().join("approved.txt").exists(), "the call ran");
    let log = replay_log(&mut client, &session).await;
    let resolved: Vec<_> = log
        .iter()
        .filter_map(|e| match &e.event {
            Event::ApprovalResolved {
                approval_id,
                decided_by,
                ..
            } => Some((approval_id.clone(), decided_by.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        resolved,
        vec![(approval.approval_id.clone(), "client:desk".to_owned())]
    );
}

#[tokio::test]
async fn a_pending_approval_answered_after_a_crash_lets_the_call_run() {
    approval_answered_after(false).await;
}

#[tokio::test]
async fn a_pending_approval_answered_after_a_graceful_restart_lets_the_call_run() {
    approval_answered_after(true).await;
}

#[tokio::test]
async fn a_run_that_keeps_crashing_the_daemon_is_resumed_at_most_twice() {
    let mut s = Scenario::start(Format::OpenAi).await;
    // The first call and each resumed run block in a tool until the daemon is killed.
    s.mock.push(blocking_call("c1"));
    s.mock.push(blocking_call("c2"));
    s.mock.push(blocking_call("c3"));
    let (mut client, session) = s.session().await;
    let run_id = client.prompt(&session, "crash me").await;
    drop(client);
    for crash in 1..=3 {
        let shell = started_shell(&s, crash).await;
        s.daemon.kill().await;
        kill_group(shell);
        s.daemon.restart().await;
    }
    let log = finished_log(&s, &session).await;
    let attempts: Vec<u32> = log
        .iter()
        .filter_map(|e| match &e.event {
            Event::RunResumed { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect();
    assert_eq!(attempts, [1, 2]);
    match &log.last().unwrap().event {
        Event::RunFinished {
            run_id: r,
            status: RunStatus::Interrupted,
            error: Some(error),
            ..
        } if *r == run_id => {
            assert!(error.contains("resumed 2 times"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.mock.requests().len(), 3);
}

#[tokio::test]
async fn with_resume_off_a_crashed_run_is_recorded_interrupted() {
    let mut s = Scenario::start_with(Format::OpenAi, RESUME_OFF).await;
    s.mock.push(blocking_call("c1"));
    let (mut client, session) = s.session().await;
    let run_id = client.prompt(&session, "block").await;
    let shell = started_shell(&s, 1).await;
    s.daemon.kill().await;
    kill_group(shell);
    drop(client);
    s.daemon.restart().await;
    let log = finished_log(&s, &session).await;
    assert!(
        matches!(&log.last().unwrap().event, Event::RunFinished { run_id: r, status: RunStatus::Interrupted, .. } if *r == run_id),
        "{log:#?}"
    );
    assert!(
        !log.iter()
            .any(|e| matches!(e.event, Event::RunResumed { .. }))
    );
    assert_eq!(s.mock.requests().len(), 1);
}
