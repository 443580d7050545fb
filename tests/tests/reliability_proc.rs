//! Reliability of what tools touch outside the daemon: files that must not block or balloon
//! it, processes that must not outlive it, and a stop that fits the service manager's limit.

use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use protocol::event::RunStatus;
use serde_json::json;

/// The daemon's peak resident memory (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read status");
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .expect("VmHWM in /proc/<pid>/status");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|value| value.parse().ok())
        .expect("VmHWM value");
    kib * 1024
}

/// The result of tool call `id` (parallel calls complete in any order).
fn result_of<'a>(results: &'a [(String, String, bool)], id: &str) -> (&'a str, bool) {
    let (_, output, is_error) = results
        .iter()
        .find(|(call, _, _)| call == id)
        .unwrap_or_else(|| panic!("no result for {id}: {results:#?}"));
    (output, *is_error)
}

/// read_file, grep and edit_file on a FIFO answer at once with an error the model can read;
/// none of them waits for a writer that never comes.
#[tokio::test]
async fn tools_refuse_a_fifo_at_once() {
    let s = Scenario::start(Format::OpenAi).await;
    mkfifo(&s.workspace().join("pipe"));
    s.mock.push(Reply::tool_calls(vec![
        ("c_read", "read_file", json!({"path": "pipe"}).to_string()),
        (
            "c_grep",
            "grep",
            json!({"pattern": "x", "path": "pipe"}).to_string(),
        ),
        (
            "c_edit",
            "edit_file",
            json!({"path": "pipe", "oldText": "a", "newText": "b"}).to_string(),
        ),
    ]));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "read the pipe").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed, "{events:#?}");
    let results = tool_results(&events);
    assert_eq!(results.len(), 3, "{results:#?}");
    let (read, read_failed) = result_of(&results, "c_read");
    assert!(read_failed, "{read}");
    assert!(read.contains("named pipe (FIFO)"), "{read}");
    let (grep, _) = result_of(&results, "c_grep");
    assert!(grep.starts_with("no matches"), "{grep}");
    let (edit, edit_failed) = result_of(&results, "c_edit");
    assert!(edit_failed, "{edit}");
    assert!(edit.contains("named pipe (FIFO)"), "{edit}");
}

/// A 64 MiB file of one line costs read_file and grep a bounded amount of memory, and both
/// say what they left out.
#[tokio::test]
async fn a_huge_single_line_file_costs_bounded_memory() {
    const SIZE: usize = 64 * 1024 * 1024;
    let s = Scenario::start(Format::OpenAi).await;
    let mut line = vec![b'a'; SIZE];
    line.extend_from_slice(b"needle\n");
    std::fs::write(s.workspace().join("big.txt"), &line).unwrap();
    drop(line);
    s.mock.push(Reply::tool_calls(vec![
        (
            "c_read",
            "read_file",
            json!({"path": "big.txt"}).to_string(),
        ),
        (
            "c_grep",
            "grep",
            json!({"pattern": "a+", "path": "big.txt"}).to_string(),
        ),
    ]));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    let before = peak_rss(s.daemon.pid());
    client.prompt(&session, "read the big file").await;
    let events = client.events_until_run_finished().await;
    let after = peak_rss(s.daemon.pid());
    assert_eq!(run_status(&events), RunStatus::Completed, "{events:#?}");
    let results = tool_results(&events);
    let (read, read_failed) = result_of(&results, "c_read");
    assert!(!read_failed, "{read}");
    assert!(read.contains("[… line cut]"), "{read}");
    let (grep, grep_failed) = result_of(&results, "c_grep");
    assert!(!grep_failed, "{grep}");
    assert!(grep.starts_with("big.txt:1: aaaa"), "{grep}");
    assert!(grep.contains("searched in their first"), "{grep}");
    let grown = after.saturating_sub(before);
    assert!(
        grown < 16 * 1024 * 1024,
        "the daemon's peak memory grew by {} MiB reading a {} MiB line",
        grown / (1024 * 1024),
        SIZE / (1024 * 1024)
    );
}

/// Reads a pid a shell wrote (`echo $$ > name`), once the line is complete.
async fn pid_file(s: &Scenario, name: &str) -> i32 {
    let path = s.workspace().join(name);
    wait_until(&format!("the pid file {name}"), || {
        std::fs::read_to_string(&path).is_ok_and(|text| text.ends_with('\n'))
    })
    .await;
    std::fs::read_to_string(&path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// A daemon killed with SIGKILL mid run_shell leaves nothing running once it restarts: not the
/// shell, not a background job in its group, not one that cleared its environment, not one
/// that left the group with `setsid`.
#[tokio::test]
async fn no_tool_process_survives_a_killed_daemon_after_restart() {
    let mut s = Scenario::start(Format::OpenAi).await;
    let command = "sleep 60 & echo $! > group.pid; \
                   env -i sleep 60 & echo $! > cleared.pid; \
                   setsid sh -c 'echo $$ > escaped.pid; exec sleep 60' & \
                   echo $$ > shell.pid; wait";
    s.mock.push(Reply::tool_call(
        "c_sh",
        "run_shell",
        json!({"command": command}),
    ));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "start things").await;
    client
        .persisted_events_until(|event| matches!(event, protocol::event::Event::ToolStarted { .. }))
        .await;
    let mut pids = Vec::new();
    for name in ["shell.pid", "group.pid", "cleared.pid", "escaped.pid"] {
        pids.push((name, pid_file(&s, name).await));
    }
    for (name, pid) in &pids {
        assert!(!process_gone(*pid), "{name} runs before the kill");
    }
    s.daemon.kill().await;
    drop(client);
    s.daemon.restart().await;
    for (name, pid) in pids {
        wait_until(&format!("{name} ({pid}) to be killed"), || {
            process_gone(pid)
        })
        .await;
    }
}

/// A child that left the process group (`setsid`) and holds the output pipe cannot keep
/// run_shell past its timeout: the call returns soon after it, says it timed out, and the
/// child is killed.
#[tokio::test]
async fn a_setsid_child_cannot_hold_run_shell_past_its_timeout() {
    let s = Scenario::start(Format::OpenAi).await;
    let command = "setsid sh -c 'echo $$ > escaped.pid; exec sleep 60' & sleep 60";
    s.mock.push(Reply::tool_call(
        "c_sh",
        "run_shell",
        json!({"command": command, "timeoutMs": 1000}),
    ));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    let started = std::time::Instant::now();
    client.prompt(&session, "hold the pipe").await;
    let events = client.events_until_run_finished().await;
    let elapsed = started.elapsed();
    assert!(
        elapsed < std::time::Duration::from_secs(6),
        "run_shell with a 1 s timeout took {elapsed:?}"
    );
    assert_eq!(run_status(&events), RunStatus::Completed, "{events:#?}");
    let results = tool_results(&events);
    let (output, is_error) = result_of(&results, "c_sh");
    assert!(is_error, "{output}");
    assert!(output.contains("timed out after 1s"), "{output}");
    let escaped = pid_file(&s, "escaped.pid").await;
    wait_until("the setsid child to be killed", || process_gone(escaped)).await;
    // Orphaned to the daemon (a child subreaper), it is also reaped by it: no zombie stays.
    let proc_entry = std::path::PathBuf::from(format!("/proc/{escaped}"));
    wait_until("the daemon to reap the killed setsid child", || {
        !proc_entry.exists()
    })
    .await;
}

/// A command that leaves a child running in its process group and exits (`(sleep 60 &)`,
/// or a tool that daemonizes, like git's detached auto-maintenance) ends when the command
/// does: the orphan, re-parented to the daemon, is killed with the group instead of being
/// waited for.
#[tokio::test]
async fn an_orphan_left_in_the_group_does_not_hold_run_shell() {
    let s = Scenario::start(Format::OpenAi).await;
    let command = "(sh -c 'echo $$ > orphan.tmp && mv orphan.tmp orphan.pid; exec sleep 60' &); \
                   while [ ! -s orphan.pid ]; do sleep 0.01; done; echo started";
    s.mock.push(Reply::tool_call(
        "c_sh",
        "run_shell",
        json!({"command": command, "timeoutMs": 120000}),
    ));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    let started = std::time::Instant::now();
    client.prompt(&session, "leave an orphan").await;
    let events = client.events_until_run_finished().await;
    let elapsed = started.elapsed();
    assert!(
        elapsed < std::time::Duration::from_secs(10),
        "run_shell waited {elapsed:?} for an orphan of its command"
    );
    let results = tool_results(&events);
    let (output, is_error) = result_of(&results, "c_sh");
    assert!(!is_error && output.starts_with("started"), "{output}");
    let orphan = pid_file(&s, "orphan.pid").await;
    let proc_entry = std::path::PathBuf::from(format!("/proc/{orphan}"));
    wait_until("the orphan to be killed and reaped", || {
        !proc_entry.exists()
    })
    .await;
}

/// SIGTERM while a run is busy and a client has stopped reading (its socket full of big
/// answers): the daemon still exits 0, within its stop deadline, far under systemd's
/// `TimeoutStopSec=30`.
#[tokio::test]
async fn sigterm_with_a_busy_run_and_a_stuck_client_exits_quickly() {
    let mut s = Scenario::start(Format::OpenAi).await;
    s.mock.push(Reply::tool_call(
        "c_sh",
        "run_shell",
        json!({"command": "sleep 60"}),
    ));
    let (mut client, session) = s.session().await;
    // A big prompt makes every `session/get` with history a big answer.
    client.prompt(&session, &"x".repeat(100_000)).await;
    client
        .persisted_events_until(|event| matches!(event, protocol::event::Event::ToolStarted { .. }))
        .await;

    let mut stuck = s.client().await;
    stuck.subscribe(&session, Some(0)).await;
    for _ in 0..100 {
        stuck
            .send_request(
                "session/get",
                &json!({"sessionId": session, "includeHistory": true}),
            )
            .await;
    }
    // The first answer arrives on the healthy client's connection only once the stuck
    // connection's requests were read; a round trip here makes sure they were.
    client.request("daemon/status", json!({})).await.unwrap();

    let started = std::time::Instant::now();
    s.daemon.signal(libc::SIGTERM);
    let status = s.daemon.wait_exit().await;
    let elapsed = started.elapsed();
    assert!(status.success(), "{status}");
    assert!(
        elapsed < std::time::Duration::from_secs(8),
        "the daemon took {elapsed:?} to stop"
    );
    drop(stuck);
}
