//! `perf_counts`: the regression guard a busy machine cannot fool. It counts, never times:
//! the daemon's allocations per tool step and per streamed event, the bytes its session
//! log grows by per step, and the heap a loaded idle session holds, each compared with its budget in `tests/perf-budgets.toml`; a figure
//! over its budget fails the test naming both ("allocations per step: N, budget M").
//!
//! Why a binary of its own (the one exception to the single `all` test binary): a counting
//! allocator is process-wide, so the daemon must run in this process, and the daemon reads
//! its paths from the process environment, which only a single-threaded start may set. So
//! this is a `harness = false` test: `main` sets a private environment, then runs the real
//! `agentd::run_main` on a thread (its own runtime, logging, socket; `host`), while the client
//! and the scripted mock LLM run on this thread, which the allocator does not count. The
//! counted work is the daemon's from the prompt to the `runFinished` it sends, over the
//! socket and real HTTP, as with the binary: no test seam, nothing of the daemon changed.
//!
//! Counts, not times, but not all exactly repeatable: how the SSE bytes arrive in reads, how
//! the log writer batches its queue and whether the blocking pool has an idle thread depend
//! on timing. Each figure is a difference of two runs (a run of `STEPS` `read_file` steps
//! minus a run without tools; a long streamed answer minus a one-word one), so what every run
//! costs cancels, and is the median of `REPEATS` after one left out (the first pays for what
//! is made once); the budgets leave room above the spread this prints (see the budgets file).

use std::panic::AssertUnwindSafe;
use std::process::ExitCode;

use agentd_tests::budgets::Budgets;
use agentd_tests::counting_alloc::{self, CountingAllocator, Counts};
use agentd_tests::harness::Client;
use agentd_tests::mock_llm::{MockLlm, Reply};
use agentd_tests::scenario::create_session;
use protocol::event::{Event, RunStatus};
use serde_json::json;

mod host;

use host::{HostDirs, HostedDaemon, StderrToFile};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The name `cargo test` filters match against.
const TEST_NAME: &str =
    "perf_counts::allocations_and_log_bytes_per_step_and_event_fit_their_budgets";
/// Tool steps of the long run.
const STEPS: usize = 20;
/// Words of the long streamed answer (the mock streams a text word by word, one delta each).
const STREAMED_WORDS: usize = 200;
/// Measurements of each figure; the median is checked.
const REPEATS: usize = 3;
/// Sessions created (and left idle) for the held-memory figure.
const IDLE_SESSIONS: u64 = 50;
/// The small file every step reads.
const SMALL_FILE: &str = "small.txt";

fn main() -> ExitCode {
    counting_alloc::exclude_this_thread();
    if !selected(std::env::args().skip(1)) {
        return ExitCode::SUCCESS;
    }
    let dirs = HostDirs::new();
    // SAFETY: nothing but this thread runs yet.
    unsafe { dirs.make_process_environment() };
    let stderr = StderrToFile::new(&dirs.path("daemon-stderr.log"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_start(counting_alloc::exclude_this_thread)
        .build()
        .expect("the test's runtime");
    let measured = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let (samples, daemon) = runtime.block_on(measure(&dirs));
        daemon.join();
        samples
    }));
    let tail = stderr.tail(16 * 1024);
    drop(stderr);
    let Ok(samples) = measured else {
        eprintln!("{TEST_NAME}: the measurement failed; the end of its stderr:\n{tail}");
        return ExitCode::FAILURE;
    };
    report(&samples, &Budgets::load())
}

/// One repetition's figures.
#[derive(Clone, Copy, Debug)]
struct Sample {
    step_allocations: u64,
    step_bytes: u64,
    step_log_bytes: u64,
    event_allocations: u64,
    event_bytes: u64,
    events_per_step: u64,
    session_live_bytes: u64,
}

/// A figure of a sample: how it is printed, its budget's key, and where it is.
type Figure = (&'static str, &'static str, fn(&Sample) -> u64);

/// The figures, how each is printed, and its budget.
const FIGURES: [Figure; 6] = [
    ("allocations per step", "tool_step.allocations", |s| {
        s.step_allocations
    }),
    (
        "bytes allocated per step",
        "tool_step.allocated_bytes",
        |s| s.step_bytes,
    ),
    ("session log bytes per step", "tool_step.log_bytes", |s| {
        s.step_log_bytes
    }),
    ("allocations per event", "streamed_event.allocations", |s| {
        s.event_allocations
    }),
    (
        "bytes allocated per event",
        "streamed_event.allocated_bytes",
        |s| s.event_bytes,
    ),
    (
        "heap bytes held per idle session",
        "idle_session.live_bytes",
        |s| s.session_live_bytes,
    ),
];

fn report(samples: &[Sample], budgets: &Budgets) -> ExitCode {
    println!(
        "{TEST_NAME}: the daemon in this process, {STEPS}-step read_file runs and {STREAMED_WORDS}-word streamed answers, median of {REPEATS} ({} build)",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    let mut failures = Vec::new();
    for (what, key, figure) in FIGURES {
        let mut values: Vec<u64> = samples.iter().map(figure).collect();
        values.sort_unstable();
        let median = values[values.len() / 2];
        println!(
            "  {} (measured {values:?})",
            budgets.line(what, key, median)
        );
        failures.extend(budgets.exceeded(what, key, median));
    }
    println!("  events per step: {}", samples[0].events_per_step);
    if failures.is_empty() {
        println!("test {TEST_NAME} ... ok");
        return ExitCode::SUCCESS;
    }
    for failure in &failures {
        eprintln!("over budget: {failure}");
    }
    eprintln!(
        "a lower figure is the goal; raise a budget only for a reason named in the commit (a feature that must cost more)"
    );
    ExitCode::FAILURE
}

/// Whether `cargo test`'s arguments select this test: no filter, or one that is part of its
/// name (`--list` lists it and runs nothing).
fn selected(args: impl Iterator<Item = String>) -> bool {
    let mut filters = Vec::new();
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--list" => {
                println!("{TEST_NAME}: test");
                return false;
            }
            "--test-threads" | "--skip" | "--color" | "--format" | "--logfile" => {
                args.next();
            }
            flag if flag.starts_with('-') => {}
            filter => filters.push(filter.to_owned()),
        }
    }
    filters.is_empty()
        || filters
            .iter()
            .any(|filter| TEST_NAME.contains(filter.as_str()))
}

/// What one run cost the daemon.
#[derive(Clone, Copy, Debug)]
struct RunCost {
    counts: Counts,
    log_bytes: u64,
    events: u64,
}

/// Start the mock and the daemon, warm up, measure every figure `REPEATS` times, stop the
/// daemon; returns the samples and the daemon to join once this runtime is free.
async fn measure(dirs: &HostDirs) -> (Vec<Sample>, HostedDaemon) {
    let mock = MockLlm::start().await;
    dirs.write_config(&mock);
    std::fs::write(dirs.workspace().join(SMALL_FILE), "one\ntwo\nthree\n").expect("small file");
    let daemon = HostedDaemon::start(dirs).await;
    let mut client = Client::connect_raw(&dirs.socket())
        .await
        .expect("connect to the daemon");
    client.initialize().await;
    // The first repetition pays for what is made once (the connection to the mock, lazy
    // tables, buffers grown to their working size): it is measured and left out.
    let mut samples = Vec::new();
    for _ in 0..=REPEATS {
        let base = run(&mut client, &mock, dirs, tool_steps(0)).await;
        let steps = run(&mut client, &mock, dirs, tool_steps(STEPS)).await;
        let words: Vec<String> = (0..STREAMED_WORDS).map(|i| format!("w{i}")).collect();
        let streamed = run(&mut client, &mock, dirs, vec![Reply::text(words.join(" "))]).await;
        let held = idle_sessions(&mut client, dirs).await;
        let step = steps.counts.since(base.counts);
        let events = streamed.events - base.events;
        let event = streamed.counts.since(base.counts);
        samples.push(Sample {
            step_allocations: per(step.allocations, STEPS as u64),
            step_bytes: per(step.bytes, STEPS as u64),
            step_log_bytes: per(steps.log_bytes - base.log_bytes, STEPS as u64),
            event_allocations: per(event.allocations, events),
            event_bytes: per(event.bytes, events),
            events_per_step: per(steps.events - base.events, STEPS as u64),
            session_live_bytes: per(held, IDLE_SESSIONS),
        });
    }
    samples.remove(0);
    client
        .request("daemon/shutdown", json!({}))
        .await
        .expect("daemon/shutdown");
    drop(client);
    (samples, daemon)
}

/// The heap the daemon holds more after `IDLE_SESSIONS` new sessions (created, never
/// prompted or followed: what a loaded idle session costs).
async fn idle_sessions(client: &mut Client, dirs: &HostDirs) -> u64 {
    let before = counting_alloc::counts();
    for _ in 0..IDLE_SESSIONS {
        create_session(client, &dirs.workspace()).await;
    }
    let held = counting_alloc::counts().since(before).live;
    u64::try_from(held).unwrap_or(0)
}

/// `steps` read_file calls, one per model reply, then a one-word answer.
fn tool_steps(steps: usize) -> Vec<Reply> {
    let mut replies: Vec<Reply> = (0..steps)
        .map(|i| Reply::tool_call(format!("c{i}"), "read_file", json!({"path": SMALL_FILE})))
        .collect();
    replies.push(Reply::text("done"));
    replies
}

/// A new session, a prompt answered by `replies`: what the daemon allocated from the prompt
/// to the `runFinished` it sent, how much its log grew, and how many events it sent.
async fn run(client: &mut Client, mock: &MockLlm, dirs: &HostDirs, replies: Vec<Reply>) -> RunCost {
    let session = create_session(client, &dirs.workspace()).await;
    client.subscribe(&session, None).await;
    let tool_calls = replies.iter().filter(|r| !r.tool_calls.is_empty()).count();
    for reply in replies {
        mock.push(reply);
    }
    let log = dirs.session_file(&session);
    let size = || {
        std::fs::metadata(&log)
            .map(|m| m.len())
            .expect("the session log")
    };
    let log_before = size();
    let before = counting_alloc::counts();
    client.prompt(&session, "read the file").await;
    let mut events = 0;
    let mut errors = 0;
    let status = loop {
        let envelope = client.next_event().await;
        events += 1;
        match envelope.event {
            Event::ToolCompleted { is_error: true, .. } => errors += 1,
            Event::RunFinished { status, .. } => break status,
            _ => {}
        }
    };
    let counts = counting_alloc::counts().since(before);
    assert_eq!(
        status,
        RunStatus::Completed,
        "the measured run did not complete"
    );
    assert_eq!(
        errors, 0,
        "a read_file step failed; the figures would not be a step's"
    );
    assert_eq!(
        mock.remaining(),
        0,
        "the run did not take all {tool_calls} tool replies"
    );
    RunCost {
        counts,
        log_bytes: size() - log_before,
        events,
    }
}

/// `total / count`, rounded to the nearest.
fn per(total: u64, count: u64) -> u64 {
    (total + count / 2) / count.max(1)
}
