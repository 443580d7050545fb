//! What clients see of MCP servers: `mcp/list` (running servers with their pid and tools, and
//! for a cwd the configured ones, untrusted, disabled, with the configuration's problems),
//! `mcp/restart`, `mcpServerStatus` events on `daemon/subscribe` and in the logs of the
//! sessions that use a server, the running count of `daemon/status`, and `agentctl mcp
//! list|restart|logs`. Real servers from `agentd_tests::mcp_servers`.

use std::path::Path;

use agentd_tests::harness::{Client, WAIT, text};
use agentd_tests::mcp_servers::{ServerCommand, everything_stdio};
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use protocol::daemon::DaemonStatusResult;
use protocol::event::Event;
use protocol::mcp::{
    McpListResult, McpServerListing, McpServerSource, McpServerState, McpTransportKind,
};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

/// A TOML basic string (JSON's escapes are TOML's).
fn toml_str(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// `[mcp_servers.<name>]` starting `server`.
fn server_toml(name: &str, server: &ServerCommand) -> String {
    let args: Vec<String> = server.args.iter().map(|arg| toml_str(arg)).collect();
    let mut toml = format!(
        "[mcp_servers.{name}]\ncommand = {}\nargs = [{}]\n",
        toml_str(&server.command),
        args.join(", ")
    );
    if !server.env.is_empty() {
        let env: Vec<String> = server
            .env
            .iter()
            .map(|(key, value)| format!("{key} = {}", toml_str(value)))
            .collect();
        toml.push_str(&format!("env = {{ {} }}\n", env.join(", ")));
    }
    toml
}

/// A stdio server that writes to stderr and exits at once: it never becomes ready.
fn broken_server() -> ServerCommand {
    ServerCommand {
        command: "/bin/sh".to_owned(),
        args: vec![
            "-c".to_owned(),
            "echo 'cannot open the database: boom-7f3a' >&2; exit 3".to_owned(),
        ],
        env: Default::default(),
    }
}

async fn mcp_list(client: &mut Client, cwd: Option<&Path>) -> McpListResult {
    let params = match cwd {
        Some(cwd) => json!({"cwd": cwd.display().to_string()}),
        None => json!({}),
    };
    let result = client.request("mcp/list", params).await.expect("mcp/list");
    serde_json::from_value(result).expect("an mcp/list result")
}

fn named<'a>(list: &'a McpListResult, name: &str) -> &'a McpServerListing {
    list.servers
        .iter()
        .find(|server| server.name == name)
        .unwrap_or_else(|| panic!("no server {name} in {list:#?}"))
}

/// `mcpServerStatus` of `server` with `status` on the daemon stream; returns the event.
async fn wait_daemon_status(client: &mut Client, server: &str, status: McpServerState) -> Event {
    let events = client
        .daemon_events_until(|event| {
            matches!(event, Event::McpServerStatus { server: s, status: st, .. } if s == server && *st == status)
        })
        .await;
    let last = events.last().expect("one event").clone();
    assert_eq!(
        last.session_id, "",
        "daemon-level events belong to no session"
    );
    assert_eq!(last.seq, 0);
    last.event
}

/// Waits until each `(server, status)` was announced on the daemon stream, in any order.
async fn wait_daemon_statuses(client: &mut Client, wanted: &[(&str, McpServerState)]) {
    let mut missing: Vec<(&str, McpServerState)> = wanted.to_vec();
    client
        .daemon_events_until(|event| {
            if let Event::McpServerStatus { server, status, .. } = event {
                missing.retain(|(name, state)| !(name == server && state == status));
            }
            missing.is_empty()
        })
        .await;
}

/// A daemon with `servers` in its config, a client subscribed to the daemon stream, and a
/// session in the workspace that ran a prompt (a run starts the servers of its session).
async fn with_servers(servers: &str) -> (Scenario, Client, String) {
    let scenario = Scenario::start_with(Format::OpenAi, servers).await;
    let mut client = scenario.client().await;
    client
        .request("daemon/subscribe", json!({}))
        .await
        .expect("daemon/subscribe");
    let session = create_session(&mut client, &scenario.workspace()).await;
    scenario.mock.push(Reply::text("hello"));
    client.prompt(&session, "hi").await;
    (scenario, client, session)
}

async fn daemon_status(client: &mut Client) -> DaemonStatusResult {
    let status = client
        .request("daemon/status", json!({}))
        .await
        .expect("daemon/status");
    serde_json::from_value(status).expect("a daemon/status result")
}

#[tokio::test]
async fn a_user_server_is_listed_ready_with_its_pid_and_tools_and_counted() {
    let (_scenario, mut client, _session) =
        with_servers(&server_toml("everything", &everything_stdio())).await;
    let before = wait_daemon_status(&mut client, "everything", McpServerState::Starting).await;
    assert!(matches!(before, Event::McpServerStatus { tools: None, .. }));
    let ready = wait_daemon_status(&mut client, "everything", McpServerState::Ready).await;
    let Event::McpServerStatus { tools, .. } = ready else {
        unreachable!()
    };
    assert!(
        tools.unwrap_or(0) > 0,
        "ready says how many tools: {ready:?}"
    );

    let list = mcp_list(&mut client, None).await;
    let server = named(&list, "everything");
    assert_eq!(server.status, McpServerState::Ready);
    assert_eq!(server.source, McpServerSource::User);
    assert_eq!(server.transport, McpTransportKind::Stdio);
    assert!(
        server
            .file
            .as_deref()
            .unwrap_or("")
            .ends_with("config.toml")
    );
    let pid = server.pid.expect("a running stdio server has a pid");
    assert!(
        Path::new(&format!("/proc/{pid}")).exists(),
        "pid {pid} runs"
    );
    assert!(server.tools.iter().any(|tool| tool == "echo"), "{server:?}");
    assert_eq!(server.restarts, 0);
    assert!(
        server.log_file.is_some(),
        "a stdio server has a log: {server:?}"
    );

    let status = daemon_status(&mut client).await;
    assert_eq!(status.counts.mcp_servers, 1);
}

#[tokio::test]
async fn restarting_a_server_gives_it_a_new_process() {
    let (_scenario, mut client, _session) =
        with_servers(&server_toml("everything", &everything_stdio())).await;
    wait_daemon_status(&mut client, "everything", McpServerState::Ready).await;
    let first = named(&mcp_list(&mut client, None).await, "everything")
        .pid
        .expect("pid");

    let answer = client
        .request("mcp/restart", json!({"name": "everything"}))
        .await
        .expect("mcp/restart");
    assert_eq!(answer, json!({"restarted": true}));
    // Ready events sent before the restart (a tools refresh) may still be queued: the restart
    // begins with `starting`.
    wait_daemon_status(&mut client, "everything", McpServerState::Starting).await;
    wait_daemon_status(&mut client, "everything", McpServerState::Ready).await;
    let list = mcp_list(&mut client, None).await;
    let server = named(&list, "everything");
    let second = server.pid.expect("pid after the restart");
    assert_ne!(first, second, "a restart starts a new process");
    assert_eq!(server.restarts, 0, "mcp/restart resets the restart count");

    let unknown = client
        .request("mcp/restart", json!({"name": "nosuch"}))
        .await
        .expect_err("no such server");
    assert_eq!(unknown.code, i64::from(protocol::error::NOT_FOUND));
    assert!(unknown.message.contains("nosuch"), "{}", unknown.message);
    let relative = client
        .request("mcp/restart", json!({"name": "everything", "cwd": "rel"}))
        .await
        .expect_err("a relative cwd");
    assert_eq!(relative.code, i64::from(protocol::error::INVALID_PARAMS));
}

#[tokio::test]
async fn a_server_that_never_starts_is_failed_with_its_stderr_and_the_session_is_told() {
    let (_scenario, mut client, session) =
        with_servers(&server_toml("broken", &broken_server())).await;
    let failed = wait_daemon_status(&mut client, "broken", McpServerState::Failed).await;
    let Event::McpServerStatus {
        error, stderr_tail, ..
    } = &failed
    else {
        unreachable!()
    };
    assert!(error.is_some(), "{failed:?}");
    assert!(
        stderr_tail.as_deref().unwrap_or("").contains("boom-7f3a"),
        "the stderr tail comes with the failure: {failed:?}"
    );
    let list = mcp_list(&mut client, None).await;
    let server = named(&list, "broken");
    assert_eq!(server.status, McpServerState::Failed);
    assert!(server.last_error.is_some(), "{server:?}");
    assert_eq!(daemon_status(&mut client).await.counts.mcp_servers, 0);

    // The session that uses it has the events in its log (persisted, replayed from seq 0).
    client.subscribe(&session, Some(0)).await;
    let logged = client
        .persisted_events_until(|event| {
            matches!(event, Event::McpServerStatus { server, status: McpServerState::Failed, .. } if server == "broken")
        })
        .await;
    assert!(logged.iter().all(|envelope| envelope.session_id == session));
}

/// A git workspace whose `.mcp.json` has a good server and a broken entry, and a user config
/// with a disabled server.
fn plant_project(root: &Path) {
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let everything = everything_stdio();
    let mcp_json = json!({"mcpServers": {
        "projsrv": {"command": everything.command, "args": everything.args},
        "nocommand": {"args": ["x"]},
    }});
    std::fs::write(root.join(".mcp.json"), mcp_json.to_string()).unwrap();
}

#[tokio::test]
async fn with_a_cwd_the_list_shows_untrusted_disabled_and_configured_servers_and_problems() {
    let mut servers = server_toml("everything", &everything_stdio());
    servers.push_str(&server_toml("off", &everything_stdio()));
    servers.push_str("enabled = false\n");
    let scenario = Scenario::start_with(Format::OpenAi, &servers).await;
    let root = scenario.workspace();
    plant_project(&root);
    let mut client = scenario.client().await;

    let list = mcp_list(&mut client, Some(&root)).await;
    let project = named(&list, "projsrv");
    assert_eq!(project.status, McpServerState::Untrusted);
    assert_eq!(project.source, McpServerSource::Project);
    assert!(project.file.as_deref().unwrap_or("").ends_with(".mcp.json"));
    assert_eq!(project.pid, None);
    assert_eq!(named(&list, "off").status, McpServerState::Disabled);
    assert_eq!(
        named(&list, "everything").status,
        McpServerState::Configured
    );
    let problem = list
        .problems
        .iter()
        .find(|problem| problem.server.as_deref() == Some("nocommand"))
        .unwrap_or_else(|| panic!("the bad entry is a problem: {list:#?}"));
    assert!(problem.file.as_deref().unwrap_or("").ends_with(".mcp.json"));
    assert!(!problem.reason.is_empty());

    // Without a cwd: only what runs (nothing yet).
    assert!(mcp_list(&mut client, None).await.servers.is_empty());
    let relative = client
        .request("mcp/list", json!({"cwd": "work"}))
        .await
        .expect_err("a relative cwd");
    assert_eq!(relative.code, i64::from(protocol::error::INVALID_PARAMS));
}

#[tokio::test]
async fn agentctl_mcp_list_prints_a_table_json_and_problems() {
    let mut servers = server_toml("everything", &everything_stdio());
    servers.push_str(&server_toml("off", &everything_stdio()));
    servers.push_str("enabled = false\n");
    let scenario = Scenario::start_with(Format::OpenAi, &servers).await;
    let env = &scenario.daemon.env;
    plant_project(&env.workspace());

    let table = env.run_agentctl(&["mcp", "list"]).await;
    assert!(table.status.success(), "{}", text(&table.stderr));
    let stdout = text(&table.stdout);
    let header = stdout.lines().next().unwrap_or_default();
    for column in [
        "NAME",
        "SOURCE",
        "TRANSPORT",
        "STATUS",
        "TOOLS",
        "PID",
        "RESTARTS",
        "LAST ERROR",
    ] {
        assert!(header.contains(column), "{column} in {header}");
    }
    let row = |name: &str| -> Vec<String> {
        stdout
            .lines()
            .find(|line| line.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row {name} in\n{stdout}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        row("projsrv")[..4],
        ["projsrv", "project", "stdio", "untrusted"]
    );
    assert_eq!(row("off")[..4], ["off", "user", "stdio", "disabled"]);
    let stderr = text(&table.stderr);
    assert!(
        stderr.contains("problem:") && stderr.contains("nocommand"),
        "{stderr}"
    );
    assert!(stderr.contains("agentctl trust"), "{stderr}");

    let json = env.run_agentctl(&["mcp", "list", "--json"]).await;
    assert!(json.status.success(), "{}", text(&json.stderr));
    let parsed: McpListResult = serde_json::from_slice(&json.stdout).expect("one JSON object");
    assert_eq!(named(&parsed, "projsrv").status, McpServerState::Untrusted);
    assert!(!parsed.problems.is_empty());
}

#[tokio::test]
async fn agentctl_mcp_restart_and_logs() {
    let mut servers = server_toml("everything", &everything_stdio());
    servers.push_str(&server_toml("broken", &broken_server()));
    let (scenario, mut client, _session) = with_servers(&servers).await;
    wait_daemon_statuses(
        &mut client,
        &[
            ("broken", McpServerState::Failed),
            ("everything", McpServerState::Ready),
        ],
    )
    .await;
    let env = &scenario.daemon.env;

    let logs = env.run_agentctl(&["mcp", "logs", "broken"]).await;
    assert!(logs.status.success(), "{}", text(&logs.stderr));
    assert!(
        text(&logs.stdout).contains("boom-7f3a"),
        "{}",
        text(&logs.stdout)
    );

    // -f prints what is there, then follows until Ctrl-C (exit 0).
    let mut follow = env
        .agentctl()
        .args(["mcp", "logs", "broken", "-f"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("agentctl mcp logs -f");
    let mut lines = BufReader::new(follow.stdout.take().expect("stdout")).lines();
    loop {
        let line = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .expect("the log in time")
            .expect("read agentctl's stdout")
            .expect("agentctl still prints");
        if line.contains("boom-7f3a") {
            break;
        }
    }
    let pid = follow.id().expect("agentctl runs") as libc::pid_t;
    // SAFETY: kill(2) on the child we started, still unreaped.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let followed = tokio::time::timeout(WAIT, follow.wait())
        .await
        .expect("agentctl stops at Ctrl-C")
        .expect("agentctl status");
    assert!(followed.success(), "{followed:?}");

    let missing = env.run_agentctl(&["mcp", "logs", "nosuch"]).await;
    assert_eq!(missing.status.code(), Some(1));
    assert!(text(&missing.stderr).contains("no MCP server named nosuch"));

    let first = named(&mcp_list(&mut client, None).await, "everything").pid;
    let restart = env.run_agentctl(&["mcp", "restart", "everything"]).await;
    assert!(restart.status.success(), "{}", text(&restart.stderr));
    assert!(text(&restart.stdout).contains("restarting"));
    wait_daemon_status(&mut client, "everything", McpServerState::Starting).await;
    wait_daemon_status(&mut client, "everything", McpServerState::Ready).await;
    let second = named(&mcp_list(&mut client, None).await, "everything").pid;
    assert_ne!(first, second);

    let unknown = env.run_agentctl(&["mcp", "restart", "nosuch"]).await;
    assert_eq!(unknown.status.code(), Some(1));
    let stderr = text(&unknown.stderr);
    assert!(
        stderr.contains("nosuch") && stderr.contains("agentctl mcp list"),
        "{stderr}"
    );

    let status = env.run_agentctl(&["status"]).await;
    assert!(
        text(&status.stdout).contains("mcp servers  1"),
        "{}",
        text(&status.stdout)
    );
}

#[tokio::test]
async fn a_restart_needs_the_cwd_when_servers_of_that_name_run_for_several_projects() {
    let (scenario, mut client, _session) =
        with_servers(&server_toml("everything", &everything_stdio())).await;
    wait_daemon_status(&mut client, "everything", McpServerState::Ready).await;
    let other = scenario.daemon.env.path("other");
    std::fs::create_dir_all(&other).unwrap();
    let second = create_session(&mut client, &other).await;
    scenario.mock.push(Reply::text("hello"));
    client.prompt(&second, "hi").await;
    let other_root = std::fs::canonicalize(&other).unwrap().display().to_string();
    client
        .daemon_events_until(|event| {
            matches!(event, Event::McpServerStatus { status: McpServerState::Ready, project_root: Some(root), .. } if *root == other_root)
        })
        .await;
    let list = mcp_list(&mut client, None).await;
    assert_eq!(list.servers.len(), 2, "one server per project: {list:#?}");

    let ambiguous = client
        .request("mcp/restart", json!({"name": "everything"}))
        .await
        .expect_err("two projects run it");
    assert_eq!(ambiguous.code, i64::from(protocol::error::INVALID_PARAMS));
    assert!(
        ambiguous.message.contains(&other_root),
        "{}",
        ambiguous.message
    );
    let other_pid = list
        .servers
        .iter()
        .find(|server| server.project_root.as_deref() == Some(other_root.as_str()))
        .and_then(|server| server.pid);
    client
        .request(
            "mcp/restart",
            json!({"name": "everything", "cwd": other.display().to_string()}),
        )
        .await
        .expect("restart the other project's server");
    client
        .daemon_events_until(|event| {
            matches!(event, Event::McpServerStatus { status: McpServerState::Starting, project_root: Some(root), .. } if *root == other_root)
        })
        .await;
    client
        .daemon_events_until(|event| {
            matches!(event, Event::McpServerStatus { status: McpServerState::Ready, project_root: Some(root), .. } if *root == other_root)
        })
        .await;
    let after = mcp_list(&mut client, None).await;
    let restarted = after
        .servers
        .iter()
        .find(|server| server.project_root.as_deref() == Some(other_root.as_str()))
        .and_then(|server| server.pid);
    assert!(restarted.is_some() && restarted != other_pid);
}
