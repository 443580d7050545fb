//! The connection loop against an in-memory client that reads nothing: how many answers the
//! daemon builds is bounded by the in-flight cap and the outbound byte budget. Everything runs
//! on the test's one thread with no real I/O, so yielding long enough lets every task run
//! until it blocks (more yields only make the bound stricter).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use jsonrpsee::RpcModule;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
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
        ConnectionRegistry::new(usize::MAX),
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

#[tokio::test]
async fn line_long_answers_are_built_a_few_at_a_time_for_a_client_that_reads_nothing() {
    // `answer` is heavy: at most 2 of them run from their start until their answer is
    // queued, whatever the in-flight cap; answers of 1 MiB against a 4 MiB outbound budget.
    let limits = ServerLimits {
        max_in_flight_per_connection: 64,
        outbound_queue: 1024,
        outbound_bytes: 4 * 1024 * 1024,
        max_line_bytes: 2 * 1024 * 1024,
        heavy_answer_methods: &["answer"],
        heavy_answers_per_connection: 2,
        ..ServerLimits::default()
    };
    let built = answers_built(limits, 1024 * 1024, 400).await;
    // 2 waiting for room, 3 within the 4 MiB budget, one being written.
    assert!(
        built <= 2 + 4 + 1,
        "built {built} answers of 1 MiB for a client that reads nothing"
    );
}

#[tokio::test]
async fn a_batch_stops_running_once_its_answer_cannot_fit_in_a_line() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (client, server) = tokio::io::duplex(64 * 1024);
    let limits = ServerLimits {
        max_line_bytes: 2 * 1024 * 1024,
        ..ServerLimits::default()
    };
    let connection = tokio::spawn(serve_connection(
        server,
        1,
        methods(calls.clone(), 1024 * 1024),
        limits,
        Arc::new(Semaphore::new(64 * 1024 * 1024)),
        ConnectionRegistry::new(usize::MAX),
        CancellationToken::new(),
    ));
    let (read_half, mut write_half) = tokio::io::split(client);
    let mut batch = String::from("[");
    for id in 1..=100 {
        if id > 1 {
            batch.push(',');
        }
        batch.push_str(&format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"answer\"}}"
        ));
    }
    batch.push_str("]\n");
    let payload = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{{}}}}\n{batch}"
    );
    write_half.write_all(payload.as_bytes()).await.unwrap();
    let mut lines = tokio::io::BufReader::new(read_half).lines();
    let _initialized = lines.next_line().await.unwrap().unwrap();
    let answer = lines.next_line().await.unwrap().unwrap();
    assert!(
        answer.contains(&codes::RESPONSE_TOO_BIG.to_string()) && answer.contains("not run"),
        "{answer}"
    );
    // Two answers of just over 1 MiB each pass 2 MiB: the other 98 requests never ran.
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    connection.abort();
}

/// Two clients pipeline 1 MiB answers and read none, each within its own 4 MiB budget but
/// together past the daemon's 6 MiB: the one holding the most is closed, the other stays, and
/// a third client that reads is answered.
#[tokio::test]
async fn past_the_daemon_wide_outbound_cap_the_biggest_holder_is_closed() {
    const MIB: usize = 1024 * 1024;
    let limits = ServerLimits {
        max_in_flight_per_connection: 8,
        outbound_bytes: 4 * MIB,
        max_line_bytes: 2 * MIB,
        ..ServerLimits::default()
    };
    let registry = ConnectionRegistry::new(6 * MIB);
    let calls = Arc::new(AtomicUsize::new(0));
    let serve = |id: u64, server: tokio::io::DuplexStream| {
        tokio::spawn(serve_connection(
            server,
            id,
            methods(calls.clone(), MIB),
            limits.clone(),
            Arc::new(Semaphore::new(64 * MIB)),
            registry.clone(),
            CancellationToken::new(),
        ))
    };
    let initialize = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{}}\n";
    let mut hogs = Vec::new();
    for id in 1..=2 {
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let connection = serve(id, server);
        let mut payload = String::from(initialize);
        for request in 1..=100 {
            payload.push_str(&format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{request},\"method\":\"answer\"}}\n"
            ));
        }
        let writer = tokio::spawn(async move {
            let _ = client.write_all(payload.as_bytes()).await;
            client
        });
        run_until_idle().await;
        hogs.push((connection, writer));
    }
    let closed: Vec<bool> = hogs
        .iter()
        .map(|(connection, _)| connection.is_finished())
        .collect();
    assert_eq!(
        closed.iter().filter(|closed| **closed).count(),
        1,
        "exactly one hog is closed: {closed:?}"
    );
    assert!(registry.outbound_total() <= 6 * MIB);

    let (client, server) = tokio::io::duplex(64 * 1024);
    let reader_connection = serve(3, server);
    let (read_half, mut write_half) = tokio::io::split(client);
    write_half
        .write_all(
            format!("{initialize}{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"answer\"}}\n")
                .as_bytes(),
        )
        .await
        .unwrap();
    let mut lines = tokio::io::BufReader::new(read_half).lines();
    let _initialized = lines.next_line().await.unwrap().unwrap();
    let answer = lines.next_line().await.unwrap().unwrap();
    assert!(answer.contains("\"result\":\"xxx"), "{}", &answer[..200]);
    reader_connection.abort();
    for (connection, writer) in hogs {
        connection.abort();
        writer.abort();
    }
}
