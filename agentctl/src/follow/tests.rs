//! `run` and `attach` against a scripted fake daemon on a real socket: the order of calls,
//! the params sent, events through jsonrpsee's subscription, exit codes, a dropped connection.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use protocol::approval::{ApprovalDecision, PendingApproval, PermissionMode};
use protocol::daemon::{Capabilities, Implementation, InitializeResult};
use protocol::event::{Event, MessageRole, RunStatus, SessionEventEnvelope, Usage};
use protocol::session::{SessionInfo, SessionStatus};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;

use crate::Context;
use crate::approve_policy::ApprovePolicy;
use crate::cli::RunArgs;
use crate::output::CommandError;
use crate::render::Output;

/// What the fake daemon does besides answering.
#[derive(Default)]
struct Script {
    /// Events to send (as `session/event` notifications) right after answering a method.
    events_after: HashMap<&'static str, Vec<Event>>,
    /// Close the connection right after answering this method.
    drop_after: Option<&'static str>,
    /// The session `session/get` and `session/create` describe.
    last_seq: u64,
    running_run: Option<String>,
    /// Answer these methods with a JSON-RPC error (code, message) instead of a result.
    errors: HashMap<&'static str, (i32, &'static str)>,
}

/// Every request the fake daemon received: method and params.
type Log = Arc<Mutex<Vec<(String, Value)>>>;

struct FakeDaemon {
    _dir: tempfile::TempDir,
    socket: PathBuf,
    log: Log,
    server: tokio::task::JoinHandle<()>,
}

impl FakeDaemon {
    fn start(script: Script) -> FakeDaemon {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("agentd.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let log = Log::default();
        let server = tokio::spawn(serve(listener, script, log.clone()));
        FakeDaemon {
            _dir: dir,
            socket,
            log,
            server,
        }
    }

    fn context(&self) -> Context {
        Context {
            socket: self.socket.clone(),
            no_start: true,
            json: false,
            interactive: false,
            color: crate::cli::ColorChoice::Never,
        }
    }

    fn methods(&self) -> Vec<String> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .map(|(m, _)| m.clone())
            .collect()
    }

    fn params(&self, method: &str) -> Value {
        let log = self.log.lock().unwrap();
        log.iter().find(|(m, _)| m == method).unwrap().1.clone()
    }

    /// The params of every call of `method`, in order.
    fn all_params(&self, method: &str) -> Vec<Value> {
        let log = self.log.lock().unwrap();
        log.iter()
            .filter(|(m, _)| m == method)
            .map(|(_, params)| params.clone())
            .collect()
    }
}

impl Drop for FakeDaemon {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn session_info(script: &Script) -> SessionInfo {
    SessionInfo {
        permission_mode: Default::default(),
        session_id: "ses_1".to_owned(),
        title: None,
        cwd: "/tmp".to_owned(),
        provider: "openai".to_owned(),
        model: "m".to_owned(),
        created_at: "2026-11-30T09:00:00Z".to_owned(),
        updated_at: "2026-11-30T09:00:00Z".to_owned(),
        status: if script.running_run.is_some() {
            SessionStatus::Running
        } else {
            SessionStatus::Idle
        },
        run_id: script.running_run.clone(),
        last_seq: script.last_seq,
        usage: Usage::default(),
        preview: None,
        parent_session_id: None,
        cost_usd: None,
        forked_from: None,
    }
}

async fn serve(listener: UnixListener, script: Script, log: Log) {
    let (stream, _) = listener.accept().await.unwrap();
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    // Seq of the last event sent: like the daemon, replay starts after `afterSeq`.
    let mut seq = script.last_seq;
    while let Ok(Some(line)) = lines.next_line().await {
        let message: Value = serde_json::from_str(&line).unwrap();
        let method = message["method"].as_str().unwrap().to_owned();
        log.lock()
            .unwrap()
            .push((method.clone(), message["params"].clone()));
        let result = match method.as_str() {
            "initialize" => serde_json::to_value(InitializeResult {
                server_info: Implementation {
                    name: "fake".to_owned(),
                    version: "0".to_owned(),
                },
                protocol_version: protocol::PROTOCOL_VERSION.to_owned(),
                capabilities: Capabilities::default(),
            })
            .unwrap(),
            "session/create" => json!({"sessionId": "ses_1", "session": session_info(&script)}),
            "session/update" => json!({"session": session_info(&script)}),
            "session/get" => json!({
                "session": session_info(&script), "queuedSteers": [], "queuedFollowUps": []
            }),
            "session/subscribe" => json!({"subscriptionId": "sub_7"}),
            "session/prompt" => json!({"runId": "run_1"}),
            "session/cancel" => json!({"cancelled": true, "runId": "run_1"}),
            "approval/respond" => json!({
                "approvalId": message["params"]["approvalId"],
                "decision": message["params"]["decision"],
            }),
            "approval/list" => json!({"approvals": [pending("apr_1", "run_shell")]}),
            _ => json!(true),
        };
        if method == "session/subscribe" {
            seq = message["params"]["afterSeq"].as_u64().unwrap_or(seq);
        }
        let reply = match script.errors.get(method.as_str()) {
            Some((code, text)) => json!({
                "jsonrpc": "2.0", "id": message["id"], "error": {"code": code, "message": text}
            }),
            None => json!({"jsonrpc": "2.0", "id": message["id"], "result": result}),
        };
        let mut out = reply.to_string() + "\n";
        for event in script
            .events_after
            .get(method.as_str())
            .into_iter()
            .flatten()
        {
            if event.is_persisted() {
                seq += 1;
            }
            let envelope = SessionEventEnvelope {
                session_id: "ses_1".to_owned(),
                seq,
                event: event.clone(),
                not_persisted: false,
            };
            // Another subscription's event on the same connection first: not shown.
            let foreign = json!({
                "jsonrpc": "2.0",
                "method": "session/event",
                "params": {"subscriptionId": "sub_other", "sessionId": "ses_1", "seq": seq,
                           "event": {"type": "warning", "message": "another subscription's"}},
            });
            out.push_str(&(foreign.to_string() + "\n"));
            let mut params = serde_json::to_value(&envelope).unwrap();
            params["subscriptionId"] = json!("sub_7");
            let notification = json!({
                "jsonrpc": "2.0",
                "method": "session/event",
                "params": params,
            });
            out.push_str(&(notification.to_string() + "\n"));
        }
        write.write_all(out.as_bytes()).await.unwrap();
        if script.drop_after == Some(method.as_str()) {
            return;
        }
    }
}

fn assistant(run: &str, text: &str) -> Event {
    Event::MessageCompleted {
        run_id: run.to_owned(),
        role: MessageRole::Assistant,
        content: text.to_owned(),
        kind: None,
        tool_calls: Vec::new(),
    }
}

fn finished(run: &str, status: RunStatus) -> Event {
    Event::RunFinished {
        run_id: run.to_owned(),
        status,
        error: Some("it broke".to_owned()),
        usage: Usage::default(),
        cost_usd: None,
    }
}

fn run_args(cwd: Option<PathBuf>, session: Option<&str>) -> RunArgs {
    RunArgs {
        cwd,
        // A model with --session would be a `session/update` first.
        model: session.is_none().then(|| "m".to_owned()),
        session: session.map(str::to_owned),
        continue_session: false,
        title: None,
        background: false,
        approve: None,
        mode: None,
        agent: None,
        allow: Vec::new(),
        deny: Vec::new(),
        max_steps: None,
        append_system_prompt: None,
        output: crate::cli::RunOutput::Text,
        prompt: "say hello".to_owned(),
    }
}

/// Run `agentctl run` against `daemon`, collecting its output.
async fn run(daemon: &FakeDaemon, args: RunArgs) -> (Result<u8, CommandError>, String, String) {
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
    let run = crate::commands::run::run(&ctx, args, &mut sink);
    let result = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .unwrap();
    (result, stdout, stderr)
}

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
async fn run_exits_3_when_the_daemon_goes_away_mid_run() {
    let daemon = FakeDaemon::start(Script {
        events_after: HashMap::from([(
            "session/prompt",
            vec![Event::MessageDelta {
                run_id: "run_1".to_owned(),
                text: "partial".to_owned(),
            }],
        )]),
        drop_after: Some("session/prompt"),
        ..Script::default()
    });
    let (result, stdout, _) = run(&daemon, run_args(None, None)).await;
    let err = result.unwrap_err();
    assert_eq!(err.code, 3, "{}", err.message);
    assert!(
        err.message.contains("lost the connection"),
        "{}",
        err.message
    );
    assert_eq!(stdout, "partial\n");
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

fn pending(id: &str, tool: &str) -> PendingApproval {
    PendingApproval {
        session_rule: None,
        always_rule: None,
        task_id: None,
        agent_type: None,
        parent_run_id: None,
        approval_id: id.to_owned(),
        session_id: "ses_1".to_owned(),
        run_id: "run_1".to_owned(),
        tool_call_id: format!("call_{id}"),
        tool: tool.to_owned(),
        summary: if tool == "run_shell" {
            "ls -la"
        } else {
            "src/main.rs"
        }
        .to_owned(),
        input: json!({}),
        reason: "default mode asks".to_owned(),
        options: vec![
            ApprovalDecision::AllowOnce,
            ApprovalDecision::AllowSession,
            ApprovalDecision::Deny,
            ApprovalDecision::DenyAndCancel,
        ],
        requested_at: "2026-11-30T09:00:00Z".to_owned(),
        expires_at: "2026-11-30T09:10:00Z".to_owned(),
    }
}

fn approval_requested(id: &str, tool: &str) -> Event {
    Event::ApprovalRequested {
        run_id: "run_1".to_owned(),
        approval: pending(id, tool),
    }
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

/// Run an approvals command against `daemon`.
async fn approvals_command(daemon: &FakeDaemon, command: &str) -> Result<(), CommandError> {
    let ctx = daemon.context();
    let call = async {
        match command {
            "list" => crate::commands::approvals::list(&ctx, Some("ses_1".to_owned())).await,
            "approve --session" => {
                crate::commands::approvals::respond(
                    &ctx,
                    "apr_1".to_owned(),
                    crate::commands::approvals::approve_decision(true, false),
                    None,
                )
                .await
            }
            "deny --cancel --reason" => {
                crate::commands::approvals::respond(
                    &ctx,
                    "apr_1".to_owned(),
                    crate::commands::approvals::deny_decision(true, false),
                    Some("not now".to_owned()),
                )
                .await
            }
            other => panic!("unknown command {other}"),
        }
    };
    tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .unwrap()
}

#[tokio::test]
async fn approvals_list_approve_and_deny_send_the_right_params() {
    let daemon = FakeDaemon::start(Script::default());
    approvals_command(&daemon, "list").await.unwrap();
    assert_eq!(
        daemon.params("approval/list"),
        json!({"sessionId": "ses_1"})
    );
    assert_eq!(
        daemon.params("initialize")["capabilities"],
        json!({"approvals": false}),
        "one-shot commands do not subscribe, and declare nothing"
    );

    let daemon = FakeDaemon::start(Script::default());
    approvals_command(&daemon, "approve --session")
        .await
        .unwrap();
    assert_eq!(
        daemon.params("approval/respond"),
        json!({"approvalId": "apr_1", "decision": "allowSession"})
    );

    let daemon = FakeDaemon::start(Script::default());
    approvals_command(&daemon, "deny --cancel --reason")
        .await
        .unwrap();
    assert_eq!(
        daemon.params("approval/respond"),
        json!({"approvalId": "apr_1", "decision": "denyAndCancel", "reason": "not now"})
    );
}

#[tokio::test]
async fn approve_fails_with_the_daemons_message_when_already_decided_or_unknown() {
    for (code, text) in [
        (
            -32008,
            "approval apr_1 was already decided (allowOnce by client:zed)",
        ),
        (-32005, "no pending approval apr_1"),
    ] {
        let daemon = FakeDaemon::start(Script {
            errors: HashMap::from([("approval/respond", (code, text))]),
            ..Script::default()
        });
        let err = approvals_command(&daemon, "approve --session")
            .await
            .unwrap_err();
        assert_eq!(err.code, 1);
        assert_eq!(err.message, text);
    }
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
