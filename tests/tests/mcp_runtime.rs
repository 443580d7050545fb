//! The MCP runtime driven directly (`agentd::mcp::McpManager`) with real servers: npm
//! server-everything over stdio and streamable HTTP, PyPI mcp-server-time. Start, calls,
//! progress, crash and restart, a server that never starts, timeouts, sharing, idle stop,
//! shutdown, `list_changed`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agentd::mcp::{
    McpCallError, McpContent, McpHandle, McpLimits, McpManager, McpServerConfig, McpSource,
    McpStatus, McpTransport,
};
use agentd_tests::mcp_servers::{self, EverythingHttp, ServerCommand};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// How long a test waits for a real server to be ready (node and python start in about a
/// second; CI machines are slower).
const READY_DEADLINE: Duration = Duration::from_secs(60);

/// Supervision that is quick to observe: short backoff, few attempts, short stop grace.
fn quick_limits() -> McpLimits {
    McpLimits {
        max_restart_attempts: 2,
        restart_backoff: Duration::from_millis(20),
        stop_grace: Duration::from_millis(500),
        ..McpLimits::default()
    }
}

struct Setup {
    dir: tempfile::TempDir,
    manager: Arc<McpManager>,
}

impl Setup {
    fn new() -> Setup {
        Self::with_idle(Duration::from_secs(600))
    }

    fn with_idle(idle_stop: Duration) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let manager =
            McpManager::with_limits(dir.path().join("mcp-logs"), idle_stop, quick_limits());
        Setup { dir, manager }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    fn acquire(&self, config: &McpServerConfig) -> McpHandle {
        self.manager.acquire(config, &self.root())
    }
}

fn stdio(name: &str, server: ServerCommand) -> McpServerConfig {
    config(
        name,
        McpTransport::Stdio {
            command: server.command,
            args: server.args,
            env: server.env,
            cwd: None,
        },
    )
}

fn config(name: &str, transport: McpTransport) -> McpServerConfig {
    McpServerConfig {
        name: name.to_owned(),
        transport,
        enabled: true,
        startup_timeout: READY_DEADLINE,
        tool_timeout: Duration::from_secs(60),
        enabled_tools: None,
        disabled_tools: Vec::new(),
        source: McpSource::Session,
    }
}

async fn ready(handle: &McpHandle) -> usize {
    match handle.wait_ready(READY_DEADLINE).await {
        McpStatus::Ready { tools } => tools,
        other => panic!("{} is not ready: {other:?}", handle.config().name),
    }
}

fn arguments(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    value.as_object().unwrap().clone()
}

fn text(content: &[McpContent]) -> String {
    content
        .iter()
        .filter_map(|block| match block {
            McpContent::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

async fn echo(handle: &McpHandle, message: &str) -> String {
    let result = handle
        .call(
            "echo",
            arguments(json!({"message": message})),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(!result.is_error);
    text(&result.content)
}

/// Waits (on the handle's status watch) until `wanted` holds.
async fn status_until(handle: &McpHandle, wanted: impl Fn(&McpStatus) -> bool) -> McpStatus {
    let mut status = handle.watch_status();
    tokio::time::timeout(READY_DEADLINE, status.wait_for(|status| wanted(status)))
        .await
        .unwrap_or_else(|_| panic!("status still {:?}", handle.status()))
        .unwrap()
        .clone()
}

/// Live (not zombie) processes of process group `pgid`.
fn group_members(pgid: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields[0] != "Z" && fields[0] != "X" && fields[2] == pgid.to_string() {
            members.push(pid);
        }
    }
    members
}

/// Polls the process table (the outside world) until group `pgid` is empty, with a deadline.
async fn group_gone(pgid: u32) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !group_members(pgid).is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "process group {pgid} still has {:?}",
            group_members(pgid)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_stdio_server_gets_ready_with_its_tools_and_answers_a_call() {
    let setup = Setup::new();
    let handle = setup.acquire(&stdio("everything", mcp_servers::everything_stdio()));
    let count = ready(&handle).await;
    let tools = handle.tools();
    assert_eq!(count, tools.len());
    assert!(count >= 10, "{tools:?}");
    let echo_tool = tools.iter().find(|tool| tool.name == "echo").unwrap();
    assert!(echo_tool.input_schema["properties"]["message"].is_object());
    let long = tools
        .iter()
        .find(|tool| tool.name == "trigger-long-running-operation")
        .unwrap();
    assert!(long.read_only, "readOnlyHint is mapped");
    assert_eq!(echo(&handle, "hello").await, "Echo: hello");
    assert!(handle.pid().is_some());
    assert_eq!(setup.manager.running(), 1);
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn enabled_and_disabled_tools_filter_what_is_offered_and_callable() {
    let setup = Setup::new();
    let mut config = stdio("everything", mcp_servers::everything_stdio());
    config.enabled_tools = Some(vec!["echo".into(), "get-sum".into()]);
    config.disabled_tools = vec!["get-sum".into()];
    let handle = setup.acquire(&config);
    assert_eq!(ready(&handle).await, 1);
    assert_eq!(handle.tools()[0].name, "echo");
    let refused = handle
        .call(
            "get-sum",
            arguments(json!({"a": 1, "b": 2})),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(refused, McpCallError::Refused { .. }),
        "{refused:?}"
    );
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn progress_notifications_of_a_long_running_operation_reach_the_caller() {
    let setup = Setup::new();
    let handle = setup.acquire(&stdio("everything", mcp_servers::everything_stdio()));
    ready(&handle).await;
    let (progress, mut updates) = tokio::sync::mpsc::channel(16);
    let result = handle
        .call(
            "trigger-long-running-operation",
            arguments(json!({"duration": 0.3, "steps": 3})),
            Some(progress),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(text(&result.content).contains("Long running operation completed"));
    let mut seen = Vec::new();
    while let Ok(update) = updates.try_recv() {
        seen.push((update.progress, update.total));
    }
    assert_eq!(seen, [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]);
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn a_server_killed_mid_call_fails_the_call_restarts_and_answers_the_next() {
    let setup = Setup::new();
    let handle = setup.acquire(&stdio("everything", mcp_servers::everything_stdio()));
    ready(&handle).await;
    let first_pid = handle.pid().unwrap();
    let mut changes = setup.manager.status_changes();
    let (progress, mut updates) = tokio::sync::mpsc::channel(16);
    let call = handle.call(
        "trigger-long-running-operation",
        arguments(json!({"duration": 30, "steps": 60})),
        Some(progress),
        CancellationToken::new(),
    );
    let kill = async {
        // The call is in flight once its first progress arrives.
        updates.recv().await.unwrap();
        // SAFETY: signals the server's own process group.
        unsafe { libc::killpg(first_pid as i32, libc::SIGKILL) };
    };
    let (result, ()) = tokio::join!(call, kill);
    match result {
        Err(McpCallError::Exited { server, reason }) => {
            assert_eq!(server, "everything");
            assert!(
                reason.contains("signal 9") || reason.contains("closed"),
                "{reason}"
            );
        }
        other => panic!("expected Exited, got {other:?}"),
    }
    let restarting = loop {
        let change = changes.recv().await.unwrap();
        if let McpStatus::Restarting { attempt, error } = change.status {
            break (attempt, error);
        }
    };
    assert_eq!(restarting.0, 1);
    assert!(
        restarting.1.contains("killed by signal 9"),
        "{}",
        restarting.1
    );
    status_until(&handle, |status| matches!(status, McpStatus::Ready { .. })).await;
    assert_eq!(echo(&handle, "again").await, "Echo: again");
    assert_ne!(handle.pid(), Some(first_pid));
    group_gone(first_pid).await;
    let info = &setup.manager.servers()[0];
    assert_eq!(info.restarts, 1);
    assert!(info.last_error.as_deref().unwrap().contains("signal 9"));
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn a_server_that_never_starts_fails_with_its_stderr_after_bounded_attempts() {
    let setup = Setup::new();
    let config = stdio(
        "broken",
        ServerCommand {
            command: "/bin/sh".into(),
            args: vec!["-c".into(), "echo cannot-find-my-config >&2; exit 3".into()],
            env: BTreeMap::new(),
        },
    );
    let mut changes = setup.manager.status_changes();
    let handle = setup.acquire(&config);
    let failed = status_until(&handle, |status| matches!(status, McpStatus::Failed { .. })).await;
    let McpStatus::Failed { error, stderr_tail } = failed else {
        unreachable!()
    };
    assert!(error.contains("exited with status 3"), "{error}");
    assert!(
        stderr_tail.contains("cannot-find-my-config"),
        "{stderr_tail}"
    );
    let mut attempts = Vec::new();
    while let Ok(change) = changes.try_recv() {
        if let McpStatus::Restarting { attempt, .. } = change.status {
            attempts.push(attempt);
        }
    }
    assert_eq!(attempts, [1, 2], "max_restart_attempts bounds the restarts");
    let call = handle
        .call(
            "echo",
            serde_json::Map::new(),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(call, McpCallError::NotReady { .. }), "{call:?}");
    let info = &setup.manager.servers()[0];
    let log = std::fs::read_to_string(info.log_file.as_ref().unwrap()).unwrap();
    assert_eq!(log.matches("cannot-find-my-config").count(), 3, "{log}");
    // `restart` tries again from a failed state.
    setup
        .manager
        .restart("broken", &setup.root())
        .await
        .unwrap();
    status_until(&handle, |status| {
        matches!(status, McpStatus::Starting | McpStatus::Restarting { .. })
    })
    .await;
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn a_call_past_the_tool_timeout_is_cancelled_and_the_server_keeps_working() {
    let setup = Setup::new();
    let mut config = stdio("everything", mcp_servers::everything_stdio());
    config.tool_timeout = Duration::from_millis(300);
    let handle = setup.acquire(&config);
    ready(&handle).await;
    let pid = handle.pid();
    let timed_out = handle
        .call(
            "trigger-long-running-operation",
            arguments(json!({"duration": 20, "steps": 2})),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        timed_out,
        McpCallError::Timeout {
            server: "everything".into(),
            tool: "trigger-long-running-operation".into(),
            secs: 1
        }
    );
    assert_eq!(echo(&handle, "still here").await, "Echo: still here");
    assert_eq!(handle.pid(), pid);
    // A caller's cancel ends the call the same way.
    let cancel = CancellationToken::new();
    let (progress, mut updates) = tokio::sync::mpsc::channel(4);
    let call = handle.call(
        "trigger-long-running-operation",
        arguments(json!({"duration": 20, "steps": 200})),
        Some(progress),
        cancel.clone(),
    );
    let cancelling = async {
        updates.recv().await.unwrap();
        cancel.cancel();
    };
    let (cancelled, ()) = tokio::join!(call, cancelling);
    assert_eq!(cancelled.unwrap_err(), McpCallError::Cancelled);
    assert_eq!(echo(&handle, "after cancel").await, "Echo: after cancel");
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn two_acquires_of_one_config_share_one_process() {
    let setup = Setup::new();
    let config = stdio("everything", mcp_servers::everything_stdio());
    let first = setup.acquire(&config);
    let second = setup.acquire(&config);
    ready(&first).await;
    ready(&second).await;
    assert_eq!(first.key(), second.key());
    assert_eq!(first.pid(), second.pid());
    let servers = setup.manager.servers();
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0].users, 2);
    assert_eq!(servers[0].pid, first.pid());
    // Another project root is another server.
    let elsewhere = tempfile::tempdir().unwrap();
    let other = setup.manager.acquire(&config, elsewhere.path());
    ready(&other).await;
    assert_ne!(other.pid(), first.pid());
    assert_eq!(setup.manager.running(), 2);
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn an_unused_server_stops_after_the_idle_period_and_a_new_acquire_reuses_one_in_it() {
    let setup = Setup::with_idle(Duration::from_millis(1500));
    let config = stdio("everything", mcp_servers::everything_stdio());
    let handle = setup.acquire(&config);
    ready(&handle).await;
    let pid = handle.pid().unwrap();
    drop(handle);
    // Acquired again within the idle period: the same process.
    let again = setup.acquire(&config);
    assert_eq!(again.pid(), Some(pid));
    let mut status = again.watch_status();
    drop(again);
    tokio::time::timeout(
        READY_DEADLINE,
        status.wait_for(|status| *status == McpStatus::Stopped),
    )
    .await
    .unwrap()
    .unwrap();
    group_gone(pid).await;
    assert!(setup.manager.servers().is_empty());
    assert_eq!(setup.manager.running(), 0);
    // The next acquire starts a new process.
    let fresh = setup.acquire(&config);
    ready(&fresh).await;
    assert_ne!(fresh.pid(), Some(pid));
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn shutdown_leaves_no_process_in_any_server_group() {
    let setup = Setup::new();
    let everything = setup.acquire(&stdio("everything", mcp_servers::everything_stdio()));
    let time = setup.acquire(&stdio("time", mcp_servers::time_stdio()));
    ready(&everything).await;
    ready(&time).await;
    let groups = [everything.pid().unwrap(), time.pid().unwrap()];
    for group in groups {
        assert!(!group_members(group).is_empty());
    }
    setup.manager.shutdown().await;
    assert_eq!(everything.status(), McpStatus::Stopped);
    assert_eq!(time.status(), McpStatus::Stopped);
    for group in groups {
        group_gone(group).await;
    }
    // After shutdown nothing starts.
    let late = setup.acquire(&stdio("late", mcp_servers::everything_stdio()));
    assert_eq!(late.status(), McpStatus::Stopped);
    assert_eq!(setup.manager.running(), 0);
}

#[tokio::test]
async fn a_streamable_http_server_works() {
    let server = EverythingHttp::start().await;
    let setup = Setup::new();
    let handle = setup.acquire(&config(
        "everything-http",
        McpTransport::Http {
            url: server.url(),
            headers: BTreeMap::from([("X-Test".to_owned(), "yes".to_owned())]),
        },
    ));
    assert!(ready(&handle).await >= 10);
    assert_eq!(handle.pid(), None);
    assert_eq!(echo(&handle, "over http").await, "Echo: over http");
    let info = &setup.manager.servers()[0];
    assert_eq!(info.log_file, None);
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn the_python_time_server_works() {
    let setup = Setup::new();
    let handle = setup.acquire(&stdio("time", mcp_servers::time_stdio()));
    ready(&handle).await;
    let names: Vec<String> = handle
        .tools()
        .iter()
        .map(|tool| tool.name.clone())
        .collect();
    assert!(names.contains(&"get_current_time".to_owned()), "{names:?}");
    let result = handle
        .call(
            "get_current_time",
            arguments(json!({"timezone": "Europe/Berlin"})),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(!result.is_error);
    assert!(
        text(&result.content).contains("Europe/Berlin"),
        "{result:?}"
    );
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn stdio_servers_get_the_project_root_as_cwd_and_no_secrets_of_the_daemon() {
    let setup = Setup::new();
    let mut config = stdio("everything", mcp_servers::everything_stdio());
    if let McpTransport::Stdio { env, .. } = &mut config.transport {
        env.insert("CONFIGURED_VAR".into(), "configured".into());
    }
    let handle = setup.acquire(&config);
    ready(&handle).await;
    let result = handle
        .call(
            "get-env",
            serde_json::Map::new(),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let env: serde_json::Value = serde_json::from_str(&text(&result.content)).unwrap();
    assert_eq!(env["CONFIGURED_VAR"], "configured");
    for name in env.as_object().unwrap().keys() {
        assert!(
            agentd::process::KEPT_ENV_VARS.contains(&name.as_str())
                || name.starts_with("LC_")
                || name == "CONFIGURED_VAR"
                || name == agentd::process::supervisor::MARKER_VAR,
            "{name} reached the server: only the safe base and the configured env may"
        );
    }
    let cwd = std::fs::read_link(format!("/proc/{}/cwd", handle.pid().unwrap())).unwrap();
    assert_eq!(cwd, setup.root().canonicalize().unwrap());
    setup.manager.shutdown().await;
}

/// server-everything registers its task tool (`simulate-research-query`) once the client's
/// `notifications/initialized` arrives and announces it with `notifications/tools/list_changed`:
/// the manager lists the tools again, bumps the generation and announces `ready` again.
#[tokio::test]
async fn a_tools_list_changed_notification_refreshes_the_tools() {
    let setup = Setup::new();
    let mut changes = setup.manager.status_changes();
    let handle = setup.acquire(&stdio("everything", mcp_servers::everything_stdio()));
    let mut readies = 0;
    while readies < 2 {
        let change = tokio::time::timeout(READY_DEADLINE, changes.recv())
            .await
            .expect("a second ready after list_changed")
            .unwrap();
        if matches!(change.status, McpStatus::Ready { .. }) {
            readies += 1;
        }
    }
    assert!(
        handle.tools_generation() >= 2,
        "{}",
        handle.tools_generation()
    );
    let names: Vec<String> = handle
        .tools()
        .iter()
        .map(|tool| tool.name.clone())
        .collect();
    assert!(
        names.contains(&"simulate-research-query".to_owned()),
        "{names:?}"
    );
    setup.manager.shutdown().await;
}

/// rmcp's churn stays in one file: no other source file of the workspace names it.
#[test]
fn rmcp_is_named_only_in_mcp_connection() {
    fn walk(dir: &std::path::Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|ext| ext == "rs")
                && !path.ends_with("agentd/src/mcp/connection.rs")
                && std::fs::read_to_string(&path)
                    .unwrap()
                    .lines()
                    .any(|line| line.contains("rmcp::") || line.contains("use rmcp"))
            {
                found.push(path.display().to_string());
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for crate_dir in ["agentd/src", "agentctl/src", "protocol/src", "tests/src"] {
        walk(&root.join(crate_dir), &mut found);
    }
    assert!(
        found.is_empty(),
        "rmcp named outside mcp::connection: {found:?}"
    );
}

/// A daemon killed with SIGKILL takes its MCP servers along: the server's leader has the death
/// signal, and what it left in its group is killed by the next daemon on the same state before
/// it serves (the group was recorded).
#[tokio::test]
async fn a_killed_owner_takes_its_stdio_server_along_and_the_next_kills_the_rest() {
    let state = tempfile::tempdir().unwrap();
    let (mut first_host, first) = start_host(state.path()).await;
    let members = group_members(first);
    assert!(
        members.len() >= 2,
        "node and the sleep it left: {members:?}"
    );
    first_host.start_kill().unwrap();
    first_host.wait().await.unwrap();
    // The leader dies with its owner (death signal).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while group_members(first).contains(&first) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server outlived its owner"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The next owner kills the rest before it starts its own server.
    let (mut second_host, second) = start_host(state.path()).await;
    assert!(
        group_members(first).is_empty(),
        "{:?}",
        group_members(first)
    );
    second_host.start_kill().unwrap();
    second_host.wait().await.unwrap();
    // SAFETY: the test's own leftover group (the sleep of the second host's server).
    unsafe { libc::killpg(second as i32, libc::SIGKILL) };
    group_gone(second).await;
}

async fn start_host(state: &std::path::Path) -> (tokio::process::Child, u32) {
    use tokio::io::AsyncBufReadExt;
    let mut host = tokio::process::Command::new(agentd_tests::harness::binary("mcp-host"))
        .arg(state)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(host.stdout.take().unwrap()).lines();
    let pid = tokio::time::timeout(READY_DEADLINE, lines.next_line())
        .await
        .expect("mcp-host reports its server")
        .unwrap()
        .expect("mcp-host printed the server's pid")
        .parse()
        .unwrap();
    (host, pid)
}

/// An HTTP server that goes away shows only when a call cannot reach it: the call fails as
/// `Exited` with the cause, the server is lost (restarts, then `failed` while it stays away),
/// and `restart` once it is back makes it ready again.
#[tokio::test]
async fn an_http_server_that_went_away_fails_the_call_and_comes_back_on_restart() {
    let server = EverythingHttp::start().await;
    let port = server.port;
    let setup = Setup::new();
    let handle = setup.acquire(&config(
        "everything-http",
        McpTransport::Http {
            url: server.url(),
            headers: BTreeMap::new(),
        },
    ));
    ready(&handle).await;
    drop(server);
    let failed = handle
        .call(
            "echo",
            arguments(json!({"message": "x"})),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    let McpCallError::Exited { reason, .. } = &failed else {
        panic!("expected Exited, got {failed:?}");
    };
    assert!(reason.starts_with("cannot reach it: "), "{reason}");
    assert!(!reason.contains("rmcp::"), "no type names: {reason}");
    status_until(&handle, |status| matches!(status, McpStatus::Failed { .. })).await;
    let _back = EverythingHttp::start_on(port).await;
    setup
        .manager
        .restart("everything-http", &setup.root())
        .await
        .unwrap();
    status_until(&handle, |status| matches!(status, McpStatus::Ready { .. })).await;
    assert_eq!(echo(&handle, "back").await, "Echo: back");
    setup.manager.shutdown().await;
}
