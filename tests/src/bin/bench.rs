//! `bench`: figures for the daemon's own overhead, measured end to end against the real
//! `agentd` binary and the scripted mock LLM (so the model costs ~nothing). Prints a table; it
//! asserts nothing. Run it by hand on a quiet machine:
//!
//! ```sh
//! cargo build --release --workspace && ./target/release/bench
//! ```
//!
//! `BENCH_SCALE` (default 1) multiplies every count; `BENCH_ONLY=list` runs only the listing
//! figures, `BENCH_ONLY=tasks` only the task ones, `BENCH_ONLY=extensions` only the
//! extension ones (the prefix-stability counter), `BENCH_ONLY=restart` the restart ones (100
//! active runs resumed after a kill -9), `BENCH_ONLY=fork` the fork ones (a 10,000-entry
//! session forked, and the fork's first request against the source's), `BENCH_ONLY=checkpoint`
//! the checkpoint ones (a 10,000-file tree: the first, an unchanged and a one-file checkpoint,
//! a rewind), `BENCH_ONLY=mcp` only the MCP ones (`mcp`, and the first request with 500 MCP
//! tools listed and searched, `tool_search`; they need the servers of
//! `tests/mcp-servers/install.sh`, and run last otherwise).
//!
//! `bench --json` prints the figures as JSON instead (save a run: `bench --json > before.json`);
//! `bench --compare before.json` prints each figure beside the saved one and their ratio (now /
//! saved). Times are `bench`'s; the deterministic counts a busy machine cannot fool are the
//! budgets of `tests/perf-budgets.toml`, which `cargo test` checks.

use std::time::{Duration, Instant};

use agentd_tests::harness::{Client, Daemon, TestEnv};
use agentd_tests::mock_llm::{MockLlm, Reply};
use serde_json::{Value, json};

#[path = "bench/checkpoint.rs"]
mod checkpoint;
#[path = "bench/extensions.rs"]
mod extensions;
#[path = "bench/fork.rs"]
mod fork;
#[path = "bench/mcp.rs"]
mod mcp;
#[path = "bench/report.rs"]
mod report;
#[path = "bench/restart.rs"]
mod restart;
#[path = "bench/tasks.rs"]
mod tasks;
#[path = "bench/tool_search.rs"]
mod tool_search;

use report::{Row, RunInfo, Saved, per, per_ms};

/// What the command line asked for.
struct Output {
    json: bool,
    compare: Option<(String, Saved)>,
}

const USAGE: &str = "usage: bench [--json] [--compare FILE]\n  \
    --json          print the figures as JSON (save a run: bench --json > FILE)\n  \
    --compare FILE  print each figure beside the one FILE saved, with their ratio (now / saved)\n\
    environment: BENCH_SCALE=N (counts ×N), BENCH_ONLY=list|tasks|extensions|restart|mcp";

fn parse_args() -> Result<Output, String> {
    let mut output = Output {
        json: false,
        compare: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--json" => output.json = true,
            "--compare" => {
                let path = args
                    .next()
                    .ok_or("--compare needs a FILE saved by bench --json")?;
                let saved = Saved::read(&path)?;
                output.compare = Some((path, saved));
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(output)
}

fn main() -> std::process::ExitCode {
    let output = match parse_args() {
        Ok(output) => output,
        Err(error) => {
            if !error.is_empty() {
                eprintln!("bench: {error}");
            }
            eprintln!("{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    let scale: usize = std::env::var("BENCH_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1);
    let only = std::env::var("BENCH_ONLY").ok();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let rows = runtime.block_on(figures(scale, only.as_deref()));
    let info = RunInfo { scale, only };
    match (&output.compare, output.json) {
        (None, false) => report::print_table(&info, &rows),
        (compare, true) => {
            let saved = compare.as_ref().map(|(_, saved)| saved);
            println!("{:#}", report::to_json(&info, &rows, saved));
        }
        (Some((path, saved)), false) => report::print_comparison(&info, &rows, saved, path),
    }
    std::process::ExitCode::SUCCESS
}

/// Every figure, or those `BENCH_ONLY` names.
async fn figures(scale: usize, only: Option<&str>) -> Vec<Row> {
    let mut rows = Vec::new();
    match only {
        Some("list") => list_many_sessions(10_000 * scale, &mut rows).await,
        Some("tasks") => tasks::figures(scale, &mut rows).await,
        Some("extensions") => extensions::figures(scale, &mut rows).await,
        Some("restart") => restart::figures(scale, &mut rows).await,
        Some("fork") => fork::figures(scale, &mut rows).await,
        Some("checkpoint") => checkpoint::figures(scale, &mut rows).await,
        Some("mcp") => {
            mcp::figures(scale, &mut rows).await;
            tool_search::figures(&mut rows).await;
        }
        _ => everything(scale, &mut rows).await,
    }
    rows
}

async fn everything(scale: usize, rows: &mut Vec<Row>) {
    let mock = MockLlm::start_echo().await;
    let env = TestEnv::new()
        .var("OPENAI_API_KEY", "bench")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .var("AGENTD_LOG", "warn")
        .config("[permissions]\ndefault_mode = \"bypass\"\n");
    let mut daemon = Daemon::start_in(env).await;

    // 1. Request round trip.
    let mut client = daemon.client().await;
    let calls = 2000 * scale;
    let started = Instant::now();
    for _ in 0..calls {
        client
            .request("daemon/status", json!({}))
            .await
            .expect("status");
    }
    rows.push(Row::per(
        format!("daemon/status round trip ({calls} sequential)"),
        started.elapsed(),
        calls,
    ));

    // 2. A one-step run: prompt → runFinished, and prompt → first delta.
    let session = create(&mut client, &daemon).await;
    subscribe(&mut client, &session).await;
    let runs = 200 * scale;
    let mut first_delta = Duration::ZERO;
    let started = Instant::now();
    for i in 0..runs {
        let sent = Instant::now();
        prompt(&mut client, &session, &format!("hello {i}")).await;
        let mut seen_delta = false;
        loop {
            let event = client.next_notification_result().await;
            match event["event"]["type"].as_str() {
                Some("messageDelta") if !seen_delta => {
                    seen_delta = true;
                    first_delta += sent.elapsed();
                }
                Some("runFinished") => break,
                _ => {}
            }
        }
    }
    let elapsed = started.elapsed();
    rows.push(Row::per(
        format!("one-step run, prompt → runFinished ({runs} runs)"),
        elapsed,
        runs,
    ));
    rows.push(Row::per("prompt → first messageDelta", first_delta, runs));

    // 3. Per-step overhead: a run of many tool steps (list_dir) then an answer.
    let steps = 100 * scale;
    for i in 0..steps {
        mock.push(Reply::tool_call(
            format!("c{i}"),
            "list_dir",
            json!({"path": "."}),
        ));
    }
    mock.push(Reply::text("done"));
    let session = create(&mut client, &daemon).await;
    subscribe(&mut client, &session).await;
    let started = Instant::now();
    prompt(&mut client, &session, "walk").await;
    wait_finished(&mut client).await;
    rows.push(Row::per(
        format!("tool step (model call + list_dir + events), {steps}-step run"),
        started.elapsed(),
        steps + 1,
    ));

    // 4. Concurrent sessions: many one-step runs at once, each on its own connection.
    let sessions = 100 * scale;
    let mut clients = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        let mut c = daemon.client().await;
        let id = create(&mut c, &daemon).await;
        subscribe(&mut c, &id).await;
        clients.push((c, id));
    }
    let started = Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|(mut c, id)| {
            tokio::spawn(async move {
                prompt(&mut c, &id, "in parallel").await;
                wait_finished(&mut c).await;
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("session task");
    }
    let elapsed = started.elapsed();
    rows.push(Row::ms(
        format!("{sessions} concurrent one-step runs, wall time"),
        elapsed,
    ));
    let throughput = sessions as f64 / elapsed.as_secs_f64();
    rows.push(Row::with(
        "  throughput",
        format!("{throughput:.0} runs/s"),
        throughput,
        "runs/s",
    ));

    // 5. Memory per idle session (resident set of a daemon of its own: in this one, what the
    // runs above freed would be reused, or what they still hold counted).
    idle_session_memory(scale, rows).await;

    // 6. Resume: restart, then load one big session (history replayed from its log).
    let big = create(&mut client, &daemon).await;
    subscribe(&mut client, &big).await;
    let turns = 300 * scale;
    for i in 0..turns {
        prompt(&mut client, &big, &format!("turn {i}: {}", "x".repeat(400))).await;
        wait_finished(&mut client).await;
    }
    drop(client);
    let file = daemon
        .env
        .path("state")
        .join("agentd/sessions")
        .join(format!("{big}.jsonl"));
    let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    daemon.signal(libc::SIGTERM);
    daemon.wait_exit().await;
    let started = Instant::now();
    daemon.restart().await;
    let restart = started.elapsed();
    let mut client = daemon.client().await;
    let started = Instant::now();
    let got = client
        .request(
            "session/get",
            json!({"sessionId": big, "includeHistory": true}),
        )
        .await
        .expect("get");
    let load = started.elapsed();
    let messages = got["history"].as_array().map_or(0, Vec::len);
    rows.push(Row::ms("daemon restart (start → answering)", restart));
    rows.push(Row::ms(
        format!(
            "load a session of {messages} messages ({:.1} MiB log) after restart",
            bytes as f64 / (1024.0 * 1024.0)
        ),
        load,
    ));

    drop(client);
    daemon.signal(libc::SIGTERM);
    daemon.wait_exit().await;

    // 7. Listing many sessions that are not loaded (persisted by an earlier daemon).
    list_many_sessions(10_000 * scale, rows).await;

    // 8. Background tasks.
    tasks::figures(scale, rows).await;

    // 9. Extensions: the prefix-stability counter.
    extensions::figures(scale, rows).await;
    restart::figures(scale, rows).await;

    // 10. Forks of a 10,000-entry session, and the fork's request prefix.
    fork::figures(scale, rows).await;

    // 11. Checkpoints of a 10,000-file tree.
    checkpoint::figures(scale, rows).await;

    // 12. MCP servers, and a first request with 500 MCP tools listed and searched.
    mcp::figures(scale, rows).await;
    tool_search::figures(rows).await;
}

/// The resident memory a loaded idle session adds: a fresh daemon, 100 sessions created first
/// (what the first ones make once), then `500 × scale` more, never prompted or followed.
async fn idle_session_memory(scale: usize, rows: &mut Vec<Row>) {
    let env = TestEnv::new()
        .var("OPENAI_API_KEY", "bench")
        .var("AGENTD_LOG", "warn");
    let mut daemon = Daemon::start_in(env).await;
    let mut client = daemon.client().await;
    for _ in 0..100 {
        create(&mut client, &daemon).await;
    }
    let rss_before = rss_kib(daemon.pid());
    let more = 500 * scale;
    for _ in 0..more {
        create(&mut client, &daemon).await;
    }
    let rss_after = rss_kib(daemon.pid());
    if let (Some(before), Some(after)) = (rss_before, rss_after) {
        let per_session = (after.saturating_sub(before)) as f64 / more as f64;
        rows.push(Row::with(
            format!("daemon RSS after {more} more idle sessions (goal ≤ 10 KiB each)"),
            format!("{before} KiB → {after} KiB ({per_session:.1} KiB/session)"),
            per_session,
            "KiB/session",
        ));
    }
    drop(client);
    daemon.signal(libc::SIGTERM);
    daemon.wait_exit().await;
}

/// Write `count` session files, start a daemon on them and time `session/list`: the first pages
/// (summaries read from the files once), the same again (from memory), and after a restart
/// (from `sessions/index.json`).
async fn list_many_sessions(count: usize, rows: &mut Vec<Row>) {
    let env = TestEnv::new()
        .var("OPENAI_API_KEY", "bench")
        .var("AGENTD_LOG", "warn");
    let dir = env.path("state").join("agentd/sessions");
    std::fs::create_dir_all(&dir).expect("sessions dir");
    let cwd = env.workspace().display().to_string();
    for i in 0..count {
        let id = format!("ses_{i:032x}");
        let mut text = format!(
            r#"{{"type":"header","version":1,"id":"{id}","createdAt":"2026-11-{:02}T00:00:00Z","cwd":{cwd:?},"provider":"openai","model":"m","systemPrompt":"{}"}}"#,
            1 + i % 28,
            "s".repeat(2000)
        );
        text.push('\n');
        for seq in 1..=20 {
            text.push_str(&format!(
                r#"{{"type":"event","seq":{seq},"event":{{"type":"warning","message":"event {seq}"}}}}"#
            ));
            text.push('\n');
        }
        std::fs::write(dir.join(format!("{id}.jsonl")), text).expect("write session file");
    }
    let started = Instant::now();
    let mut daemon = Daemon::start_in(env).await;
    rows.push(Row::ms(
        format!("daemon start with {count} sessions on disk"),
        started.elapsed(),
    ));
    let mut client = daemon.client().await;
    let (cold, pages) = list_all(&mut client).await;
    let (warm, _) = list_all(&mut client).await;
    let mut small_pages = Vec::new();
    for limit in [100, 1] {
        let calls = 50;
        let started = Instant::now();
        for _ in 0..calls {
            client
                .request("session/list", json!({"limit": limit}))
                .await
                .expect("session/list");
        }
        small_pages.push((limit, started.elapsed(), calls));
    }
    drop(client);
    daemon.signal(libc::SIGTERM);
    daemon.wait_exit().await;
    daemon.restart().await;
    let mut client = daemon.client().await;
    let (indexed, _) = list_all(&mut client).await;
    let page = |what: String, total: Duration| {
        Row::with(
            what,
            format!("{} per page of 1000", per(total, pages)),
            per_ms(total, pages),
            "ms",
        )
    };
    rows.push(page(
        format!("session/list of {count} sessions, first time (from the files)"),
        cold,
    ));
    rows.push(page("  again (from memory)".to_owned(), warm));
    rows.push(page(
        "  after a restart (from sessions/index.json)".to_owned(),
        indexed,
    ));
    for (limit, total, calls) in small_pages {
        rows.push(Row::per(
            format!("  first page of {limit} (from memory)"),
            total,
            calls,
        ));
    }
}

/// Every page of `session/list` (1000 per page): total time and pages.
async fn list_all(client: &mut Client) -> (Duration, usize) {
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    let started = Instant::now();
    loop {
        let mut params = json!({"limit": 1000});
        if let Some(cursor) = &cursor {
            params["cursor"] = json!(cursor);
        }
        let page = client
            .request("session/list", params)
            .await
            .expect("session/list");
        pages += 1;
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return (started.elapsed(), pages),
        }
    }
}

async fn create(client: &mut Client, daemon: &Daemon) -> String {
    let result = client
        .request(
            "session/create",
            json!({"cwd": daemon.env.workspace().display().to_string()}),
        )
        .await
        .expect("session/create");
    result["sessionId"].as_str().expect("sessionId").to_owned()
}

async fn subscribe(client: &mut Client, session: &str) -> Value {
    client
        .request("session/subscribe", json!({"sessionId": session}))
        .await
        .expect("subscribe")
}

async fn prompt(client: &mut Client, session: &str, text: &str) {
    client
        .request(
            "session/prompt",
            json!({"sessionId": session, "text": text}),
        )
        .await
        .expect("prompt");
}

async fn wait_finished(client: &mut Client) {
    loop {
        let event = client.next_notification_result().await;
        if event["event"]["type"] == "runFinished" {
            return;
        }
    }
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}
