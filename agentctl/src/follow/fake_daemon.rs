//! A scripted fake daemon on a real socket for the `follow` tests: it answers the methods
//! `run` and `attach` call, sends scripted events after chosen methods, and closes the
//! connection where told; one script per connection it accepts, in order (a reconnection gets
//! the next).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use protocol::approval::{ApprovalDecision, PendingApproval};
use protocol::daemon::{Capabilities, Implementation, InitializeResult};
use protocol::event::{Event, MessageRole, RunStatus, SessionEventEnvelope, Usage};
use protocol::session::{SessionInfo, SessionStatus};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;

use crate::Context;
use crate::cli::RunArgs;
use crate::output::CommandError;
use crate::render::Output;

/// What the fake daemon does besides answering.
#[derive(Default)]
pub(super) struct Script {
    /// Events to send (as `session/event` notifications) right after answering a method.
    pub(super) events_after: HashMap<&'static str, Vec<Event>>,
    /// Close the connection right after answering this method.
    pub(super) drop_after: Option<&'static str>,
    /// The session `session/get` and `session/create` describe.
    pub(super) last_seq: u64,
    pub(super) running_run: Option<String>,
    /// Answer these methods with a JSON-RPC error (code, message) instead of a result.
    pub(super) errors: HashMap<&'static str, (i32, &'static str)>,
}

/// Every request the fake daemon received: method and params.
type Log = Arc<Mutex<Vec<(String, Value)>>>;

pub(super) struct FakeDaemon {
    _dir: tempfile::TempDir,
    socket: PathBuf,
    log: Log,
    server: tokio::task::JoinHandle<()>,
}

impl FakeDaemon {
    /// A daemon that serves one connection with `script`, then stops listening.
    pub(super) fn start(script: Script) -> FakeDaemon {
        FakeDaemon::start_each(vec![script])
    }

    /// A daemon that serves one connection per script, in order (the first connection, then
    /// the one made after it ended, …), then stops listening.
    pub(super) fn start_each(scripts: Vec<Script>) -> FakeDaemon {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("agentd.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let log = Log::default();
        let server = tokio::spawn(serve_each(listener, scripts, log.clone()));
        FakeDaemon {
            _dir: dir,
            socket,
            log,
            server,
        }
    }

    pub(super) fn context(&self) -> Context {
        Context {
            socket: self.socket.clone(),
            no_start: true,
            json: false,
            interactive: false,
            color: crate::cli::ColorChoice::Never,
            thinking: crate::render::Thinking::Brief,
            reconnect_wait: Duration::from_millis(200),
        }
    }

    pub(super) fn methods(&self) -> Vec<String> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .map(|(m, _)| m.clone())
            .collect()
    }

    pub(super) fn params(&self, method: &str) -> Value {
        let log = self.log.lock().unwrap();
        log.iter().find(|(m, _)| m == method).unwrap().1.clone()
    }

    /// The params of every call of `method`, in order.
    pub(super) fn all_params(&self, method: &str) -> Vec<Value> {
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

async fn serve_each(listener: UnixListener, scripts: Vec<Script>, log: Log) {
    for script in scripts {
        let (stream, _) = listener.accept().await.unwrap();
        serve(stream, script, &log).await;
    }
}

async fn serve(stream: tokio::net::UnixStream, script: Script, log: &Log) {
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
            "budget/list" => json!({"requests": [{
                "sessionId": "ses_1", "runId": "run_1", "requestedAt": "2026-01-01T00:00:00Z",
                "request": {"requestId": "bud_1", "budget": "tokens", "used": 40.0,
                            "limit": 20.0, "suggestedLimit": 60.0, "message": "m",
                            "expiresAt": "2026-01-01T00:10:00Z"}
            }]}),
            "budget/respond" => json!({
                "requestId": message["params"]["requestId"],
                "decision": message["params"]["decision"],
                "newLimit": message["params"]["newLimit"],
            }),
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

pub(super) fn assistant(run: &str, text: &str) -> Event {
    Event::MessageCompleted {
        run_id: run.to_owned(),
        role: MessageRole::Assistant,
        content: text.to_owned(),
        kind: None,
        tool_calls: Vec::new(),
    }
}

pub(super) fn finished(run: &str, status: RunStatus) -> Event {
    Event::RunFinished {
        run_id: run.to_owned(),
        status,
        error: Some("it broke".to_owned()),
        usage: Usage::default(),
        cost_usd: None,
    }
}

pub(super) fn run_args(cwd: Option<PathBuf>, session: Option<&str>) -> RunArgs {
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
        images: Vec::new(),
        append_system_prompt: None,
        output: crate::cli::RunOutput::Text,
        prompt: "say hello".to_owned(),
    }
}

/// Run `agentctl run` against `daemon`, collecting its output.
pub(super) async fn run(
    daemon: &FakeDaemon,
    args: RunArgs,
) -> (Result<u8, CommandError>, String, String) {
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

pub(super) fn pending(id: &str, tool: &str) -> PendingApproval {
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

pub(super) fn approval_requested(id: &str, tool: &str) -> Event {
    Event::ApprovalRequested {
        run_id: "run_1".to_owned(),
        approval: pending(id, tool),
    }
}

/// `stderr` without its after-run line (`tokens … · N steps · duration`: the duration is the
/// wall clock's), which must be there once.
pub(super) fn without_after_run_line(stderr: &str) -> String {
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
