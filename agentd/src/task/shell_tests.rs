//! Tests of a background command's run: output and exit into the file, the stop kills the
//! whole group.

use super::*;
use crate::task::shell_output::read_file;
use agentd_policy::process::test_support::{process_is_dead, wait_until_dead};

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
    let ending = run_to_file(child, output, CancellationToken::new(), || {}).await;
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
    let ending = run_to_file(child, output, CancellationToken::new(), || {}).await;
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
    let run = tokio::spawn(run_to_file(child, output, stop.clone(), || {}));
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

/// A manager in a temp state dir, the shells, and a sandbox that confines nothing.
fn daemon_parts(state: &std::path::Path) -> (Arc<TaskManager>, Arc<ShellTasks>, Arc<ShellSandbox>) {
    (
        TaskManager::load(state, super::super::TaskLimits::default()),
        ShellTasks::new(4096),
        Arc::new(ShellSandbox::none("tests")),
    )
}

/// Waits for the `Finished` change of `task_id`.
async fn finished(
    changes: &mut tokio::sync::broadcast::Receiver<super::super::TaskChange>,
    task_id: &str,
) -> TaskRecord {
    loop {
        if let super::super::TaskChange::Finished(info) = changes.recv().await.unwrap()
            && info.task_id == task_id
        {
            return info;
        }
    }
}

/// The pid the command wrote to `file` once it said `started`.
async fn sleeper_pid(manager: &TaskManager, task_id: &str, file: &std::path::Path) -> i32 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never started"
        );
        let read = super::super::shell_output::read(manager, task_id, 0, None)
            .await
            .unwrap();
        if read.text.contains("started") {
            return std::fs::read_to_string(file)
                .unwrap()
                .trim()
                .parse()
                .unwrap();
        }
        tokio::task::yield_now().await;
    }
}

const SLEEPER: &str = "sleep 300 & echo $! > sleeper; echo started; wait";

fn shell(command: &str, cwd: &std::path::Path, session: &str) -> ShellStart {
    ShellStart {
        command: command.to_owned(),
        cwd: cwd.to_path_buf(),
        session_id: Some(session.to_owned()),
    }
}

#[tokio::test]
async fn a_background_command_records_its_exit_and_output_on_the_task() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (manager, shells, sandbox) = daemon_parts(state.path());
    let mut changes = manager.changes();
    let task = shells
        .start(
            &manager,
            &sandbox,
            shell("echo hello; exit 7", work.path(), "ses_a"),
        )
        .await
        .unwrap();
    assert_eq!(task.kind, TaskKind::Shell);
    assert_eq!(task.status, TaskStatus::Running);
    assert_eq!(task.parent_session_id.as_deref(), Some("ses_a"));
    let done = finished(&mut changes, &task.task_id).await;
    assert_eq!(done.status, TaskStatus::Failed);
    assert_eq!(done.exit_code, Some(7));
    assert_eq!(done.result.as_deref(), Some("exited with code 7"));
    let output = super::super::shell_output::read(&manager, &task.task_id, 0, None)
        .await
        .unwrap();
    assert_eq!(output.text, "hello\n");

    let task = shells
        .start(&manager, &sandbox, shell("true", work.path(), "ses_a"))
        .await
        .unwrap();
    let done = finished(&mut changes, &task.task_id).await;
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(done.exit_code, Some(0));
}

/// What a background command created of the project's configuration is said after its
/// result.
#[tokio::test]
async fn a_background_command_that_plants_configuration_has_it_said_on_the_task() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join(".git")).unwrap();
    let (manager, shells, sandbox) = daemon_parts(state.path());
    let mut changes = manager.changes();
    let task = shells
        .start(
            &manager,
            &sandbox,
            shell("echo notes > AGENTS.md", work.path(), "ses_a"),
        )
        .await
        .unwrap();
    let done = finished(&mut changes, &task.task_id).await;
    assert_eq!(done.status, TaskStatus::Completed);
    let result = done.result.unwrap();
    assert!(
        result.starts_with("exited with code 0\n[this command created AGENTS.md;"),
        "{result}"
    );
}

#[tokio::test]
async fn task_stop_kills_the_whole_group_and_records_cancelled() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (manager, shells, sandbox) = daemon_parts(state.path());
    let mut changes = manager.changes();
    let task = shells
        .start(&manager, &sandbox, shell(SLEEPER, work.path(), "ses_a"))
        .await
        .unwrap();
    let pid = sleeper_pid(&manager, &task.task_id, &work.path().join("sleeper")).await;
    assert!(!process_is_dead(pid));
    manager.stop(&task.task_id).await.unwrap();
    let done = finished(&mut changes, &task.task_id).await;
    assert_eq!(done.status, TaskStatus::Cancelled);
    wait_until_dead(pid).await;
}

#[tokio::test]
async fn deleting_the_session_kills_only_its_shells() {
    let state = tempfile::tempdir().unwrap();
    let work_a = tempfile::tempdir().unwrap();
    let work_b = tempfile::tempdir().unwrap();
    let (manager, shells, sandbox) = daemon_parts(state.path());
    let mut changes = manager.changes();
    let mine = shells
        .start(&manager, &sandbox, shell(SLEEPER, work_a.path(), "ses_a"))
        .await
        .unwrap();
    let other = shells
        .start(&manager, &sandbox, shell(SLEEPER, work_b.path(), "ses_b"))
        .await
        .unwrap();
    let mine_pid = sleeper_pid(&manager, &mine.task_id, &work_a.path().join("sleeper")).await;
    let other_pid = sleeper_pid(&manager, &other.task_id, &work_b.path().join("sleeper")).await;
    shells.stop_for_session("ses_a");
    let done = finished(&mut changes, &mine.task_id).await;
    assert_eq!(done.status, TaskStatus::Cancelled);
    wait_until_dead(mine_pid).await;
    assert!(!process_is_dead(other_pid));
    assert_eq!(manager.stop_for_session("ses_b").await, 1);
    finished(&mut changes, &other.task_id).await;
    wait_until_dead(other_pid).await;
}

#[tokio::test]
async fn shutdown_kills_every_shell_and_waits_for_their_records() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (manager, shells, sandbox) = daemon_parts(state.path());
    let task = shells
        .start(&manager, &sandbox, shell(SLEEPER, work.path(), "ses_a"))
        .await
        .unwrap();
    let pid = sleeper_pid(&manager, &task.task_id, &work.path().join("sleeper")).await;
    // As the daemon does: the manager cancels every task, then the shells are awaited.
    manager.shutdown().await;
    shells.shutdown(std::time::Duration::from_secs(10)).await;
    // Nobody stopped it: a shell killed by the daemon's stop ends `interrupted`.
    assert_eq!(
        manager.get(&task.task_id).unwrap().status,
        TaskStatus::Interrupted
    );
    wait_until_dead(pid).await;
}

#[tokio::test]
async fn the_number_of_running_background_commands_is_capped() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (manager, _, sandbox) = daemon_parts(state.path());
    let shells = ShellTasks::with_max_running(4096, 1);
    let mut changes = manager.changes();
    let first = shells
        .start(&manager, &sandbox, shell(SLEEPER, work.path(), "ses_a"))
        .await
        .unwrap();
    let refused = shells
        .start(&manager, &sandbox, shell("true", work.path(), "ses_a"))
        .await
        .unwrap_err();
    assert!(
        refused.starts_with("1 background commands are running already"),
        "{refused}"
    );
    assert!(refused.contains("task_stop"), "{refused}");
    assert_eq!(manager.list(&super::super::TaskFilter::default()).len(), 1);
    manager.stop(&first.task_id).await.unwrap();
    finished(&mut changes, &first.task_id).await;
    let second = shells
        .start(&manager, &sandbox, shell("true", work.path(), "ses_a"))
        .await
        .unwrap();
    finished(&mut changes, &second.task_id).await;
}
