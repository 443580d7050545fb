//! `run` and `attach` across a lost connection, against the fake daemon: the loop waits, makes
//! a new connection declaring the same capabilities, subscribes after the last seq shown, and
//! goes on; an approval asked again after the restart gets the answer already given; a daemon
//! that does not come back ends the command with exit 3, pointing at `agentctl attach`.

use std::collections::HashMap;

use protocol::approval::ApprovalDecision;
use protocol::event::{Event, RunStatus};
use serde_json::json;

use super::fake_daemon::*;
use crate::approve_policy::ApprovePolicy;
use crate::render::Output;

const WAITING: &str = "agentd stopped; waiting for it to come back to follow the run…\n";

fn started() -> Event {
    Event::RunStarted {
        run_id: "run_1".to_owned(),
        prompt: "say hello".to_owned(),
        client_request_id: None,
        options: None,
    }
}

fn delta(text: &str) -> Event {
    Event::MessageDelta {
        run_id: "run_1".to_owned(),
        text: text.to_owned(),
    }
}

fn resumed() -> Event {
    Event::RunResumed {
        run_id: "run_1".to_owned(),
        attempt: 1,
        interrupted_tool_calls: Vec::new(),
    }
}

/// The fake daemon's connection numbers of each call of `method` (0: the first connection).
fn connections_of(daemon: &FakeDaemon, method: &str) -> Vec<usize> {
    let mut connection = 0;
    let mut found = Vec::new();
    for (index, name) in daemon.methods().iter().enumerate() {
        if name == "initialize" && index > 0 {
            connection += 1;
        }
        if name == method {
            found.push(connection);
        }
    }
    found
}

#[tokio::test]
async fn run_follows_its_run_across_a_graceful_restart_after_the_last_seq_shown() {
    let daemon = FakeDaemon::start_each(vec![
        Script {
            events_after: HashMap::from([(
                "session/prompt",
                vec![
                    started(),
                    Event::RunSuspended {
                        run_id: "run_1".to_owned(),
                        reason: "the daemon is stopping".to_owned(),
                    },
                ],
            )]),
            drop_after: Some("session/prompt"),
            ..Script::default()
        },
        Script {
            events_after: HashMap::from([(
                "session/subscribe",
                vec![
                    resumed(),
                    assistant("run_1", "checked, all done"),
                    finished("run_1", RunStatus::Completed),
                ],
            )]),
            // The replay ends here: events 3 to 5.
            last_seq: 5,
            ..Script::default()
        },
    ]);
    let (result, stdout, stderr) = run(&daemon, run_args(None, None)).await;
    assert_eq!(result.unwrap(), 0, "{stderr}");
    assert_eq!(stdout, "checked, all done\n");
    assert_eq!(
        without_after_run_line(&stderr),
        format!(
            "the daemon is stopping: this run resumes when it starts again\n{WAITING}\
             resumed after a daemon restart (resume 1 of at most 2)\nsession: ses_1\n"
        )
    );
    let subscribes = daemon.all_params("session/subscribe");
    assert_eq!(subscribes.len(), 2);
    assert_eq!(subscribes[1], json!({"sessionId": "ses_1", "afterSeq": 2}));
    let initializes = daemon.all_params("initialize");
    assert_eq!(
        initializes[1]["capabilities"],
        json!({"approvals": true}),
        "the new connection answers approvals as the lost one did"
    );
    assert_eq!(
        connections_of(&daemon, "session/prompt"),
        [0],
        "the prompt is never sent again"
    );
}

#[tokio::test]
async fn a_message_cut_by_a_crash_ends_its_line_and_the_answer_is_printed_once() {
    let daemon = FakeDaemon::start_each(vec![
        Script {
            events_after: HashMap::from([("session/prompt", vec![started(), delta("Hel")])]),
            drop_after: Some("session/prompt"),
            ..Script::default()
        },
        Script {
            events_after: HashMap::from([(
                "session/subscribe",
                vec![
                    resumed(),
                    delta("Hello"),
                    assistant("run_1", "Hello world"),
                    finished("run_1", RunStatus::Completed),
                ],
            )]),
            ..Script::default()
        },
    ]);
    let (result, stdout, stderr) = run(&daemon, run_args(None, None)).await;
    assert_eq!(result.unwrap(), 0, "{stderr}");
    // What was cut stays on its own line; the resumed answer is whole, once.
    assert_eq!(stdout, "Hel\nHello world\n");
    assert!(stderr.starts_with(&format!("\n{WAITING}")), "{stderr}");
    assert!(!stderr.contains("output was interrupted"), "{stderr}");
    assert_eq!(daemon.all_params("session/subscribe")[1]["afterSeq"], 1);
}

#[tokio::test]
async fn an_answer_lost_with_the_connection_is_sent_again_when_the_daemon_asks_again() {
    let daemon = FakeDaemon::start_each(vec![
        Script {
            events_after: HashMap::from([(
                "session/prompt",
                vec![started(), approval_requested("apr_1", "run_shell")],
            )]),
            drop_after: Some("session/prompt"),
            ..Script::default()
        },
        Script {
            events_after: HashMap::from([
                (
                    "session/subscribe",
                    vec![resumed(), approval_requested("apr_1", "run_shell")],
                ),
                (
                    "approval/respond",
                    vec![
                        Event::ApprovalResolved {
                            run_id: "run_1".to_owned(),
                            approval_id: "apr_1".to_owned(),
                            tool_call_id: "call_apr_1".to_owned(),
                            decision: ApprovalDecision::AllowOnce,
                            decided_by: "policy:--approve all".to_owned(),
                            reason: None,
                            session_rule: None,
                        },
                        finished("run_1", RunStatus::Completed),
                    ],
                ),
            ]),
            ..Script::default()
        },
    ]);
    let mut args = run_args(None, None);
    args.approve = Some(ApprovePolicy::All);
    let (result, _, stderr) = run(&daemon, args).await;
    assert_eq!(result.unwrap(), 0, "{stderr}");
    let answers = daemon.all_params("approval/respond");
    let last = answers.last().expect("an answer");
    assert_eq!(
        *last,
        json!({"approvalId": "apr_1", "decision": "allowOnce", "policy": "--approve all"})
    );
    assert_eq!(
        connections_of(&daemon, "approval/respond").last(),
        Some(&1),
        "answered again on the new connection: {:?}",
        daemon.methods()
    );
    assert_eq!(
        stderr.matches("approval apr_1: allowed once").count(),
        1,
        "the policy's line once: {stderr}"
    );
    assert!(!stderr.contains("cannot answer"), "{stderr}");
}

#[tokio::test]
async fn attach_follows_the_session_across_a_restart() {
    let daemon = FakeDaemon::start_each(vec![
        Script {
            events_after: HashMap::from([("session/subscribe", vec![started()])]),
            drop_after: Some("session/subscribe"),
            running_run: Some("run_1".to_owned()),
            ..Script::default()
        },
        Script {
            events_after: HashMap::from([(
                "session/subscribe",
                vec![
                    resumed(),
                    assistant("run_1", "done"),
                    finished("run_1", RunStatus::Completed),
                ],
            )]),
            ..Script::default()
        },
    ]);
    let (mut stdout, mut stderr) = (String::new(), String::new());
    let mut sink = |outputs: Vec<Output>| {
        for output in outputs {
            match output {
                Output::Stdout(text) => stdout.push_str(&text),
                Output::Stderr(text) => stderr.push_str(&text),
            }
        }
    };
    let ctx = daemon.context();
    let attach = crate::commands::attach::attach(&ctx, "ses_1".to_owned(), false, &mut sink);
    let code = tokio::time::timeout(std::time::Duration::from_secs(10), attach)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "done\n");
    assert!(stderr.contains(WAITING), "{stderr}");
    assert_eq!(daemon.all_params("session/subscribe")[1]["afterSeq"], 1);
}

#[tokio::test]
async fn run_exits_3_pointing_at_attach_when_the_daemon_does_not_come_back() {
    let daemon = FakeDaemon::start(Script {
        events_after: HashMap::from([("session/prompt", vec![started(), delta("partial")])]),
        drop_after: Some("session/prompt"),
        ..Script::default()
    });
    let (result, stdout, stderr) = run(&daemon, run_args(None, None)).await;
    let err = result.unwrap_err();
    assert_eq!(err.code, 3, "{}", err.message);
    assert_eq!(
        err.message,
        "agentd did not come back within 200 ms; once it is back, follow the run with \
         `agentctl attach ses_1`"
    );
    assert_eq!(stdout, "partial\n");
    assert!(stderr.contains(WAITING), "{stderr}");
}
