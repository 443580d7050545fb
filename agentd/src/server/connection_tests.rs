//! The connection loop against an in-memory client that reads nothing: how many answers the
//! daemon builds is bounded by the in-flight cap and the outbound byte budget. Everything runs
//! on the test's one thread with no real I/O, so yielding long enough lets every task run
//! until it blocks (more yields only make the bound stricter).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use jsonrpsee::RpcModule;
use tokio::io::AsyncWriteExt;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::*;

/// A method table with `initialize` (marks the connection) and `answer`, which counts its
/// calls and answers `answer_bytes` of text.
fn methods(calls: Arc<AtomicUsize>, answer_bytes: usize) -> Methods {
    let mut module = RpcModule::new(calls);
    module
        .register_method("initialize", |_, _, extensions| {
            if let Some(connection) = extensions.get::<Arc<ConnectionContext>>() {
                connection.initialized.store(true, Ordering::Release);
            }
            "ok"
        })
        .unwrap();
    module
        .register_method("answer", move |_, calls, _| {
            calls.fetch_add(1, Ordering::SeqCst);
            "x".repeat(answer_bytes)
        })
        .unwrap();
    module.into()
}

/// Pipeline `requests` calls of `answer` on a connection whose client never reads; the number
/// of answers the daemon built once everything is idle.
async fn answers_built(limits: ServerLimits, answer_bytes: usize, requests: usize) -> usize {
    let calls = Arc::new(AtomicUsize::new(0));
    let (mut client, server) = tokio::io::duplex(64 * 1024);
    let shutdown = CancellationToken::new();
    let connection = tokio::spawn(serve_connection(
        server,
        1,
        methods(calls.clone(), answer_bytes),
        limits,
        Arc::new(Semaphore::new(64 * 1024 * 1024)),
        shutdown.clone(),
    ));
    let mut payload =
        String::from("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{}}\n");
    for id in 1..=requests {
        payload.push_str(&format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"answer\"}}\n"
        ));
    }
    let writer = tokio::spawn(async move {
        let _ = client.write_all(payload.as_bytes()).await;
        client
    });
    run_until_idle().await;
    let built = calls.load(Ordering::SeqCst);
    shutdown.cancel();
    writer.abort();
    connection.abort();
    built
}

/// Let every task of this current-thread runtime run until it blocks: each yield gives every
/// ready task a turn, and the work here takes a few hundred turns at most.
async fn run_until_idle() {
    for _ in 0..10_000 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn small_answers_stop_at_the_in_flight_cap_and_the_queue() {
    let limits = ServerLimits {
        max_in_flight_per_connection: 8,
        outbound_queue: 16,
        ..ServerLimits::default()
    };
    let built = answers_built(limits, 1024, 2000).await;
    // 16 queued, 8 waiting in flight, and what the 64 KiB pipe and the writer's buffer took.
    assert!(
        built <= 8 + 16 + 80,
        "built {built} answers for a client that reads nothing"
    );
}

#[tokio::test]
async fn big_answers_stop_at_the_outbound_byte_budget() {
    let limits = ServerLimits {
        max_in_flight_per_connection: 8,
        outbound_queue: 1024,
        outbound_bytes: 4 * 1024 * 1024,
        max_line_bytes: 2 * 1024 * 1024,
        ..ServerLimits::default()
    };
    let built = answers_built(limits, 1024 * 1024, 400).await;
    // 8 waiting in flight, 3 within the 4 MiB budget, one being written.
    assert!(
        built <= 8 + 4 + 1,
        "built {built} answers of 1 MiB for a client that reads nothing"
    );
}
