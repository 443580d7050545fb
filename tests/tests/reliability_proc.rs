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
    let (_, read, read_failed) = &results[0];
    assert!(read_failed, "{read}");
    assert!(read.contains("named pipe (FIFO)"), "{read}");
    let (_, grep, _) = &results[1];
    assert!(grep.starts_with("no matches"), "{grep}");
    let (_, edit, edit_failed) = &results[2];
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
    let (_, read, read_failed) = &results[0];
    assert!(!read_failed, "{read}");
    assert!(read.contains("[… line cut]"), "{read}");
    let (_, grep, grep_failed) = &results[1];
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
