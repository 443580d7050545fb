//! Connections cannot grow the daemon or lock others out: unread pipelined requests, big lines
//! on many connections, idle connections, a runaway model reply (issue 7, items 7–10).

use std::time::{Duration, Instant};

use agentd_tests::harness::{Client, Daemon, TestEnv, mib, raise_open_file_limit, text};
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::Scenario;
use protocol::event::{Event, MessageRole, RunStatus};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

const MIB: u64 = 1024 * 1024;

/// A flooding writer that makes no progress for this long is blocked by the daemon.
const FLOOD_STALL: Duration = Duration::from_secs(1);

/// How long the burst of big lines may take in all: 360 MiB of JSON, parsed by a debug build
/// on a shared machine.
const BURST_WAIT: Duration = Duration::from_secs(180);

/// Item 7: a client pipelines 200,000 requests and reads no answer. The daemon stops reading
/// it (its in-flight cap), so its memory stays flat and other clients are served at once.
#[tokio::test]
async fn unread_pipelined_requests_neither_grow_the_daemon_nor_slow_other_clients() {
    let daemon = Daemon::start().await;
    let mut other = daemon.client().await;
    let before = daemon.memory();

    let (unread, mut write) = daemon.initialized_stream("flood").await;
    let mut payload: Vec<u8> = Vec::new();
    for id in 1..=200_000u64 {
        payload.extend_from_slice(
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"session/list\",\"params\":{{}}}}\n"
            )
            .as_bytes(),
        );
    }
    let total = payload.len();
    let (progress_tx, mut progress) = tokio::sync::watch::channel(0usize);
    let flood = tokio::spawn(async move {
        let mut written = 0;
        for chunk in payload.chunks(64 * 1024) {
            if write.write_all(chunk).await.is_err() {
                break;
            }
            written += chunk.len();
            progress_tx.send_replace(written);
        }
        write
    });
    // A daemon that reads everything lets the flood finish; one that stops reading leaves it
    // blocked on a full socket (no progress for a while). Either way, measure after this.
    let stalled = loop {
        match tokio::time::timeout(FLOOD_STALL, progress.changed()).await {
            Ok(Ok(())) => continue,
            Ok(Err(_)) => break false,
            Err(_) => break true,
        }
    };
    let written = *progress.borrow();

    let mut slowest = Duration::ZERO;
    for _ in 0..20 {
        let started = Instant::now();
        other
            .request("daemon/status", json!({}))
            .await
            .expect("daemon/status of another client");
        slowest = slowest.max(started.elapsed());
    }
    let after = daemon.memory();
    let growth = after.resident.saturating_sub(before.resident);
    println!(
        "unread flood: {written} of {} bytes written before the daemon stopped reading (stalled: {stalled}); daemon RSS {:.1} MiB -> {:.1} MiB (+{:.1} MiB); slowest other daemon/status {:?}",
        total,
        mib(before.resident),
        mib(after.resident),
        mib(growth),
        slowest
    );
    assert!(
        growth < 16 * MIB,
        "the daemon grew by {:.1} MiB for a client that reads nothing",
        mib(growth)
    );
    assert!(
        slowest < Duration::from_secs(2),
        "another client's daemon/status took {slowest:?}"
    );
    drop(unread);
    flood.abort();
    // The daemon still serves after the flooding client is gone.
    other
        .request("daemon/status", json!({}))
        .await
        .expect("daemon/status after the flood");
}

/// Item 8: 8 connections each send 3 lines of 15 MiB at once. Big lines share one memory
/// budget, so the daemon's peak stays far below 8 × 3 × 15 MiB, and it gives the memory
/// back afterwards.
#[tokio::test]
async fn big_lines_on_many_connections_share_a_memory_budget_and_memory_is_given_back() {
    let daemon = Daemon::start().await;
    let before = daemon.memory();
    let pad = "x".repeat(15 * 1024 * 1024 - 200);
    let lines: std::sync::Arc<Vec<String>> = std::sync::Arc::new(
        (1..=3)
            .map(|id| {
                format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"daemon/status\",\"params\":{{\"pad\":\"{pad}\"}}}}\n"
                )
            })
            .collect(),
    );
    drop(pad);
    let deadline = tokio::time::Instant::now() + BURST_WAIT;
    let mut connections = Vec::new();
    for connection in 0..8 {
        let (read, write) = daemon.initialized_stream("flood").await;
        let lines = lines.clone();
        connections.push(tokio::spawn(async move {
            let mut read = read;
            let mut write = write;
            let writer = tokio::spawn(async move {
                for line in lines.iter() {
                    write
                        .write_all(line.as_bytes())
                        .await
                        .expect("write a big line");
                }
                write
            });
            let mut answers = Vec::new();
            for _ in 0..3 {
                let mut line = String::new();
                let read_bytes = tokio::time::timeout_at(deadline, read.read_line(&mut line))
                    .await
                    .unwrap_or_else(|_| panic!("connection {connection}: no answer in time"))
                    .expect("read an answer");
                assert!(read_bytes > 0, "connection {connection}: closed by agentd");
                answers
                    .push(serde_json::from_str::<serde_json::Value>(&line).expect("JSON answer"));
            }
            let _write = writer.await.expect("writer");
            answers
        }));
    }
    for connection in connections {
        let answers = connection.await.expect("connection task");
        for answer in answers {
            assert!(
                answer.get("result").is_some() || answer.get("error").is_some(),
                "not an answer: {answer}"
            );
        }
    }
    let after = daemon.memory();
    let peak_growth = after.peak.saturating_sub(before.resident);
    let kept = after.resident.saturating_sub(before.resident);
    println!(
        "8 x 3 x 15 MiB lines: daemon RSS before {:.1} MiB, peak {:.1} MiB (+{:.1}), after {:.1} MiB (+{:.1})",
        mib(before.resident),
        mib(after.peak),
        mib(peak_growth),
        mib(after.resident),
        mib(kept)
    );
    assert!(
        peak_growth < 150 * MIB,
        "the daemon's peak grew by {:.1} MiB for 360 MiB of lines",
        mib(peak_growth)
    );
    assert!(
        kept < 64 * MIB,
        "the daemon kept {:.1} MiB after the burst",
        mib(kept)
    );
    let mut client = daemon.client().await;
    client
        .request("daemon/status", json!({}))
        .await
        .expect("daemon/status after the burst");
}

/// Item 9: when every connection slot is taken by a connection that cannot be evicted (each
/// has a subscription), agentctl says agentd is busy (it is running; starting it would not
/// help).
#[tokio::test]
async fn agentctl_says_busy_when_the_connection_limit_is_reached() {
    raise_open_file_limit();
    let daemon = Daemon::start().await;
    let mut held = Vec::new();
    for _ in 0..512 {
        let mut client = daemon.client().await;
        client
            .request("daemon/subscribe", json!({}))
            .await
            .expect("daemon/subscribe");
        held.push(client);
    }
    let output = daemon.env.run_agentctl(&["status"]).await;
    let stderr = text(&output.stderr);
    assert!(
        !output.status.success(),
        "agentctl status succeeded: {stderr}"
    );
    assert!(stderr.contains("agentd is busy"), "stderr: {stderr}");
    assert!(
        !stderr.contains("start it with"),
        "agentctl told the user to start a running daemon: {stderr}"
    );
    drop(held);
}

/// Item 9: connections that never `initialize` are closed after the deadline, so 512 idle
/// connections cannot lock everyone out.
#[tokio::test]
async fn connections_that_never_initialize_are_closed_and_agentctl_is_served() {
    raise_open_file_limit();
    let env = TestEnv::new().var(agentd::server::INITIALIZE_DEADLINE_ENV, "500");
    let daemon = Daemon::start_in(env).await;
    let mut idle = Vec::new();
    for _ in 0..512 {
        idle.push(Client::connect_raw(daemon.socket()).await.expect("connect"));
    }
    for client in &mut idle {
        client.wait_closed_by_daemon().await;
    }
    let output = daemon.env.run_agentctl(&["--json", "status"]).await;
    assert!(
        output.status.success(),
        "agentctl status failed after the idle connections were closed: {}",
        text(&output.stderr)
    );
}

/// Item 10: a 50 MB model reply is cut (head and tail kept, the cut said) before it is stored
/// or sent; every line stays under the limit, and `session/get` with history, a replaying
/// subscription, `agentctl attach` and `agentctl sessions show` all work.
///
/// On two worker threads: the mock LLM serves from this test's runtime, and decoding 50 MB of
/// deltas on a one-thread runtime would starve it past the daemon's stream idle timeout on a
/// loaded machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_50_mb_model_reply_is_capped_and_the_session_stays_readable() {
    let scenario = Scenario::start(Format::OpenAi).await;
    // 50 words of 1 MiB: the mock streams each as one delta.
    let mut reply = String::from("HEAD ");
    let word = "w".repeat(1024 * 1024 - 1);
    for _ in 0..50 {
        reply.push_str(&word);
        reply.push(' ');
    }
    reply.push_str("TAIL");
    scenario.mock.push(Reply::text(reply));

    let (mut client, session_id) = scenario.session().await;
    client.prompt(&session_id, "say a lot").await;
    let events = client.events_until_run_finished().await;
    let content = events
        .iter()
        .find_map(|e| match &e.event {
            Event::MessageCompleted {
                role: MessageRole::Assistant,
                content,
                ..
            } => Some(content.clone()),
            _ => None,
        })
        .unwrap_or_else(|| {
            let ended = events.last().map(|e| &e.event);
            let errors: Vec<&str> = events
                .iter()
                .filter_map(|e| match &e.event {
                    Event::Error { message, .. } => Some(message.as_str()),
                    _ => None,
                })
                .collect();
            panic!(
                "no assistant messageCompleted; events: {:?}; errors: {errors:?}; ended with {ended:?}",
                agentd_tests::scenario::kinds(&events)
                    .into_iter()
                    .filter(|kind| kind != "messageDelta")
                    .collect::<Vec<_>>()
            )
        });
    assert!(content.starts_with("HEAD "), "the head was kept");
    assert!(content.ends_with("TAIL"), "the tail was kept");
    assert!(content.contains("chars omitted"), "the cut is said");
    assert!(
        content.len() < 8 * 1024 * 1024,
        "content of {} bytes",
        content.len()
    );
    assert!(matches!(
        events.last().map(|e| &e.event),
        Some(Event::RunFinished {
            status: RunStatus::Completed,
            ..
        })
    ));

    let mut reader = scenario.client().await;
    let got = reader
        .request(
            "session/get",
            json!({"sessionId": session_id, "includeHistory": true}),
        )
        .await
        .expect("session/get with history");
    let history = got["history"].as_array().expect("history");
    let stored = history
        .iter()
        .find(|m| m["role"] == "assistant")
        .and_then(|m| m["content"].as_str())
        .expect("the assistant message in the history");
    assert!(
        stored == content,
        "the history ({} bytes) differs from the event ({} bytes)",
        stored.len(),
        content.len()
    );

    reader.subscribe(&session_id, Some(0)).await;
    let last = events.last().expect("events").seq;
    let replayed = reader.events_through_seq(last).await;
    assert_eq!(replayed.len(), events.len());

    for args in [
        vec!["attach", session_id.as_str()],
        vec!["sessions", "show", session_id.as_str()],
    ] {
        let output = scenario.daemon.env.run_agentctl(&args).await;
        assert!(
            output.status.success(),
            "agentctl {args:?} failed: {}",
            text(&output.stderr)
        );
    }
}

/// Item 10: an answer over the line limit gets its own code, not -32008 ("already decided"),
/// and a message that says what to do.
#[tokio::test]
async fn an_answer_over_the_line_limit_is_response_too_big() {
    let scenario = Scenario::start(Format::OpenAi).await;
    let (mut client, session_id) = scenario.session().await;
    // Three prompts of the longest text a message may hold, of a char that JSON escapes to 6
    // bytes (`\u0001`): the history passes 16 MiB while each line stays under it.
    let prompt = "\u{1}".repeat(agentd_core::conversation::MAX_MESSAGE_CHARS);
    for _ in 0..3 {
        scenario.mock.push(Reply::text("ok"));
        client.prompt(&session_id, &prompt).await;
        client.events_until_run_finished().await;
    }
    let error = client
        .request(
            "session/get",
            json!({"sessionId": session_id, "includeHistory": true}),
        )
        .await
        .expect_err("a history over 16 MiB does not fit in one answer");
    assert_eq!(
        error.code,
        i64::from(protocol::error::RESPONSE_TOO_BIG),
        "{error:?}"
    );
    assert_ne!(
        protocol::error::RESPONSE_TOO_BIG,
        protocol::error::ALREADY_DECIDED
    );
    assert!(error.message.contains("response too big"), "{error:?}");
    assert!(error.message.contains("includeHistory"), "{error:?}");
    // Without the history it answers.
    client
        .request("session/get", json!({"sessionId": session_id}))
        .await
        .expect("session/get without history");
    // Longer user text is refused with a reason, not cut.
    let error = client
        .request(
            "session/prompt",
            json!({"sessionId": session_id, "text": format!("{prompt}!")}),
        )
        .await
        .expect_err("a prompt over the message cap");
    assert_eq!(
        error.code,
        i64::from(protocol::error::INVALID_PARAMS),
        "{error:?}"
    );
    assert!(error.message.contains("prompt too long"), "{error:?}");
}

/// Item 10: a tool call with 20 MB of arguments is neither stored nor sent nor run whole: its
/// arguments become a note saying what was cut, the model gets an error result and the run
/// goes on; the session stays readable.
#[tokio::test]
async fn a_tool_call_with_runaway_arguments_is_cut_and_not_run() {
    let scenario = Scenario::start(Format::OpenAi).await;
    let path = "x".repeat(20 * 1024 * 1024);
    scenario.mock.push(Reply::tool_call(
        "call_1",
        "read_file",
        json!({"path": path}),
    ));
    scenario.mock.push(Reply::text("that was too long"));
    let (mut client, session_id) = scenario.session().await;
    client.prompt(&session_id, "read it").await;
    let events = client.events_until_run_finished().await;
    let arguments = events
        .iter()
        .find_map(|e| match &e.event {
            Event::MessageCompleted { tool_calls, .. } if !tool_calls.is_empty() => {
                Some(tool_calls[0].arguments.clone())
            }
            _ => None,
        })
        .expect("the assistant's tool call");
    assert!(arguments.starts_with("[arguments cut: "), "{arguments}");
    let (output, is_error) = events
        .iter()
        .find_map(|e| match &e.event {
            Event::ToolCompleted {
                output, is_error, ..
            } => Some((output.clone(), *is_error)),
            _ => None,
        })
        .expect("the tool call's result");
    assert!(is_error, "the cut call must not run: {output}");
    assert!(matches!(
        events.last().map(|e| &e.event),
        Some(Event::RunFinished {
            status: RunStatus::Completed,
            ..
        })
    ));
    let requests = scenario.mock.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1].body.len() < 1024 * 1024,
        "the history sent back is {} bytes",
        requests[1].body.len()
    );
    client
        .request(
            "session/get",
            json!({"sessionId": session_id, "includeHistory": true}),
        )
        .await
        .expect("session/get with history");
}

/// Item 10: a session written before messages were capped, holding a 30 MB reply, is readable
/// again: `session/get` caps the history's text, a replay sends a stand-in for the event that
/// does not fit in a line, and `agentctl sessions show` and `attach` work.
#[tokio::test]
async fn a_session_with_an_oversized_stored_reply_stays_readable() {
    let mut scenario = Scenario::start(Format::OpenAi).await;
    scenario.mock.push(Reply::text("hi"));
    let (mut client, session_id) = scenario.session().await;
    let run_id = client.prompt(&session_id, "hello").await;
    let events = client.events_until_run_finished().await;
    let last = events.last().expect("events").seq;
    drop(client);
    scenario.daemon.kill().await;

    // What an earlier daemon stored for a 30 MB reply: the message and its event, fields in
    // the store's order (its readers look for lines starting `{"type":"event"`).
    let content = format!("HEAD{}TAIL", "w".repeat(30 * 1024 * 1024));
    let message = format!(
        "{{\"type\":\"message\",\"message\":{{\"role\":\"assistant\",\"content\":\"{content}\"}}}}"
    );
    let event = Event::MessageCompleted {
        run_id,
        role: MessageRole::Assistant,
        content: content.clone(),
        kind: None,
        tool_calls: Vec::new(),
    };
    let event = format!(
        "{{\"type\":\"event\",\"seq\":{},\"event\":{}}}",
        last + 1,
        serde_json::to_string(&event).expect("encode the event")
    );
    let path = scenario
        .daemon
        .env
        .path("state")
        .join("agentd")
        .join("sessions")
        .join(format!("{session_id}.jsonl"));
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open the session file");
    use std::io::Write as _;
    writeln!(file, "{message}\n{event}").expect("append the oversized entries");
    drop(file);
    drop(content);
    scenario.daemon.restart().await;

    let mut client = scenario.client().await;
    let got = client
        .request(
            "session/get",
            json!({"sessionId": session_id, "includeHistory": true}),
        )
        .await
        .expect("session/get with history");
    let stored = got["history"]
        .as_array()
        .and_then(|history| history.last())
        .and_then(|m| m["content"].as_str())
        .expect("the oversized message in the history");
    assert!(stored.starts_with("HEAD") && stored.ends_with("TAIL"));
    assert!(stored.contains("chars omitted"));

    client.subscribe(&session_id, Some(0)).await;
    let replayed = client.events_through_seq(last + 1).await;
    let stand_in = replayed.last().expect("the replayed oversized event");
    assert_eq!(stand_in.seq, last + 1);
    match &stand_in.event {
        Event::Error { message, .. } => {
            assert!(message.contains("line limit"), "{message}")
        }
        other => panic!("expected a stand-in error event, got {other:?}"),
    }

    for args in [
        vec!["attach", session_id.as_str()],
        vec!["sessions", "show", session_id.as_str()],
    ] {
        let output = scenario.daemon.env.run_agentctl(&args).await;
        assert!(
            output.status.success(),
            "agentctl {args:?} failed: {}",
            text(&output.stderr)
        );
    }
}
