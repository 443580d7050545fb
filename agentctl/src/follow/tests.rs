//! `run` and `attach` against a scripted fake daemon on a real socket: the order of calls,
//! the params sent, events through jsonrpsee's subscription, exit codes, a dropped connection.

use std::collections::HashMap;
use std::time::Duration;

use protocol::approval::{ApprovalDecision, PermissionMode};
use protocol::event::{Event, MessageRole, RunStatus};
use serde_json::json;

use super::fake_daemon::*;
use crate::approve_policy::ApprovePolicy;
use crate::output::CommandError;
use crate::render::Output;

mod approvals_commands;

#[tokio::test]
async fn run_creates_subscribes_first_then_prompts_and_streams() {
    let workspace = tempfile::tempdir().unwrap();
    let daemon = FakeDaemon::start(Script {
        events_after: HashMap::from([(
            "session/prompt",
            vec![
                Event::RunStarted {
                    run_id: "run_1".to_owned(),
                    prompt: "say hello".to_owned(),
                    client_request_id: None,
                    options: None,
                },
                Event::MessageDelta {
                    run_id: "run_1".to_owned(),
                    text: "Hello".to_owned(),
                },
                assistant("run_1", "Hello world"),
                finished("run_1", RunStatus::Completed),
            ],
        )]),
        ..Script::default()
    });
    let (result, stdout, stderr) =
        run(&daemon, run_args(Some(workspace.path().into()), None)).await;
    assert_eq!(result.unwrap(), 0);
    assert_eq!(stdout, "Hello world\n");
    assert_eq!(without_after_run_line(&stderr), "session: ses_1\n");
    assert_eq!(
        daemon.methods()[..4],
        [
            "initialize",
            "session/create",
            "session/subscribe",
            "session/prompt"
        ]
    );
    assert_eq!(
        daemon.params("initialize")["capabilities"],
        json!({"approvals": true}),
        "run answers its run's approvals, so the daemon waits for it"
    );
    let create = daemon.params("session/create");
    assert_eq!(create["cwd"], workspace.path().to_str().unwrap());
    assert_eq!(create["model"], "m");
    assert_eq!(
        daemon.params("session/subscribe"),
        json!({"sessionId": "ses_1", "afterSeq": 0})
    );
    let prompt = daemon.params("session/prompt");
    assert_eq!(prompt["text"], "say hello");
    assert!(
        prompt["clientRequestId"]
            .as_str()
            .unwrap()
            .starts_with("cli_")
    );
}

#[tokio::test]
async fn run_in_an_existing_session_subscribes_after_its_last_seq_and_fails_with_the_run() {
    let daemon = FakeDaemon::start(Script {
        last_seq: 5,
        events_after: HashMap::from([(
            "session/prompt",
            vec![finished("run_1", RunStatus::Failed)],
        )]),
        ..Script::default()
    });
    let mut args = run_args(None, Some("ses_1"));
    args.model = None;
    let (result, _, stderr) = run(&daemon, args).await;
    assert_eq!(result.unwrap(), 1);
    assert_eq!(
        without_after_run_line(&stderr),
        "run failed: it broke\nsession: ses_1\n"
    );
    assert_eq!(daemon.methods()[1], "session/get");
    assert_eq!(daemon.params("session/subscribe")["afterSeq"], 5);
}

#[tokio::test]
async fn attach_to_an_idle_session_replays_and_stops_at_its_last_seq() {
    let daemon = FakeDaemon::start(Script {
        events_after: HashMap::from([(
            "session/subscribe",
            vec![
                Event::MessageCompleted {
                    run_id: "run_0".to_owned(),
                    role: MessageRole::User,
                    content: "hi".to_owned(),
                    kind: None,
                    tool_calls: Vec::new(),
                },
                assistant("run_0", "hello"),
                finished("run_0", RunStatus::Completed),
            ],
        )]),
        last_seq: 3,
        ..Script::default()
    });
    let mut stdout = String::new();
    let mut sink = |outputs: Vec<Output>| {
        for output in outputs {
            if let Output::Stdout(text) = output {
                stdout.push_str(&text);
            }
        }
    };
    let ctx = daemon.context();
    let attach = crate::commands::attach::attach(&ctx, "ses_1".to_owned(), false, &mut sink);
    let code = tokio::time::timeout(Duration::from_secs(10), attach)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(code, 0);
    assert_eq!(stdout, "> hi\nhello\n");
    assert_eq!(
        daemon.params("session/subscribe"),
        json!({"sessionId": "ses_1", "afterSeq": 0})
    );
    assert_eq!(
        daemon.params("initialize")["capabilities"],
        json!({"approvals": false}),
        "attach only shows approvals: it must not make a run wait"
    );
}

/// A run whose tool calls ask `approvals` and that finishes once the last is answered.
fn asking_daemon(
    approvals: Vec<Event>,
    errors: HashMap<&'static str, (i32, &'static str)>,
) -> FakeDaemon {
    FakeDaemon::start(Script {
        events_after: HashMap::from([
            ("session/prompt", approvals),
            (
                "approval/respond",
                vec![finished("run_1", RunStatus::Completed)],
            ),
        ]),
        errors,
        ..Script::default()
    })
}

#[tokio::test]
async fn run_without_a_terminal_denies_by_default_and_says_so() {
    let daemon = asking_daemon(
        vec![approval_requested("apr_1", "run_shell")],
        HashMap::new(),
    );
    let (result, _, stderr) = run(&daemon, run_args(None, None)).await;
    assert_eq!(result.unwrap(), 0);
    assert_eq!(
        daemon.params("approval/respond"),
        json!({
            "approvalId": "apr_1",
            "decision": "deny",
            "reason": crate::approve_policy::NOT_INTERACTIVE_REASON,
            "policy": "--approve never",
        })
    );
    assert!(
        stderr.starts_with(
            "approval apr_1: denied run_shell ls -la: agentctl run is not interactive"
        ),
        "{stderr}"
    );
}

#[tokio::test]
async fn run_approve_edits_allows_edits_and_denies_the_shell() {
    let daemon = asking_daemon(
        vec![
            approval_requested("apr_1", "write_file"),
            approval_requested("apr_2", "run_shell"),
        ],
        HashMap::new(),
    );
    let mut args = run_args(None, None);
    args.approve = Some(ApprovePolicy::Edits);
    let (result, _, stderr) = run(&daemon, args).await;
    assert_eq!(result.unwrap(), 0);
    let answers = daemon.all_params("approval/respond");
    assert_eq!(
        answers[0],
        json!({"approvalId": "apr_1", "decision": "allowOnce", "policy": "--approve edits"})
    );
    assert_eq!(answers[1]["approvalId"], "apr_2");
    assert_eq!(answers[1]["decision"], "deny");
    assert!(
        stderr.contains("approval apr_1: allowed once write_file src/main.rs (--approve edits)"),
        "{stderr}"
    );
}

#[tokio::test]
async fn run_approve_wait_leaves_it_to_another_client() {
    let daemon = FakeDaemon::start(Script {
        events_after: HashMap::from([(
            "session/prompt",
            vec![
                approval_requested("apr_1", "run_shell"),
                Event::ApprovalResolved {
                    run_id: "run_1".to_owned(),
                    approval_id: "apr_1".to_owned(),
                    tool_call_id: "call_apr_1".to_owned(),
                    decision: ApprovalDecision::AllowOnce,
                    decided_by: "client:zed".to_owned(),
                    reason: None,
                    session_rule: None,
                },
                finished("run_1", RunStatus::Completed),
            ],
        )]),
        ..Script::default()
    });
    let mut args = run_args(None, None);
    args.approve = Some(ApprovePolicy::Wait);
    let (result, _, stderr) = run(&daemon, args).await;
    assert_eq!(result.unwrap(), 0);
    assert_eq!(
        daemon.params("initialize")["capabilities"],
        json!({"approvals": true}),
        "--approve wait holds the approval for another client's answer"
    );
    assert!(!daemon.methods().contains(&"approval/respond".to_owned()));
    assert_eq!(
        without_after_run_line(&stderr),
        "approval apr_1 waits: run_shell ls -la (default mode asks); answer with \
         `agentctl approve apr_1` or `agentctl deny apr_1`\n\
         approval apr_1: allowed once by client:zed\n\
         session: ses_1\n"
    );
}

#[tokio::test]
async fn run_says_calmly_when_someone_else_decided_first() {
    let daemon = FakeDaemon::start(Script {
        events_after: HashMap::from([
            (
                "approval/respond",
                vec![finished("run_1", RunStatus::Completed)],
            ),
            (
                "session/prompt",
                vec![
                    approval_requested("apr_1", "run_shell"),
                    finished("run_1", RunStatus::Completed),
                ],
            ),
        ]),
        errors: HashMap::from([(
            "approval/respond",
            (-32008, "approval apr_1 was already decided"),
        )]),
        ..Script::default()
    });
    let mut args = run_args(None, None);
    args.approve = Some(ApprovePolicy::All);
    let (result, _, stderr) = run(&daemon, args).await;
    assert_eq!(result.unwrap(), 0);
    assert!(
        stderr.contains("approval apr_1 was already decided by someone else"),
        "{stderr}"
    );
}

#[tokio::test]
async fn run_mode_sets_the_new_sessions_permission_mode_and_updates_an_existing_session() {
    let daemon = FakeDaemon::start(Script {
        events_after: HashMap::from([(
            "session/prompt",
            vec![finished("run_1", RunStatus::Completed)],
        )]),
        ..Script::default()
    });
    let mut args = run_args(None, None);
    args.mode = Some(PermissionMode::AcceptEdits);
    let (result, _, _) = run(&daemon, args).await;
    assert_eq!(result.unwrap(), 0);
    assert_eq!(
        daemon.params("session/create")["permissionMode"],
        "acceptEdits"
    );

    let daemon = FakeDaemon::start(Script {
        events_after: HashMap::from([(
            "session/prompt",
            vec![finished("run_1", RunStatus::Completed)],
        )]),
        ..Script::default()
    });
    let mut args = run_args(None, Some("ses_1"));
    args.model = None;
    args.mode = Some(PermissionMode::Plan);
    let (result, _, _) = run(&daemon, args).await;
    assert_eq!(result.unwrap(), 0);
    assert_eq!(
        daemon.params("session/update"),
        json!({"sessionId": "ses_1", "permissionMode": "plan"})
    );
    // What shapes only a new session is refused on an existing one.
    let mut args = run_args(None, Some("ses_1"));
    args.allow = vec!["Bash(ls:*)".to_owned()];
    let (result, _, _) = run(&daemon, args).await;
    assert_eq!(result.unwrap_err().code, 2);
}

/// `stderr` without its after-run line (`tokens … · N steps · duration`: the duration is the
/// wall clock's), which must be there once.
fn without_after_run_line(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().collect();
    let count = lines
        .iter()
        .filter(|line| line.starts_with("tokens "))
        .count();
    assert_eq!(count, 1, "one after-run line: {stderr}");
    lines
        .into_iter()
        .filter(|line| !line.starts_with("tokens "))
        .map(|line| format!("{line}\n"))
        .collect()
}
