//! Fork figures of `bench` (`BENCH_ONLY=fork` runs only these): a session file of 10,000
//! entries (1,250 finished runs) written before the daemon starts, then `session/fork` of it
//! timed at its end and at its middle (the source loaded; its first load is shown apart), and
//! the check the fork exists for: the fork's first request and the source's next one, sent
//! the same prompt, are byte for byte the same (the provider's prompt cache prefix).

use std::time::{Duration, Instant};

use agentd_tests::harness::{Client, Daemon, TestEnv};
use agentd_tests::mock_llm::{MockLlm, Reply};
use protocol::event::{Event, MessageRole, RunStatus, Usage, UserMessageKind};
use serde_json::json;

use super::report::Row;

/// Entries of the source's file (after its header).
const ENTRIES: usize = 10_000;
/// Entries each run writes: 6 events and 2 messages.
const ENTRIES_PER_RUN: usize = 8;
/// Forks timed at each point.
const FORKS: usize = 20;

pub async fn figures(scale: usize, rows: &mut Vec<Row>) {
    let entries = ENTRIES * scale;
    let mock = MockLlm::start().await;
    let env = TestEnv::new()
        .var("OPENAI_API_KEY", "bench")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .var("AGENTD_LOG", "warn")
        .config("[permissions]\ndefault_mode = \"bypass\"\n");
    let dir = env.path("state").join("agentd/sessions");
    std::fs::create_dir_all(&dir).expect("sessions dir");
    let source = format!("ses_{:032x}", 0xf0e4_u64);
    let cwd = env.workspace().display().to_string();
    let (text, last_seq) = source_file(&source, &cwd, entries / ENTRIES_PER_RUN);
    std::fs::write(dir.join(format!("{source}.jsonl")), &text).expect("write the source");
    let mut daemon = Daemon::start_in(env).await;
    let mut client = daemon.client().await;

    let started = Instant::now();
    client
        .request("session/get", json!({"sessionId": source}))
        .await
        .expect("session/get");
    let first_load = started.elapsed();
    let (mean_end, max_end) = time_forks(&mut client, &source, None).await;
    let middle = last_seq / 2 / 6 * 6;
    let (mean_middle, max_middle) = time_forks(&mut client, &source, Some(middle)).await;
    rows.push(Row::with(
        format!(
            "session/fork of a {entries}-entry session ({:.1} MiB), at its end",
            text.len() as f64 / (1024.0 * 1024.0)
        ),
        format!("{} (max {})", ms(mean_end), ms(max_end)),
        mean_end.as_secs_f64() * 1000.0,
        "ms",
    ));
    rows.push(Row::with(
        "  at its middle",
        format!("{} (max {})", ms(mean_middle), ms(max_middle)),
        mean_middle.as_secs_f64() * 1000.0,
        "ms",
    ));
    rows.push(Row::ms(
        "  the source's first load, before the first fork",
        first_load,
    ));

    // The fork's first request against the source's next one, the same prompt sent.
    let fork = client
        .request("session/fork", json!({"sessionId": source}))
        .await
        .expect("session/fork");
    let fork = fork["sessionId"].as_str().expect("sessionId").to_owned();
    let mut bodies = Vec::new();
    for session in [&source, &fork] {
        mock.push(Reply::text("answer"));
        client
            .request("session/subscribe", json!({"sessionId": session}))
            .await
            .expect("subscribe");
        client
            .request(
                "session/prompt",
                json!({"sessionId": session, "text": "the same next prompt"}),
            )
            .await
            .expect("prompt");
        loop {
            let event = client.next_notification_result().await;
            if event["event"]["type"] == "runFinished" && event["sessionId"] == json!(session) {
                break;
            }
        }
        let requests = mock.requests();
        bodies.push(requests.last().map(|r| r.body.clone()).unwrap_or_default());
    }
    let verdict = match bodies[0] == bodies[1] {
        true => format!("byte-identical ({} bytes)", bodies[0].len()),
        false => "DIFFERENT: the fork's cache prefix would miss".to_owned(),
    };
    rows.push(Row::text(
        "  fork's first request vs the source's next",
        verdict,
    ));
    drop(client);
    daemon.signal(libc::SIGTERM);
    daemon.wait_exit().await;
}

/// The mean and the slowest of [`FORKS`] forks of `source` at `at` (None: its end).
async fn time_forks(client: &mut Client, source: &str, at: Option<u64>) -> (Duration, Duration) {
    let mut total = Duration::ZERO;
    let mut slowest = Duration::ZERO;
    for _ in 0..FORKS {
        let mut params = json!({"sessionId": source});
        if let Some(at) = at {
            params["atSeq"] = json!(at);
        }
        let started = Instant::now();
        client
            .request("session/fork", params)
            .await
            .expect("session/fork");
        let took = started.elapsed();
        total += took;
        slowest = slowest.max(took);
    }
    (total / FORKS as u32, slowest)
}

/// A session file of `runs` finished one-step runs; its text and last seq.
fn source_file(id: &str, cwd: &str, runs: usize) -> (String, u64) {
    let header = json!({
        "type": "header", "version": 1, "id": id, "createdAt": "2026-11-30T00:00:00Z",
        "cwd": cwd, "provider": "openai", "model": "m", "systemPrompt": "s".repeat(2000),
    });
    let mut text = format!("{header}\n");
    let mut seq = 0;
    let mut event = |text: &mut String, event: Event| {
        seq += 1;
        let line = json!({"type": "event", "seq": seq, "event": event});
        text.push_str(&format!("{line}\n"));
    };
    let message = |text: &mut String, role: &str, content: &str| {
        let line = json!({"type": "message", "message": {"role": role, "content": content}});
        text.push_str(&format!("{line}\n"));
    };
    let usage = Usage {
        input_tokens: 20,
        output_tokens: 5,
        ..Usage::default()
    };
    for run in 0..runs {
        let run_id = format!("run_{run:08x}");
        let prompt = format!("turn {run}: what next?");
        let answer = format!("answer {run}: carry on");
        event(
            &mut text,
            Event::RunStarted {
                run_id: run_id.clone(),
                prompt: prompt.clone(),
                client_request_id: None,
                options: None,
            },
        );
        message(&mut text, "user", &prompt);
        event(
            &mut text,
            Event::MessageCompleted {
                run_id: run_id.clone(),
                role: MessageRole::User,
                content: prompt,
                kind: Some(UserMessageKind::Prompt),
                tool_calls: Vec::new(),
            },
        );
        event(
            &mut text,
            Event::TurnStarted {
                run_id: run_id.clone(),
                step: 1,
            },
        );
        message(&mut text, "assistant", &answer);
        event(
            &mut text,
            Event::MessageCompleted {
                run_id: run_id.clone(),
                role: MessageRole::Assistant,
                content: answer,
                kind: None,
                tool_calls: Vec::new(),
            },
        );
        event(
            &mut text,
            Event::UsageUpdated {
                run_id: run_id.clone(),
                usage,
                total: usage,
                context_window: None,
                total_cost_usd: None,
            },
        );
        event(
            &mut text,
            Event::RunFinished {
                run_id,
                status: RunStatus::Completed,
                error: None,
                usage,
                cost_usd: None,
            },
        );
    }
    (text, seq)
}

fn ms(elapsed: Duration) -> String {
    format!("{:.1} ms", elapsed.as_secs_f64() * 1000.0)
}
