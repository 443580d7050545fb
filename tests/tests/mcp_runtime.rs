//! The MCP runtime driven directly (`agentd_work::mcp::McpManager`) with real servers: npm
//! server-everything over stdio and streamable HTTP, PyPI mcp-server-time. Start and tools,
//! calls, filters, progress, timeouts and cancel, environment and cwd, `list_changed`.
//! Supervision (crashes, restarts, sharing, idle stop, shutdown, orphans) is `mcp_supervision`.

use std::collections::BTreeMap;
use std::time::Duration;

use agentd_tests::mcp_servers::{self, EverythingHttp};
use agentd_tests::mcp_setup::*;
use agentd_work::mcp::{McpCallError, McpStatus, McpTransport};
use serde_json::json;
use tokio_util::sync::CancellationToken;

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
async fn a_streamable_http_server_works() {
    let server = EverythingHttp::start().await;
    let setup = Setup::new();
    let handle = setup.acquire(&config(
        "everything-http",
        McpTransport::Http {
            url: server.url(),
            headers: BTreeMap::from([("X-Test".to_owned(), "yes".to_owned())]),
            oauth: Default::default(),
        },
    ));
    assert!(ready(&handle).await >= 10);
    assert_eq!(handle.pid(), None);
    assert_eq!(echo(&handle, "over http").await, "Echo: over http");
    // Its log holds its `notifications/message` (it has no stderr of the daemon's).
    let info = &setup.manager.servers()[0];
    assert!(info.log_file.is_some(), "{info:?}");
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
            agentd_policy::process::KEPT_ENV_VARS.contains(&name.as_str())
                || name.starts_with("LC_")
                || name == "CONFIGURED_VAR"
                || name == agentd_policy::process::supervisor::MARKER_VAR,
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

/// rmcp's churn stays in one module: no source file of the workspace but `mcp::connection`'s
/// (`mcp/connection.rs` and its `mcp/connection_*.rs` parts) names it.
#[test]
fn rmcp_is_named_only_in_mcp_connection() {
    fn in_mcp_connection(path: &std::path::Path) -> bool {
        path.parent()
            .is_some_and(|dir| dir.ends_with("crates/work/src/mcp"))
            && path
                .file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name == "connection.rs" || name.starts_with("connection_"))
    }
    fn walk(dir: &std::path::Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|ext| ext == "rs")
                && !in_mcp_connection(&path)
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
    let others = ["agentctl/src", "protocol/src", "tests/src"];
    for crate_dir in agentd_tests::sources::daemon_source_dirs().chain(others) {
        walk(&root.join(crate_dir), &mut found);
    }
    assert!(
        found.is_empty(),
        "rmcp named outside mcp::connection: {found:?}"
    );
}

/// A call past its timeout and a call its caller cancels are both cancelled on the server
/// (`notifications/cancelled`): the scripted server records each cancellation.
#[tokio::test]
async fn timeouts_and_cancels_reach_the_server_as_notifications_cancelled() {
    let setup = Setup::new();
    let record = setup.dir.path().join("cancellations");
    let mut config = stdio("recorder", mcp_servers::cancel_recorder(&record));
    config.tool_timeout = Duration::from_millis(300);
    let handle = setup.acquire(&config);
    ready(&handle).await;
    let timed_out = handle
        .call(
            "wait",
            arguments(json!({"seconds": 30})),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(timed_out, McpCallError::Timeout { .. }),
        "{timed_out:?}"
    );
    recorded_cancellations(&record, 1).await;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let cancelled = handle
        .call("wait", arguments(json!({"seconds": 30})), None, cancel)
        .await
        .unwrap_err();
    assert_eq!(cancelled, McpCallError::Cancelled);
    recorded_cancellations(&record, 2).await;
    setup.manager.shutdown().await;
}

/// Polls the server's record (the outside world) until it holds `count` cancellations.
async fn recorded_cancellations(record: &std::path::Path, count: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let seen = std::fs::read_to_string(record)
            .unwrap_or_default()
            .matches("cancelled")
            .count();
        if seen == count {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server recorded {seen} cancellations, not {count}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
