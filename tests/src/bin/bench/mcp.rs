//! MCP figures of `bench` (`BENCH_ONLY=mcp` runs only these): a tool call to a local stdio
//! server (server-everything's `echo`) made directly over stdio, through the daemon's MCP
//! runtime (`McpHandle::call`) and as a run step through the daemon; server start to ready;
//! 50 sessions sharing one server with concurrent calls (errors and server processes counted).
//! Needs the servers of `tests/mcp-servers/install.sh`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentd_tests::harness::{Client, Daemon, TestEnv};
use agentd_tests::mcp_servers::{ServerCommand, everything_stdio};
use agentd_tests::mock_llm::{MockLlm, Reply};
use agentd_work::mcp::{McpManager, McpServerConfig, McpSource, McpStatus, McpTransport};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::report::{Row, per, per_ms};
use super::{create, prompt, subscribe, wait_finished};

/// How long a server may take to become ready in the bench.
const READY_WAIT: Duration = Duration::from_secs(60);
/// Sessions sharing one server.
const SHARING_SESSIONS: usize = 50;

pub async fn figures(scale: usize, rows: &mut Vec<Row>) {
    let server = everything_stdio();
    let calls = 1000 * scale;

    let direct = direct_calls(&server, calls).await;
    rows.push(Row::per(
        format!("MCP echo directly over stdio ({calls} sequential)"),
        direct,
        calls,
    ));
    let (runtime, start_to_ready) = runtime_calls(&server, calls, 5).await;
    rows.push(Row::per(
        format!("MCP echo through McpHandle::call ({calls} sequential)"),
        runtime,
        calls,
    ));
    rows.push(Row::with(
        "  added by the daemon's MCP runtime per call (goal ≤ 0.5 ms)",
        added(runtime, direct, calls),
        added_ms(runtime, direct, calls),
        "ms",
    ));
    rows.push(Row::ms(
        "MCP server start → ready (server-everything, stdio)",
        start_to_ready,
    ));
    through_the_daemon(&server, 200 * scale, rows).await;
}

/// `total - base` per call, signed.
fn added(total: Duration, base: Duration, calls: usize) -> String {
    format!("{:+.3} ms", added_ms(total, base, calls))
}

/// `total - base` per call, signed, in ms.
fn added_ms(total: Duration, base: Duration, calls: usize) -> f64 {
    (total.as_secs_f64() - base.as_secs_f64()) * 1000.0 / calls as f64
}

/// `calls` sequential `tools/call echo` on a server this process starts and speaks to itself.
async fn direct_calls(server: &ServerCommand, calls: usize) -> Duration {
    let mut command = tokio::process::Command::new(&server.command);
    command
        .args(&server.args)
        .envs(&server.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = command.spawn().expect("start server-everything");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut send = async |message: Value| {
        let mut line = message.to_string();
        line.push('\n');
        stdin
            .write_all(line.as_bytes())
            .await
            .expect("write to the server");
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"}}}),
    )
    .await;
    answer(&mut lines, 0).await;
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let started = Instant::now();
    for id in 1..=calls {
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "hi"}}}))
        .await;
        let result = answer(&mut lines, id).await;
        assert!(result.get("result").is_some(), "echo failed: {result}");
    }
    let elapsed = started.elapsed();
    let _ = child.kill().await;
    elapsed
}

/// The answer with `id` (notifications and requests of the server skipped).
async fn answer(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    id: usize,
) -> Value {
    loop {
        let line = tokio::time::timeout(READY_WAIT, lines.next_line())
            .await
            .expect("the server answers in time")
            .expect("read from the server")
            .expect("the server is still there");
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if message["id"] == json!(id) && message.get("method").is_none() {
            return message;
        }
    }
}

fn config(name: &str, server: &ServerCommand, file: &Path) -> McpServerConfig {
    McpServerConfig {
        name: name.to_owned(),
        transport: McpTransport::Stdio {
            command: server.command.clone(),
            args: server.args.clone(),
            env: server.env.clone(),
            cwd: None,
        },
        enabled: true,
        startup_timeout: agentd_work::mcp::DEFAULT_STARTUP_TIMEOUT,
        tool_timeout: agentd_work::mcp::DEFAULT_TOOL_TIMEOUT,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        sampling: false,
        source: McpSource::User {
            file: file.to_path_buf(),
        },
    }
}

/// `calls` sequential echo calls through the daemon's runtime (an `McpManager` in this
/// process), and the mean start → ready time of `starts` fresh servers.
async fn runtime_calls(
    server: &ServerCommand,
    calls: usize,
    starts: usize,
) -> (Duration, Duration) {
    let dir = tempfile::tempdir().expect("temp dir");
    let manager = McpManager::new(dir.path().join("mcp"), Duration::from_secs(600));
    let mut start_to_ready = Duration::ZERO;
    for i in 0..starts {
        let config = config(
            &format!("everything{i}"),
            server,
            &dir.path().join("config.toml"),
        );
        let started = Instant::now();
        let handle = manager.acquire(&config, dir.path());
        let status = handle.wait_ready(READY_WAIT).await;
        assert!(
            matches!(status, McpStatus::Ready { .. }),
            "not ready: {status:?}"
        );
        start_to_ready += started.elapsed();
    }
    let config = config("everything0", server, &dir.path().join("config.toml"));
    let handle = Arc::new(manager.acquire(&config, dir.path()));
    let mut arguments = serde_json::Map::new();
    arguments.insert("message".to_owned(), json!("hi"));
    let started = Instant::now();
    for _ in 0..calls {
        let result = handle
            .call("echo", arguments.clone(), None, CancellationToken::new())
            .await
            .expect("echo through the runtime");
        assert!(!result.is_error);
    }
    let elapsed = started.elapsed();
    drop(handle);
    manager.shutdown().await;
    (elapsed, start_to_ready / starts.max(1) as u32)
}

/// Run steps through the daemon: `steps` calls of `mcp__everything__echo` against the same
/// count of `list_dir`, then 50 sessions calling the one shared server at once.
async fn through_the_daemon(server: &ServerCommand, steps: usize, rows: &mut Vec<Row>) {
    let mock = MockLlm::start_echo().await;
    let args: Vec<String> = server.args.iter().map(|arg| format!("{arg:?}")).collect();
    let env = TestEnv::new()
        .var("OPENAI_API_KEY", "bench")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .var("AGENTD_LOG", "warn")
        .config(&format!(
            "[permissions]\ndefault_mode = \"bypass\"\n\n[mcp_servers.everything]\ncommand = {:?}\nargs = [{}]\n",
            server.command,
            args.join(", ")
        ));
    let daemon = Daemon::start_in(env).await;
    let mut client = daemon.client().await;
    let session = create(&mut client, &daemon).await;
    subscribe(&mut client, &session).await;
    // A first run starts the server (and waits for it).
    prompt(&mut client, &session, "warm up").await;
    wait_finished(&mut client).await;

    let mut per_step = BTreeMap::new();
    for (tool, arguments) in [
        ("list_dir", json!({"path": "."})),
        ("mcp__everything__echo", json!({"message": "hi"})),
    ] {
        for i in 0..steps {
            mock.push(Reply::tool_call(format!("c{i}"), tool, arguments.clone()));
        }
        mock.push(Reply::text("done"));
        let started = Instant::now();
        prompt(&mut client, &session, "walk").await;
        let errors = tool_errors_until_finished(&mut client).await;
        assert_eq!(errors, 0, "{tool} calls failed");
        per_step.insert(tool, started.elapsed());
    }
    let builtin = per_step["list_dir"];
    let mcp = per_step["mcp__everything__echo"];
    rows.push(Row::per(
        format!("run step calling mcp__everything__echo ({steps}-step run)"),
        mcp,
        steps + 1,
    ));
    rows.push(Row::with(
        "  the same with list_dir, difference per step",
        format!(
            "{} ({} per step)",
            per(builtin, steps + 1),
            added(mcp, builtin, steps + 1)
        ),
        per_ms(builtin, steps + 1),
        "ms",
    ));

    // 50 sessions, each on its own connection, calling the shared server at once.
    let mut clients = Vec::with_capacity(SHARING_SESSIONS);
    for _ in 0..SHARING_SESSIONS {
        let mut c = daemon.client().await;
        let id = create(&mut c, &daemon).await;
        subscribe(&mut c, &id).await;
        clients.push((c, id));
    }
    for i in 0..SHARING_SESSIONS {
        mock.push(Reply::tool_call(
            format!("s{i}"),
            "mcp__everything__echo",
            json!({"message": format!("session {i}")}),
        ));
    }
    let started = Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|(mut c, id)| {
            tokio::spawn(async move {
                prompt(&mut c, &id, "call the server").await;
                tool_errors_until_finished(&mut c).await
            })
        })
        .collect();
    let mut errors = 0;
    for task in tasks {
        errors += task.await.expect("session task");
    }
    let elapsed = started.elapsed();
    let list = client
        .request("mcp/list", json!({}))
        .await
        .expect("mcp/list");
    let servers = list["servers"].as_array().map_or(0, Vec::len);
    let script = &server.args[0];
    rows.push(Row::ms(
        format!("{SHARING_SESSIONS} sessions calling one shared server at once, wall time"),
        elapsed,
    ));
    rows.push(Row::text(
        "  tool errors, servers listed, server processes",
        format!("{errors}, {servers}, {}", processes_running(script)),
    ));
}

/// Events until `runFinished`; returns how many tool results were errors.
async fn tool_errors_until_finished(client: &mut Client) -> usize {
    let mut errors = 0;
    loop {
        let event = client.next_notification_result().await;
        match event["event"]["type"].as_str() {
            Some("toolCompleted") if event["event"]["isError"] == json!(true) => errors += 1,
            Some("runFinished") => return errors,
            _ => {}
        }
    }
}

/// Processes whose command line names `script`.
fn processes_running(script: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .filter(|cmdline| {
            cmdline
                .split(|byte| *byte == 0)
                .any(|arg| arg == script.as_bytes())
        })
        .count()
}
