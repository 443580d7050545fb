//! Tests of a background command's run: output and exit into the file, the stop kills the
//! whole group.

use super::*;
use crate::process::tests::{process_is_dead, wait_until_dead};
use crate::task::shell_output::read_file;

async fn start(
    script: &str,
    dir: &std::path::Path,
    max_bytes: usize,
) -> (ChildProcess, OutputFile) {
    let child = ChildProcess::spawn(ProcessSpec::shell(script, dir.to_path_buf()))
        .await
        .unwrap();
    let output = OutputFile::create(dir.join("task.out"), max_bytes)
        .await
        .unwrap();
    (child, output)
}

#[tokio::test]
async fn output_of_both_streams_and_the_exit_code_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let (child, output) = start("echo out; echo err >&2; exit 3", dir.path(), 4096).await;
    let ending = run_to_file(child, output, CancellationToken::new()).await;
    assert_eq!(ending, ShellEnding::Exited(3));
    let read = read_file(&dir.path().join("task.out"), 0, None).unwrap();
    let mut lines: Vec<&str> = read.text.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["err", "out"]);
}

#[tokio::test]
async fn a_huge_output_keeps_its_head_and_tail() {
    let dir = tempfile::tempdir().unwrap();
    let (child, output) = start("echo BEGIN; seq 1 200000; echo END", dir.path(), 2048).await;
    let ending = run_to_file(child, output, CancellationToken::new()).await;
    assert_eq!(ending, ShellEnding::Exited(0));
    let read = read_file(&dir.path().join("task.out"), 0, None).unwrap();
    assert!(read.text.starts_with("BEGIN\n1\n2\n"), "{}", read.text);
    assert!(
        read.text.ends_with("199999\n200000\nEND\n"),
        "{}",
        read.text
    );
    assert!(read.truncated);
    assert!(read.text.len() < 2200);
}

#[tokio::test]
async fn stop_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let (child, output) = start(
        "sleep 300 & echo $! > sleeper; echo started; wait",
        dir.path(),
        4096,
    )
    .await;
    let stop = CancellationToken::new();
    let run = tokio::spawn(run_to_file(child, output, stop.clone()));
    // The command says it started once the sleeper's pid is on disk (the outside world:
    // polled, with a deadline).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let pid: i32 = loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never started"
        );
        let read = read_file(&dir.path().join("task.out"), 0, None).unwrap();
        if read.text.contains("started") {
            break std::fs::read_to_string(dir.path().join("sleeper"))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
        }
        tokio::task::yield_now().await;
    };
    assert!(!process_is_dead(pid));
    stop.cancel();
    assert_eq!(run.await.unwrap(), ShellEnding::Stopped);
    wait_until_dead(pid).await;
}
