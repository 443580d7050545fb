//! config.toml edited under a running daemon: the watch reloads it (a new deny rule applies to
//! the next run), an invalid edit keeps the old configuration and is reported (daemon/status
//! with line:col, the daemon stream, `agentctl status`), `daemon/reload` and SIGHUP read an
//! edit the watch cannot see, and a changed MCP server restarts with its new arguments (at the
//! session's next run, and at once on `mcp/restart`). Each waits on the reload's event.

use std::path::PathBuf;

use agentd_tests::harness::{Client, text};
use agentd_tests::mcp_servers::{ServerCommand, time_stdio};
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use protocol::daemon::{ConfigFileState, DaemonStatusResult};
use protocol::event::{Event, RunStatus};
use protocol::mcp::{McpListResult, McpServerListing, McpServerState};
use serde_json::json;

/// Where the scenario's daemon reads config.toml.
fn config_path(s: &Scenario) -> PathBuf {
    s.daemon
        .env
        .path("config")
        .join("agentd")
        .join("config.toml")
}

/// Replaces config.toml whole (as editors save: a new file renamed over the old one) with the
/// scenario's provider and `extra`.
fn write_config(s: &Scenario, extra: &str) {
    let path = config_path(s);
    let staged = path.with_extension("toml.new");
    std::fs::write(&staged, config_toml(&s.mock, s.format, extra)).unwrap();
    std::fs::rename(&staged, &path).unwrap();
}

/// Rewrites config.toml in place with `extra` of the same length as before, and gives it back
/// its old modification time: an edit the file watch cannot see (same inode, size and mtime),
/// so only `daemon/reload` or SIGHUP reads it.
fn write_config_unseen(s: &Scenario, extra: &str) {
    let path = config_path(s);
    let before = std::fs::metadata(&path).unwrap();
    let text = config_toml(&s.mock, s.format, extra);
    assert_eq!(text.len() as u64, before.len(), "the same size");
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    std::io::Write::write_all(&mut &file, text.as_bytes()).unwrap();
    file.set_modified(before.modified().unwrap()).unwrap();
}

/// A client following the daemon stream.
async fn daemon_watcher(s: &Scenario) -> Client {
    let mut client = s.client().await;
    client
        .request("daemon/subscribe", json!({}))
        .await
        .expect("daemon/subscribe");
    client
}

/// Waits for the next `configReloaded` (Ok: its trigger) or `configInvalid` (Err: its error).
async fn next_reload(watcher: &mut Client) -> Result<String, String> {
    let events = watcher
        .daemon_events_until(|event| {
            matches!(
                event,
                Event::ConfigReloaded { .. } | Event::ConfigInvalid { .. }
            )
        })
        .await;
    match &events.last().expect("one event").event {
        Event::ConfigReloaded { trigger, .. } => Ok(trigger.clone()),
        Event::ConfigInvalid { error, .. } => Err(error.clone()),
        _ => unreachable!(),
    }
}

async fn status(client: &mut Client) -> DaemonStatusResult {
    let status = client.request("daemon/status", json!({})).await.unwrap();
    serde_json::from_value(status).unwrap()
}

fn shell(id: &str, command: &str) -> Reply {
    Reply::tool_call(id, "run_shell", json!({"command": command}))
}

/// The output and error flag of call `id`.
fn result_of(events: &[Envelope], id: &str) -> (String, bool) {
    tool_results(events)
        .into_iter()
        .find(|(call, _, _)| call == id)
        .map(|(_, output, is_error)| (output, is_error))
        .unwrap_or_else(|| panic!("no result of {id}"))
}

const ALLOW_TOUCH: &str =
    "[permissions]\ndefault_mode = \"default\"\nallow = [\"Bash(touch:*)\"]\n";

#[tokio::test]
async fn a_deny_rule_added_under_a_running_daemon_applies_to_the_next_run() {
    let s = Scenario::start_with(Format::OpenAi, ALLOW_TOUCH).await;
    let mut watcher = daemon_watcher(&s).await;
    let (mut client, session) = s.session().await;
    s.mock.push(shell("c1", "touch before.txt"));
    s.mock.push(Reply::text("done"));
    client.prompt(&session, "touch it").await;
    let events = client.events_until_run_finished().await;
    assert!(!result_of(&events, "c1").1, "allowed before the edit");
    assert!(s.workspace().join("before.txt").exists());

    write_config(
        &s,
        "[permissions]\ndefault_mode = \"default\"\nallow = [\"Bash(touch:*)\"]\ndeny = [\"Bash(touch:*)\"]\n",
    );
    assert_eq!(next_reload(&mut watcher).await, Ok("watch".to_owned()));

    s.mock.push(shell("c2", "touch after.txt"));
    s.mock.push(Reply::text("could not"));
    client.prompt(&session, "touch another").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let (output, is_error) = result_of(&events, "c2");
    assert!(is_error && output.contains("Bash(touch:*)"), "{output}");
    assert!(
        !s.workspace().join("after.txt").exists(),
        "the new deny rule holds"
    );
    assert_eq!(
        status(&mut client).await.config_state,
        Some(ConfigFileState::Current)
    );
}

#[tokio::test]
async fn an_invalid_edit_keeps_the_old_config_and_is_reported_with_its_line_and_column() {
    let s = Scenario::start(Format::OpenAi).await;
    let mut watcher = daemon_watcher(&s).await;
    let (mut client, session) = s.session().await;
    let loaded_at = status(&mut client).await.config_loaded_at;

    write_config(&s, "max_steps = \"many\"\n");
    let error = next_reload(&mut watcher).await.unwrap_err();
    let place = format!("{}:1:13", config_path(&s).display());
    assert!(error.contains(&place), "file:line:col in {error:?}");

    let now = status(&mut client).await;
    assert_eq!(now.config_state, Some(ConfigFileState::Invalid));
    assert!(
        now.config_error.as_deref().unwrap_or("").contains(&place),
        "{now:?}"
    );
    assert!(now.config_loaded, "the previous configuration stays in use");
    assert_eq!(now.config_loaded_at, loaded_at);
    assert_eq!(now.providers.len(), 1);

    // Runs still work, with the old configuration.
    s.mock.push(Reply::text("still here"));
    client.prompt(&session, "hello").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);

    let shown = s.daemon.env.run_agentctl(&["status"]).await;
    let stdout = text(&shown.stdout);
    assert!(
        stdout.contains("invalid: the last valid configuration stays in use"),
        "{stdout}"
    );
    assert!(stdout.contains(&place), "{stdout}");

    write_config(&s, "max_steps = 5\n");
    assert_eq!(next_reload(&mut watcher).await, Ok("watch".to_owned()));
    let fixed = status(&mut client).await;
    assert_eq!(fixed.config_state, Some(ConfigFileState::Current));
    assert_eq!(fixed.config_error, None);
    let shown = text(&s.daemon.env.run_agentctl(&["status"]).await.stdout);
    assert!(shown.contains("(current, loaded "), "{shown}");
}

#[tokio::test]
async fn daemon_reload_and_sighup_read_an_edit_the_watch_cannot_see() {
    let s = Scenario::start_with(Format::OpenAi, "max_steps = 3").await;
    let mut watcher = daemon_watcher(&s).await;
    let mut client = s.client().await;

    let unchanged = client.request("daemon/reload", json!({})).await.unwrap();
    assert_eq!(unchanged["outcome"], "unchanged", "{unchanged}");

    write_config_unseen(&s, "max_steps = 4");
    let reloaded = client.request("daemon/reload", json!({})).await.unwrap();
    assert_eq!(reloaded["outcome"], "reloaded", "{reloaded}");
    assert_eq!(next_reload(&mut watcher).await, Ok("request".to_owned()));

    write_config_unseen(&s, "max_steps = 5");
    s.daemon.signal(libc::SIGHUP);
    assert_eq!(next_reload(&mut watcher).await, Ok("signal".to_owned()));

    write_config_unseen(&s, "max_steps = 0");
    let invalid = client.request("daemon/reload", json!({})).await.unwrap();
    assert_eq!(invalid["outcome"], "invalid", "{invalid}");
    assert!(
        invalid["error"]
            .as_str()
            .unwrap()
            .contains("max_steps must be at least 1"),
        "{invalid}"
    );
    let cli = s.daemon.env.run_agentctl(&["daemon", "reload"]).await;
    assert_eq!(cli.status.code(), Some(1));
    assert!(
        text(&cli.stderr).contains("previous one stays in use"),
        "{}",
        text(&cli.stderr)
    );
    // Each of the two reloads announced it.
    for _ in 0..2 {
        let error = next_reload(&mut watcher).await.unwrap_err();
        assert!(error.contains("max_steps must be at least 1"), "{error}");
    }

    // A setting read only at start is named, and the rest applies.
    write_config(&s, "max_steps = 6\n[memory]\nuser_chars = 100\n");
    let reload = next_reload(&mut watcher).await;
    assert_eq!(reload, Ok("watch".to_owned()));
    let now = status(&mut client).await;
    assert_eq!(now.config_state, Some(ConfigFileState::Changed));
    assert_eq!(now.needs_restart, ["memory"]);
}

/// `[mcp_servers.time]`: mcp-server-time with its local zone `zone`.
fn time_server(zone: &str) -> String {
    let mut server: ServerCommand = time_stdio();
    server
        .args
        .retain(|arg| !arg.starts_with("--local-timezone"));
    server.args.push(format!("--local-timezone={zone}"));
    let args: Vec<String> = server
        .args
        .iter()
        .map(|arg| serde_json::to_string(arg).unwrap())
        .collect();
    format!(
        "[mcp_servers.time]\ncommand = {}\nargs = [{}]\n",
        serde_json::to_string(&server.command).unwrap(),
        args.join(", ")
    )
}

async fn time_servers(client: &mut Client) -> Vec<McpServerListing> {
    let list = client.request("mcp/list", json!({})).await.unwrap();
    let list: McpListResult = serde_json::from_value(list).unwrap();
    list.servers
        .into_iter()
        .filter(|server| server.name == "time")
        .collect()
}

/// Waits for `mcpServerStatus` of `time` with `status` on the daemon stream.
async fn wait_time(watcher: &mut Client, wanted: McpServerState) {
    watcher
        .daemon_events_until(|event| {
            matches!(event, Event::McpServerStatus { server, status, .. } if server == "time" && *status == wanted)
        })
        .await;
}

/// The command line of process `pid`, its arguments joined by spaces.
fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
        .unwrap_or_default()
}

/// The one ready `time` server, with the zone its command line names.
async fn ready_time_server(client: &mut Client, zone: &str) -> u32 {
    let servers = time_servers(client).await;
    assert_eq!(servers.len(), 1, "{servers:#?}");
    let server = &servers[0];
    assert_eq!(server.status, McpServerState::Ready, "{server:#?}");
    assert!(!server.restart_pending, "{server:#?}");
    let pid = server.pid.expect("a pid");
    let line = cmdline(pid);
    assert!(line.contains(&format!("--local-timezone={zone}")), "{line}");
    pid
}

#[tokio::test]
async fn a_changed_mcp_server_restarts_with_its_new_arguments() {
    let s = Scenario::start_with(Format::OpenAi, &time_server("UTC")).await;
    let mut watcher = daemon_watcher(&s).await;
    let (mut client, session) = s.session().await;
    s.mock.push(Reply::text("hello"));
    client.prompt(&session, "hi").await;
    wait_time(&mut watcher, McpServerState::Ready).await;
    client.events_until_run_finished().await;
    let first = ready_time_server(&mut client, "UTC").await;

    // The session holds the server: it restarts once unused, at the session's next run.
    write_config(&s, &time_server("Europe/Paris"));
    assert_eq!(next_reload(&mut watcher).await, Ok("watch".to_owned()));
    let pending = time_servers(&mut client).await;
    assert!(
        pending
            .iter()
            .any(|server| server.restart_pending && server.pid == Some(first)),
        "{pending:#?}"
    );
    s.mock.push(Reply::text("again"));
    client.prompt(&session, "hi again").await;
    wait_time(&mut watcher, McpServerState::Ready).await;
    client.events_until_run_finished().await;
    wait_until("the old server to stop", || process_gone(first as i32)).await;
    let second = ready_time_server(&mut client, "Europe/Paris").await;

    // `mcp restart` takes the definition on disk, even before the watch read it.
    write_config(&s, &time_server("Asia/Tokyo"));
    let restart = s.daemon.env.run_agentctl(&["mcp", "restart", "time"]).await;
    assert_eq!(restart.status.code(), Some(0), "{}", text(&restart.stderr));
    wait_time(&mut watcher, McpServerState::Ready).await;
    wait_until("the Paris server to stop", || process_gone(second as i32)).await;
    ready_time_server(&mut client, "Asia/Tokyo").await;
}
