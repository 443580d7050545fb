//! Streamable HTTP servers that go away and come back, with npm server-everything over HTTP
//! and `McpManager` driven directly (a short backoff so the test is quick; the default
//! schedule spans minutes, see `McpLimits`): retried past the old five attempts and `ready`
//! again without `mcp/restart`, the last error cleared once ready; a `failed` one tried once
//! more when a session needs it; its error said in words (the URL, what to check), without
//! Rust type names.

use std::collections::BTreeMap;
use std::time::Duration;

use agentd_tests::mcp_servers::{self, EverythingHttp};
use agentd_tests::mcp_setup::*;
use agentd_work::mcp::{McpLimits, McpStatus, McpTransport};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn http(url: String) -> agentd_work::mcp::McpServerConfig {
    let mut config = config(
        "remote",
        McpTransport::Http {
            url,
            headers: BTreeMap::new(),
            oauth: Default::default(),
        },
    );
    config.startup_timeout = Duration::from_secs(10);
    config
}

/// A quick schedule with many attempts: a server down for a while is retried all along.
fn patient() -> McpLimits {
    McpLimits {
        http_max_restart_attempts: 10_000,
        restart_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(100),
        ..quick_limits()
    }
}

/// What a test checks an error text for: words a user can act on, no Rust types.
fn assert_in_words(error: &str, url: &str) {
    assert!(error.contains(url), "names the URL: {error}");
    assert!(
        !error.contains("::") && !error.contains("rmcp") && !error.contains("Transport ["),
        "no type names: {error}"
    );
}

#[tokio::test]
async fn an_http_server_that_went_away_and_came_back_is_ready_again_without_a_restart() {
    let server = EverythingHttp::start().await;
    let (port, url) = (server.port, server.url());
    let setup = Setup::with_limits(patient());
    let handle = setup.acquire(&http(url.clone()));
    ready(&handle).await;

    drop(server);
    // A call finds it gone (connection refused): the supervisor reconnects.
    let lost = handle
        .call(
            "echo",
            arguments(json!({"message": "anyone?"})),
            None,
            CancellationToken::new(),
        )
        .await;
    assert!(lost.is_err(), "{lost:?}");
    // Past the five attempts after which it used to be `failed` for good.
    let restarting = status_until(
        &handle,
        |status| matches!(status, McpStatus::Restarting { attempt, .. } if *attempt > 6),
    )
    .await;
    let McpStatus::Restarting { error, .. } = restarting else {
        unreachable!()
    };
    assert_in_words(&error, &url);
    let listed = setup.manager.servers()[0].last_error.clone();
    assert!(
        listed.is_some(),
        "the last error is listed while it is down"
    );

    let _back = EverythingHttp::start_on(port).await;
    status_until(&handle, |status| matches!(status, McpStatus::Ready { .. })).await;
    assert_eq!(echo(&handle, "back").await, "Echo: back");
    let info = &setup.manager.servers()[0];
    assert_eq!(info.last_error, None, "cleared once ready: {info:?}");
    assert!(info.restarts > 6, "{info:?}");
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn a_failed_http_server_is_tried_once_more_when_a_session_needs_it() {
    let port = mcp_servers::free_loopback_port();
    let url = mcp_servers::everything_http_url(port);
    let setup = Setup::with_limits(McpLimits {
        http_max_restart_attempts: 1,
        ..patient()
    });
    let config = http(url.clone());
    let first = setup.acquire(&config);
    let failed = status_until(&first, |status| matches!(status, McpStatus::Failed { .. })).await;
    let McpStatus::Failed { error, .. } = failed else {
        unreachable!()
    };
    assert_in_words(&error, &url);
    assert!(error.contains("cannot connect"), "{error}");
    assert!(error.contains("check that the server runs"), "{error}");

    let _server = EverythingHttp::start_on(port).await;
    // Nothing retries a failed server by itself; a session that needs it does.
    let second = setup.acquire(&config);
    status_until(&second, |status| matches!(status, McpStatus::Ready { .. })).await;
    assert_eq!(echo(&second, "again").await, "Echo: again");
    drop(first);
    setup.manager.shutdown().await;
}

/// A URL that is not an MCP endpoint: the error names it and the status, and says what to
/// check.
#[tokio::test]
async fn an_http_error_status_is_said_in_words() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/not-mcp", listener.local_addr().unwrap());
    let answering = tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let mut request = vec![0u8; 16 * 1024];
            let _ = stream.read(&mut request).await;
            let _ = stream
                .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\nconnection: close\r\n\r\nnot found")
                .await;
        }
    });
    let setup = Setup::with_limits(McpLimits {
        http_max_restart_attempts: 0,
        ..patient()
    });
    let handle = setup.acquire(&http(url.clone()));
    let failed = status_until(&handle, |status| matches!(status, McpStatus::Failed { .. })).await;
    let McpStatus::Failed { error, .. } = failed else {
        unreachable!()
    };
    assert_in_words(&error, &url);
    assert!(error.contains("404"), "{error}");
    assert!(
        error.contains("check that the URL is the server's MCP endpoint"),
        "{error}"
    );
    setup.manager.shutdown().await;
    answering.abort();
}
