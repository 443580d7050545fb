//! Extension figures: the prefix-stability counter (how many requests of a session still
//! extend the one before byte for byte, so the provider's prompt cache keeps hitting) without
//! an extension, with one whose `context` answer changes nothing, and with one that adds a
//! changing message to every request; and what an extension's round trips add to a run.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agentd_tests::extension::FakeExtension;
use agentd_tests::harness::{Daemon, TestEnv};
use agentd_tests::mock_llm::{MockLlm, RecordedRequest};
use serde_json::{Value, json};

use super::report::Row;

/// What the extension of one measurement answers to `context`.
#[derive(Clone, Copy)]
enum ContextAnswer {
    /// No extension at all.
    Absent,
    /// `{}`: the request goes as it was.
    Unchanged,
    /// The messages plus one whose text changes at every request (a clock, a counter).
    Changing,
}

pub async fn figures(scale: usize, rows: &mut Vec<Row>) {
    let turns = 20 * scale;
    for (what, answer) in [
        ("no extension", ContextAnswer::Absent),
        (
            "an extension answering `context` with {}",
            ContextAnswer::Unchanged,
        ),
        (
            "an extension adding a changing message in `context`",
            ContextAnswer::Changing,
        ),
    ] {
        let (stable, compared, per_run) = measure(turns, answer).await;
        rows.push(Row::with(
            format!("prefix-stable requests, {what} ({turns} turns)"),
            format!("{stable}/{compared}"),
            stable as f64,
            "requests",
        ));
        let ms = per_run.as_secs_f64() * 1000.0;
        rows.push(Row::with(
            "  one-step run, prompt → runFinished",
            format!("{ms:.2} ms"),
            ms,
            "ms",
        ));
    }
}

/// Runs `turns` one-step runs in one session; returns how many requests extend the one
/// before, out of how many were compared, and the mean run time.
async fn measure(turns: usize, answer: ContextAnswer) -> (usize, usize, Duration) {
    let mock = MockLlm::start_echo().await;
    let env = TestEnv::new()
        .var("OPENAI_API_KEY", "bench")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .var("AGENTD_LOG", "warn")
        .config("[permissions]\ndefault_mode = \"bypass\"\n");
    let daemon = Daemon::start_in(env).await;
    let counter = Arc::new(AtomicU64::new(0));
    let _extension = match answer {
        ContextAnswer::Absent => None,
        ContextAnswer::Unchanged | ContextAnswer::Changing => Some(
            FakeExtension::start(
                daemon.socket(),
                json!({"name": "bench", "events": ["context"]}),
                Box::new(move |request: &Value| {
                    if matches!(answer, ContextAnswer::Unchanged) {
                        return Some(json!({}));
                    }
                    let mut messages = request["params"]["messages"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default();
                    let n = counter.fetch_add(1, Ordering::Relaxed);
                    messages.push(json!({"role": "user", "content": format!("request {n}")}));
                    Some(json!({"messages": messages}))
                }),
            )
            .await,
        ),
    };
    let mut client = daemon.client().await;
    let session = super::create(&mut client, &daemon).await;
    super::subscribe(&mut client, &session).await;
    let started = Instant::now();
    for i in 0..turns {
        super::prompt(&mut client, &session, &format!("turn {i}")).await;
        super::wait_finished(&mut client).await;
    }
    let per_run = started.elapsed() / turns.max(1) as u32;
    let requests = mock.requests();
    let stable = requests
        .windows(2)
        .filter(|pair| extends(&pair[0], &pair[1]))
        .count();
    (stable, requests.len().saturating_sub(1), per_run)
}

/// Whether `next`'s body starts with all of `previous`'s but its closing `]}` (the message
/// list is the body's last field): then the provider's cache of `previous` serves `next`.
fn extends(previous: &RecordedRequest, next: &RecordedRequest) -> bool {
    previous
        .body
        .strip_suffix("]}")
        .is_some_and(|head| next.body.starts_with(head))
}
