//! The server holds against hostile clients (issue 19, item 6): an error never echoes more than
//! 200 characters of a client's value, queued answers have a daemon-wide cap, and idle
//! initialised connections cannot lock everyone out.

use std::time::Duration;

use agentd_tests::harness::{Daemon, mib, raise_open_file_limit, text};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

const MIB: u64 = 1024 * 1024;

/// How long the burst of big lines may take in all: hundreds of MiB of JSON, parsed by a
/// debug build on a shared machine.
const BURST_WAIT: Duration = Duration::from_secs(240);

/// One request line of `method` whose client value (`big`) is put where `place` says.
fn hostile_line(id: u64, place: usize, big: &str) -> String {
    let (method, params) = match place % 9 {
        0 => ("session/get", json!({"sessionId": big})),
        1 => ("task/get", json!({"taskId": big})),
        2 => (
            "approval/respond",
            json!({"approvalId": big, "decision": "allowOnce"}),
        ),
        3 => (
            "approval/respond",
            json!({"approvalId": "apr_1", "decision": big}),
        ),
        4 => ("session/list", json!({"cursor": big})),
        5 => ("memory/get", json!({"cwd": big})),
        6 => ("mcp/restart", json!({"name": big})),
        7 => ("project/trust", json!({"path": big})),
        _ => (big, json!({})),
    };
    let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    format!("{line}\n")
}

/// Item 6: 10 connections each send 3 requests carrying a 15 MiB invalid value (ids, a
/// cursor, a path, a name, an enum value, a method name), reading nothing until all are sent.
/// Every answer is a small error that quotes at most 200 characters of the value, and the
/// daemon's peak memory stays bounded (echoed whole, the answers alone were 450 MiB).
#[tokio::test]
async fn a_15_mib_invalid_value_is_never_echoed_back_whole() {
    const CONNECTIONS: usize = 10;
    let daemon = Daemon::start().await;
    let before = daemon.memory();
    // Escaped nowhere in JSON, and never a valid id.
    let big: std::sync::Arc<String> = std::sync::Arc::new("Z".repeat(15 * 1024 * 1024));
    let deadline = tokio::time::Instant::now() + BURST_WAIT;
    let mut connections = Vec::new();
    for connection in 0..CONNECTIONS {
        let (read, write) = daemon.initialized_stream("hostile").await;
        let big = big.clone();
        connections.push(tokio::spawn(async move {
            let mut read = read;
            let mut write = write;
            for request in 0..3 {
                let place = connection * 3 + request;
                let line = hostile_line(request as u64 + 1, place, &big);
                write.write_all(line.as_bytes()).await.expect("write");
            }
            drop(big);
            let mut answers = Vec::new();
            for _ in 0..3 {
                let mut line = String::new();
                let read_bytes = tokio::time::timeout_at(deadline, read.read_line(&mut line))
                    .await
                    .unwrap_or_else(|_| panic!("connection {connection}: no answer in time"))
                    .expect("read an answer");
                assert!(read_bytes > 0, "connection {connection}: closed by agentd");
                answers.push(line);
            }
            answers
        }));
    }
    drop(big);
    for connection in connections {
        for line in connection.await.expect("connection task") {
            assert!(
                line.len() < 1024,
                "an answer of {} bytes: {}…",
                line.len(),
                &line[..300.min(line.len())]
            );
            let answer: Value = serde_json::from_str(&line).expect("a JSON answer");
            let message = answer["error"]["message"]
                .as_str()
                .unwrap_or_else(|| panic!("not an error: {answer}"));
            let longest_run = message.split(|c| c != 'Z').map(str::len).max().unwrap_or(0);
            assert!(
                longest_run <= protocol::error::MAX_ECHOED_CHARS,
                "{longest_run} characters of the value echoed: {message}"
            );
            assert!(longest_run > 0, "the value is not quoted at all: {message}");
        }
    }
    let after = daemon.memory();
    let peak_growth = after.peak.saturating_sub(before.resident);
    println!(
        "{CONNECTIONS} x 3 x 15 MiB invalid values: daemon RSS before {:.1} MiB, peak {:.1} MiB (+{:.1})",
        mib(before.resident),
        mib(after.peak),
        mib(peak_growth)
    );
    assert!(
        after.peak < 300 * MIB,
        "the daemon's peak reached {:.1} MiB",
        mib(after.peak)
    );
    let mut client = daemon.client().await;
    client
        .request("daemon/status", json!({}))
        .await
        .expect("daemon/status after the burst");
}

/// Item 6: 512 silent initialised connections (the limit) no longer lock everyone out. A new
/// connection evicts the longest idle one that has no subscription and no request in flight
/// (it is told why, then closed) and is served; a subscribed connection, idle for longer
/// still, is kept.
#[tokio::test]
async fn a_full_daemon_evicts_the_longest_idle_connection_but_not_a_subscribed_one() {
    raise_open_file_limit();
    let daemon = Daemon::start().await;
    let limit = agentd::server::ServerLimits::default().max_connections;
    let mut subscribed = daemon.client().await;
    subscribed
        .request("daemon/subscribe", json!({}))
        .await
        .expect("daemon/subscribe");
    let mut idle = Vec::new();
    for _ in 1..limit {
        idle.push(daemon.client().await);
    }

    let mut newcomer = daemon.client().await;
    newcomer
        .request("daemon/status", json!({}))
        .await
        .expect("a new client is served when the daemon is full");
    let evicted = &mut idle[0];
    let notice = evicted.read_message().await;
    assert_eq!(
        notice["error"]["code"],
        protocol::error::OVERLOADED,
        "{notice}"
    );
    let message = notice["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("longest idle"), "{notice}");
    evicted.wait_closed_by_daemon().await;
    subscribed
        .request("daemon/status", json!({}))
        .await
        .expect("the subscribed connection is kept");
    // agentctl too gets a slot (the next idle connection's).
    let output = daemon.env.run_agentctl(&["--json", "status"]).await;
    assert!(
        output.status.success(),
        "agentctl status failed on a full daemon: {}",
        text(&output.stderr)
    );
    // The next idlest made room.
    idle[1].wait_closed_by_daemon().await;
}
