//! Supervision of MCP servers, driven directly (`agentd_work::mcp::McpManager`) with real servers:
//! a crash mid-call and the restart, a server that never starts, an HTTP server that went away,
//! one process per key, the idle stop, shutdown, and no orphan when the owner is killed.

use std::collections::BTreeMap;
use std::time::Duration;

use agentd_tests::mcp_servers::{self, EverythingHttp, ServerCommand};
use agentd_tests::mcp_setup::*;
use agentd_work::mcp::{McpCallError, McpStatus, McpTransport};
use serde_json::json;
use tokio_util::sync::CancellationToken;

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
    // The crash was said while it restarted; once ready again it is over.
    assert_eq!(info.last_error, None);
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
    let (port, url) = (server.port, server.url());
    let setup = Setup::new();
    let handle = setup.acquire(&config(
        "everything-http",
        McpTransport::Http {
            url: server.url(),
            headers: BTreeMap::new(),
            oauth: Default::default(),
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
    // Refused, or the kept-alive connection closed under the request: said with the URL.
    assert!(reason.contains(&url), "{reason}");
    assert!(reason.contains("check that the server runs"), "{reason}");
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

/// A server whose stderr is flooded (`yes` in its process group, in a tight loop) costs a
/// bounded record: its log holds at most the per-second budget for each second it ran, says
/// how much was dropped, and the server still answers tools.
#[tokio::test]
async fn a_stderr_flood_is_dropped_past_the_budget_and_the_server_still_answers() {
    let setup = Setup::new();
    let everything = mcp_servers::everything_stdio();
    let mut args = vec![
        "-c".to_owned(),
        "yes 'a line of stderr flood' >&2 & exec \"$0\" \"$@\"".to_owned(),
        everything.command,
    ];
    args.extend(everything.args);
    let config = stdio(
        "flooding",
        ServerCommand {
            command: "/bin/sh".into(),
            args,
            env: BTreeMap::new(),
        },
    );
    let started = std::time::Instant::now();
    let handle = setup.acquire(&config);
    ready(&handle).await;
    assert_eq!(
        echo(&handle, "through the flood").await,
        "Echo: through the flood"
    );
    let log_file = setup.manager.servers()[0].log_file.clone().unwrap();
    let mut rotated = log_file.clone().into_os_string();
    rotated.push(".1");
    let read_log = || std::fs::read_to_string(&log_file).unwrap_or_default();
    agentd_tests::scenario::wait_until("the drop notice in the server's log", || {
        read_log().contains("bytes of stderr: over the budget")
    })
    .await;
    let log = read_log();
    let recorded = std::fs::metadata(&log_file).map_or(0, |meta| meta.len())
        + std::fs::metadata(&rotated).map_or(0, |meta| meta.len());
    let seconds = started.elapsed().as_secs() + 2;
    let budget = agentd_work::mcp::log::StderrLimits::default().max_bytes_per_second as u64;
    // The budget per second plus a notice per second.
    assert!(
        recorded <= seconds * (budget + 200),
        "{recorded} bytes recorded in {seconds} s"
    );
    assert!(log.contains("a line of stderr flood\n"), "{log:.2000}");
    let notice = log
        .lines()
        .find(|line| line.starts_with("[agentd: dropped "))
        .unwrap();
    let dropped: u64 = notice["[agentd: dropped ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(dropped > 0, "{notice}");
    assert_eq!(echo(&handle, "still here").await, "Echo: still here");
    setup.manager.shutdown().await;
}
