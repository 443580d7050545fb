//! MCP results and tool lists as the spec means them, with the scripted Python server
//! `results_server.py` (on the real SDK): an image with `structuredContent` reaches the model
//! once, with no base64 as text; a result over the size limit ends with a size error naming
//! it, at once; tools past the caps are left out or cut with a warning; a tool-list change
//! made by a call is offered at the next model call; a server's log message is in
//! `agentctl mcp logs`.

use std::time::Duration;

use agentd_tests::mcp_scenario::*;
use agentd_tests::mcp_servers::results_server;
use agentd_tests::mcp_setup::{self, Setup, arguments, ready};
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use agentd_work::mcp::{McpCallError, McpLimits};
use protocol::event::RunStatus;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The Python server can take longer than the default 5 s to start on a busy machine.
const SLOW_START: &str = "[mcp]\nstartup_grace_secs = 60\n";

fn results(args: &[&str]) -> String {
    format!(
        "{}{SLOW_START}",
        server_toml("results", &results_server(args), "")
    )
}

#[tokio::test]
async fn an_image_only_result_carries_no_base64_text() {
    let s = Scenario::start_with(Format::OpenAi, &results(&[])).await;
    let (mut client, session_id) = s.session().await;
    s.mock
        .push(Reply::tool_call("m", "mcp__results__media", json!({})));
    s.mock.push(Reply::text("A pixel."));
    client.prompt(&session_id, "show the media").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let requests = s.mock.wait_for_requests(2).await;
    let messages = requests[1].json["messages"].as_array().unwrap().clone();
    let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
    let content = tool["content"].to_string();
    assert!(
        !content.contains("iVBORw0KGgo"),
        "the structuredContent copy of the image came as text: {content}"
    );
    // The image itself reaches the model once.
    let sent = serde_json::to_string(&messages).unwrap();
    assert_eq!(sent.matches("iVBORw0KGgo").count(), 1, "{sent}");
}

#[tokio::test]
async fn a_result_over_the_size_limit_ends_with_a_size_error_at_once() {
    let setup = Setup::new();
    let mut config = mcp_setup::stdio("results", results_server(&[]));
    // Far longer than the call takes (about a second): a size error is no timeout.
    config.tool_timeout = Duration::from_secs(60);
    let handle = setup.acquire(&config);
    ready(&handle).await;
    let limit = McpLimits::default().max_result_bytes as u64;
    let error = handle
        .call(
            "big",
            arguments(json!({"megabytes": 50})),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    let McpCallError::TooLarge {
        bytes: Some(bytes),
        limit: said,
        ..
    } = &error
    else {
        panic!("not a size error: {error:?}");
    };
    assert_eq!(*said, limit);
    assert!(*bytes > 50 * 1024 * 1024, "{bytes}");
    let message = error.to_string();
    assert!(
        message.contains(&format!("limit of {limit} bytes")),
        "{message}"
    );
    // The connection is fine: the next call is answered.
    let media = handle
        .call(
            "media",
            arguments(json!({})),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(!media.is_error);
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn tools_past_the_count_cap_are_left_out_with_a_warning() {
    let setup = Setup::with_limits(McpLimits {
        max_tools: 10,
        max_description_chars: 100,
        ..mcp_setup::quick_limits()
    });
    let handle = setup.acquire(&mcp_setup::stdio(
        "results",
        results_server(&["--tools", "5000", "--description-chars", "5000"]),
    ));
    assert_eq!(ready(&handle).await, 10);
    assert!(
        handle.tools().iter().any(|tool| tool.name == "described"),
        "the described tool is among the first ten"
    );
    let warning = handle.warning().expect("a warning");
    assert!(
        warning.contains("offers 5005 tools; only the first 10"),
        "{warning}"
    );
    assert!(
        warning.contains("described (5000 characters) is cut to 100"),
        "{warning}"
    );
    assert_eq!(
        setup.manager.servers()[0].warning.as_deref(),
        Some(warning.as_str())
    );
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn a_long_description_is_cut_before_the_model_sees_it_and_the_run_warns() {
    let s = Scenario::start_with(
        Format::OpenAi,
        &results(&["--description-chars", "2000000"]),
    )
    .await;
    let (mut client, session_id) = s.session().await;
    s.mock.push(Reply::text("Seen."));
    client.prompt(&session_id, "hello").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let warned = warnings(&events);
    assert!(
        warned
            .iter()
            .any(|w| w.contains("described (2000000 characters) is cut to 10000")),
        "{warned:?}"
    );
    let requests = s.mock.wait_for_requests(1).await;
    let (description, _) = openai_tool(&requests[0], "mcp__results__described");
    assert!(
        description.chars().count() <= 10_010,
        "{}",
        description.len()
    );
}

#[tokio::test]
async fn a_tool_list_changed_by_a_call_is_offered_at_the_next_model_call() {
    let s = Scenario::start_with(Format::OpenAi, &results(&[])).await;
    let (mut client, session_id) = s.session().await;
    s.mock
        .push(Reply::tool_call("g", "mcp__results__grow", json!({})));
    s.mock.push(Reply::text("Grown."));
    client.prompt(&session_id, "grow").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let requests = s.mock.wait_for_requests(2).await;
    let before = request_tool_names(Format::OpenAi, &requests[0]);
    assert!(!before.contains(&"mcp__results__grown".to_owned()));
    let after = request_tool_names(Format::OpenAi, &requests[1]);
    assert!(
        after.contains(&"mcp__results__grown".to_owned()),
        "the change made during the batch joins the very next call: {after:?}"
    );
}

#[tokio::test]
async fn a_servers_log_message_is_in_agentctl_mcp_logs() {
    let s = Scenario::start_with(Format::OpenAi, &results(&[])).await;
    let (mut client, session_id) = s.session().await;
    s.mock.push(Reply::tool_call(
        "l",
        "mcp__results__log",
        json!({"message": "hello-from-the-server-51c2"}),
    ));
    s.mock.push(Reply::text("Logged."));
    client.prompt(&session_id, "log").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    // The message was sent before the call's answer; its line is written by the connection's
    // handler, so the log is read until it shows (the outside world, with a deadline).
    agentd_tests::mcp_scenario::wait_for_mcp_log_line(
        &s.daemon.env,
        "results",
        "[warning results] hello-from-the-server-51c2",
    )
    .await;
}

#[tokio::test]
async fn an_http_result_over_the_size_limit_ends_with_a_size_error_at_once() {
    let port = agentd_tests::mcp_servers::free_loopback_port();
    let server = agentd_tests::mcp_servers::EverythingHttp::start_command(
        results_server(&["--http-port", &port.to_string()]),
        port,
    )
    .await;
    let setup = Setup::new();
    let mut config = mcp_setup::config(
        "results-http",
        agentd_work::mcp::McpTransport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: Default::default(),
            oauth: Default::default(),
        },
    );
    config.tool_timeout = Duration::from_secs(60);
    let handle = setup.acquire(&config);
    ready(&handle).await;
    let limit = McpLimits::default().max_result_bytes as u64;
    let error = handle
        .call(
            "big",
            arguments(json!({"megabytes": 20})),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&error, McpCallError::TooLarge { limit: said, .. } if *said == limit),
        "not a size error: {error:?}"
    );
    assert!(
        error
            .to_string()
            .contains(&format!("limit of {limit} bytes")),
        "{error}"
    );
    // The connection is fine: the next call is answered.
    let media = handle
        .call(
            "media",
            arguments(json!({})),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(!media.is_error);
    setup.manager.shutdown().await;
    drop(server);
}
