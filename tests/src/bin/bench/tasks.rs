//! Task figures of `bench` (`BENCH_ONLY=tasks` runs only these): 500 background subagents
//! started at once by one batch of the model's `task` calls against the echoing mock model (all complete, errors,
//! the daemon's peak memory, the most running at once against the cap, and whether any
//! waited `pending`), task start → the child's first model request, and `task/list` over
//! 10,000 finished task records on disk.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use agentd_tests::harness::{Client, Daemon, TestEnv};
use agentd_tests::mock_llm::{MockLlm, Reply};
use agentd_tests::task_records::{record, tasks_dir};
use protocol::task::{TaskKind, TaskStatus};
use serde_json::{Value, json};

use super::report::{Row, per, per_ms};

/// Background subagents started at once.
const AT_ONCE: usize = 500;
/// Task starts timed one by one (start → first model request).
const TIMED_STARTS: usize = 20;
/// How long a timed start's parent may take to answer its task's notification.
const PARENT_DONE_WAIT: Duration = Duration::from_secs(10);
/// How long the 500 may take to finish in the bench.
const ALL_DONE_WAIT: Duration = Duration::from_secs(300);

pub async fn figures(scale: usize, rows: &mut Vec<Row>) {
    many_at_once(AT_ONCE * scale, rows).await;
    list_finished(10_000 * scale, rows).await;
}

/// A daemon on the echoing mock, and a client subscribed to the daemon stream.
async fn daemon_on_echo() -> (MockLlm, Daemon, Client) {
    let mock = MockLlm::start_echo().await;
    let env = TestEnv::new()
        .var("OPENAI_API_KEY", "bench")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .var("AGENTD_LOG", "warn")
        .config("[permissions]\ndefault_mode = \"bypass\"\n");
    let daemon = Daemon::start_in(env).await;
    let mut client = daemon.client().await;
    client
        .request("daemon/subscribe", json!({}))
        .await
        .expect("daemon/subscribe");
    (mock, daemon, client)
}

async fn many_at_once(count: usize, rows: &mut Vec<Row>) {
    let (mock, daemon, mut client) = daemon_on_echo().await;

    // Start → the child's first model request, one background task at a time.
    let mut to_first_request = Duration::ZERO;
    let mut before_the_event = 0;
    let mut from_the_call = Duration::ZERO;
    for i in 0..TIMED_STARTS {
        let marker = format!("timed child {i}");
        // Routed to this parent's first request only: an earlier parent answering its task's
        // notification, or an earlier child, must not take it (and start no child, or the
        // wrong one).
        let parent_prompt = format!("start timed parent {i}.");
        mock.push_for(
            parent_prompt.clone(),
            Reply::tool_call(
                format!("t{i}"),
                "task",
                json!({"prompt": marker, "runInBackground": true}),
            ),
        );
        // A fresh parent each time, with its own history.
        let parent = super::create(&mut client, &daemon).await;
        // Counted from before the prompt: the child's request may reach the mock before
        // taskStarted reaches this client.
        let mut seen = mock.requests().len();
        super::prompt(&mut client, &parent, &parent_prompt).await;
        let started = loop {
            let envelope = client.next_notification_result().await;
            if envelope["event"]["type"] == "taskStarted" {
                break Instant::now();
            }
        };
        // Timed to when the request reached the mock, not to when this loop noticed it.
        let mut asked = None;
        let reached = 'found: loop {
            for request in mock.wait_for_requests_after(seen).await {
                seen += 1;
                if asked.is_none() && request.body.contains(&parent_prompt) {
                    asked = Some(request.received_at);
                }
                if request.body.contains(&marker) && !request.body.contains("\"task\"") {
                    break 'found request.received_at;
                }
            }
        };
        if let Some(asked) = asked {
            from_the_call += reached.saturating_duration_since(asked);
        }
        if reached < started {
            // Counted as no time: the start this client can see came after the request.
            before_the_event += 1;
        }
        to_first_request += reached.saturating_duration_since(started);
        wait_all_finished(&mut client, 1).await;
        // The parent answers the task's notification (in the run it is in, or a new one):
        // the next start is timed once that run has ended, not against it.
        wait_run_finished(&mut client, &parent).await;
    }
    rows.push(Row::per(
        "task start → the child's first model request (goal ≤ 2 ms)",
        to_first_request,
        TIMED_STARTS,
    ));
    rows.push(Row::with(
        "  (from taskStarted reaching a client; requests that came before it, as 0)",
        format!("{before_the_event} of {TIMED_STARTS}"),
        before_the_event as f64,
        "requests",
    ));
    rows.push(Row::per(
        "  the parent's model request → the child's first (the whole path, both at the mock)",
        from_the_call,
        TIMED_STARTS,
    ));

    // `count` background subagents from one batch of tool calls.
    let calls: Vec<(String, String, String)> = (0..count)
        .map(|i| {
            (
                format!("b{i}"),
                "task".to_owned(),
                json!({"prompt": format!("child {i}"), "runInBackground": true}).to_string(),
            )
        })
        .collect();
    // Routed like the timed ones: a timed parent still answering a notification must not
    // take it.
    mock.push_for("start them all", Reply::tool_calls(calls));
    let started = Instant::now();
    let parent = super::create(&mut client, &daemon).await;
    super::prompt(&mut client, &parent, "start them all").await;
    let watched = wait_all_finished(&mut client, count).await;
    let elapsed = started.elapsed();
    rows.push(Row::with(
        format!("{count} background subagents at once: all finished"),
        format!(
            "{:.2} s, {} completed, {} failed",
            elapsed.as_secs_f64(),
            watched.completed,
            watched.failed
        ),
        elapsed.as_secs_f64() * 1000.0,
        "ms",
    ));
    rows.push(Row::text(
        "  most running at once (the cap, default 4) / any waited pending",
        format!("{} / {}", watched.most_running, watched.saw_pending),
    ));
    let peak = "  daemon peak memory (goal ≤ 100 MiB)";
    rows.push(match peak_kib(daemon.pid()) {
        Some(kib) => {
            let mib = kib as f64 / 1024.0;
            Row::with(peak, format!("{mib:.1} MiB"), mib, "MiB")
        }
        None => Row::text(peak, "unknown"),
    });
}

/// What the daemon stream showed of a batch of tasks.
#[derive(Default)]
struct Watched {
    completed: usize,
    failed: usize,
    most_running: usize,
    saw_pending: bool,
}

/// Follows task events on the daemon stream until `count` tasks have finished.
/// Waits (at most [`PARENT_DONE_WAIT`]) for the next `runFinished` of `session` on the
/// daemon stream.
async fn wait_run_finished(client: &mut Client, session: &str) {
    let wait = async {
        loop {
            let envelope = client.next_notification_result().await;
            if envelope["sessionId"] == session && envelope["event"]["type"] == "runFinished" {
                return;
            }
        }
    };
    if tokio::time::timeout(PARENT_DONE_WAIT, wait).await.is_err() {
        eprintln!("bench: the parent {session} did not end a run after its task's notification");
    }
}

async fn wait_all_finished(client: &mut Client, count: usize) -> Watched {
    let mut watched = Watched::default();
    let mut status: HashMap<String, String> = HashMap::new();
    let deadline = Instant::now() + ALL_DONE_WAIT;
    while watched.completed + watched.failed < count {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(envelope) = tokio::time::timeout(left, client.next_notification_result()).await
        else {
            eprintln!(
                "bench: {} of {count} tasks finished in {ALL_DONE_WAIT:?}",
                watched.completed + watched.failed
            );
            return watched;
        };
        let event: &Value = &envelope["event"];
        let kind = event["type"].as_str().unwrap_or_default();
        if !kind.starts_with("task") {
            continue;
        }
        let task_id = event["task"]["taskId"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let now = event["task"]["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        watched.saw_pending |= now == "pending";
        if kind == "taskFinished" {
            if now == "completed" {
                watched.completed += 1;
            } else {
                watched.failed += 1;
            }
        }
        status.insert(task_id, now);
        let running = status.values().filter(|s| *s == "running").count();
        watched.most_running = watched.most_running.max(running);
    }
    watched
}

/// `task/list {all}` over `count` finished records an earlier daemon left.
async fn list_finished(count: usize, rows: &mut Vec<Row>) {
    let env = TestEnv::new()
        .var("OPENAI_API_KEY", "bench")
        .var("AGENTD_LOG", "warn");
    let dir = tasks_dir(&env);
    agentd_core::paths::prepare_private_dir(&dir).expect("tasks dir");
    for i in 0..count {
        let task_id = format!("task_{i:032x}");
        let created = format!(
            "2026-11-{:02}T{:02}:{:02}:00Z",
            1 + i / 1440 % 28,
            i / 60 % 24,
            i % 60
        );
        let mut task = record(
            &env,
            &task_id,
            TaskKind::Subagent,
            TaskStatus::Completed,
            &created,
        );
        task.result = Some(format!("result of {task_id}"));
        // Written plainly (no fsync per file): the bench times reading them, not writing.
        let bytes = agentd::task::store::encode_record(&task).expect("encode record");
        std::fs::write(agentd::task::store::record_path(&dir, &task_id), bytes)
            .expect("write record");
    }
    let started = Instant::now();
    let daemon = Daemon::start_in(env).await;
    let start = started.elapsed();
    let mut client = daemon.client().await;
    let mut first = Duration::ZERO;
    let mut listed = 0;
    let rounds = 10;
    for round in 0..rounds {
        let sent = Instant::now();
        let result = client
            .request("task/list", json!({"all": true}))
            .await
            .expect("task/list");
        let took = sent.elapsed();
        if round == 0 {
            first = took;
        }
        listed = result["tasks"].as_array().map_or(0, Vec::len);
    }
    let sent = Instant::now();
    for _ in 0..rounds {
        client
            .request("task/list", json!({"all": true}))
            .await
            .expect("task/list");
    }
    let after = sent.elapsed();
    rows.push(Row::with(
        format!("task/list all over {count} finished tasks on disk (every record sent)"),
        format!(
            "{:.2} ms first, {} per call after ({listed} listed)",
            first.as_secs_f64() * 1000.0,
            per(after, rounds)
        ),
        per_ms(after, rounds),
        "ms",
    ));
    let sent = Instant::now();
    for _ in 0..rounds {
        client
            .request("task/list", json!({}))
            .await
            .expect("task/list");
    }
    rows.push(Row::per(
        format!("task/list (active ones) with {count} finished tasks on disk (goal ≤ 20 ms)"),
        sent.elapsed(),
        rounds,
    ));
    rows.push(Row::ms(
        format!("  daemon start with {count} task records"),
        start,
    ));
}

/// The daemon's peak resident memory (VmHWM), in KiB.
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}
