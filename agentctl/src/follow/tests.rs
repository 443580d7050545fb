//! `run` and `attach` against a scripted fake daemon on a real socket: the order of calls,
//! the params sent, events through jsonrpsee's subscription, exit codes, a dropped connection.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
struct Script {
    /// Events to send (as `session/event` notifications) right after answering a method.
    events_after: HashMap<&'static str, Vec<Event>>,
    /// Close the connection right after answering this method.
    drop_after: Option<&'static str>,
    /// The session `session/get` and `session/create` describe.
    last_seq: u64,
    running_run: Option<String>,
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
            "session/get" => json!({
                "session": session_info(&script), "queuedSteers": [], "queuedFollowUps": []
            }),
            "session/subscribe" => json!(7),
            "session/prompt" => json!({"runId": "run_1"}),
            "session/cancel" => json!({"cancelled": true, "runId": "run_1"}),
            _ => json!(true),
        };
        if method == "session/subscribe" {
            seq = message["params"]["afterSeq"].as_u64().unwrap_or(seq);
        }
        let reply = json!({"jsonrpc": "2.0", "id": message["id"], "result": result});
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
            };
            let notification = json!({
                "jsonrpc": "2.0",
                "method": "session/event",
                "params": {"subscription": 7, "result": envelope},
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
    }
}

fn run_args(cwd: Option<PathBuf>, session: Option<&str>) -> RunArgs {
    RunArgs {
        cwd,
        model: Some("m".to_owned()),
        session: session.map(str::to_owned),
        title: None,
        background: false,
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
    assert_eq!(stderr, "session: ses_1\n");
    assert_eq!(
        daemon.methods()[..4],
        [
            "initialize",
            "session/create",
            "session/subscribe",
            "session/prompt"
        ]
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
    assert_eq!(stderr, "run failed: it broke\nsession: ses_1\n");
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
}
