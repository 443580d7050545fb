//! Unit tests of the task manager: records, persistence, interrupted at load, changes, stop.

use super::*;

fn new_task(prompt: &str) -> NewTask {
    NewTask {
        kind: TaskKind::Subagent,
        parent_session_id: Some("ses_parent".to_owned()),
        agent_type: Some("explore".to_owned()),
        description: None,
        prompt: prompt.to_owned(),
        cwd: PathBuf::from("/work/project"),
        background: false,
    }
}

#[tokio::test]
async fn a_task_is_recorded_persisted_and_announced() {
    let state = tempfile::tempdir().unwrap();
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    let mut changes = tasks.changes();
    let long_line = "x".repeat(200);
    let created = tasks
        .create(new_task(&format!("\n  {long_line}\nsecond line")))
        .await
        .unwrap();
    assert!(created.task_id.starts_with("task_"));
    assert!(created.task_id[5..].chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(created.status, TaskStatus::Pending);
    assert_eq!(created.description, "x".repeat(MAX_DESCRIPTION_CHARS));
    assert_eq!(
        changes.recv().await.unwrap(),
        TaskChange::Started(created.clone())
    );

    let running = tasks
        .update(&created.task_id, |task| task.status = TaskStatus::Running)
        .await
        .unwrap();
    assert!(running.started_at.is_some());
    assert_eq!(changes.recv().await.unwrap(), TaskChange::Updated(running));
    let done = tasks
        .update(&created.task_id, |task| {
            task.status = TaskStatus::Completed;
            task.result = Some("done".to_owned());
        })
        .await
        .unwrap();
    assert!(done.finished_at.is_some());
    assert_eq!(
        changes.recv().await.unwrap(),
        TaskChange::Finished(done.clone())
    );
    assert!(tasks.stop_token(&created.task_id).is_cancelled());
    assert!(matches!(
        tasks.stop(&created.task_id).await,
        Err(TaskError::Finished { .. })
    ));

    use std::os::unix::fs::PermissionsExt;
    let dir = state.path().join("tasks");
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&store::record_path(&dir, &created.task_id)), 0o600);
    let reloaded = TaskManager::load(state.path(), TaskLimits::default());
    assert_eq!(reloaded.get(&created.task_id), Some(done));
}

#[tokio::test]
async fn pending_and_running_tasks_are_interrupted_at_the_next_start() {
    let state = tempfile::tempdir().unwrap();
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    let pending = tasks.create(new_task("wait")).await.unwrap();
    let running = tasks.create(new_task("run")).await.unwrap();
    tasks
        .update(&running.task_id, |task| task.status = TaskStatus::Running)
        .await
        .unwrap();
    let done = tasks.create(new_task("done")).await.unwrap();
    tasks
        .update(&done.task_id, |task| task.status = TaskStatus::Failed)
        .await
        .unwrap();
    drop(tasks);

    let again = TaskManager::load(state.path(), TaskLimits::default());
    for id in [&pending.task_id, &running.task_id] {
        let task = again.get(id).unwrap();
        assert_eq!(task.status, TaskStatus::Interrupted);
        assert_eq!(task.error.as_deref(), Some(INTERRUPTED_ERROR));
    }
    assert_eq!(again.get(&done.task_id).unwrap().status, TaskStatus::Failed);
    // Newest first; finished ones only with `all`.
    let ids = |list: Vec<TaskRecord>| list.into_iter().map(|t| t.task_id).collect::<Vec<_>>();
    assert!(again.list(&TaskFilter::default()).is_empty());
    let all = TaskFilter {
        all: true,
        ..TaskFilter::default()
    };
    assert_eq!(
        ids(again.list(&all)),
        [
            done.task_id.clone(),
            running.task_id.clone(),
            pending.task_id.clone()
        ]
    );
    // And the interrupted state itself was written back.
    let third = TaskManager::load(state.path(), TaskLimits::default());
    assert_eq!(
        third.get(&running.task_id).unwrap().finished_at,
        again.get(&running.task_id).unwrap().finished_at
    );
}

#[tokio::test]
async fn stop_cancels_the_token_and_shutdown_cancels_every_task() {
    let state = tempfile::tempdir().unwrap();
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    let first = tasks.create(new_task("one")).await.unwrap();
    let second = tasks.create(new_task("two")).await.unwrap();
    let token = tasks.stop_token(&first.task_id);
    assert!(!token.is_cancelled());
    tasks.stop(&first.task_id).await.unwrap();
    assert!(token.is_cancelled());
    assert!(matches!(
        tasks.stop("task_nope").await,
        Err(TaskError::NotFound(_))
    ));

    let second_token = tasks.stop_token(&second.task_id);
    let runner = {
        let tasks = tasks.clone();
        let ids = [first.task_id.clone(), second.task_id.clone()];
        async move {
            second_token.cancelled().await;
            for id in ids {
                tasks
                    .update(&id, |task| task.status = TaskStatus::Cancelled)
                    .await
                    .unwrap();
            }
        }
    };
    tokio::join!(tasks.shutdown(), runner);
    assert_eq!(
        tasks.get(&second.task_id).unwrap().status,
        TaskStatus::Cancelled
    );
    let late = tasks.create(new_task("late")).await.unwrap();
    assert!(tasks.stop_token(&late.task_id).is_cancelled());
}

#[tokio::test]
async fn listing_ten_thousand_finished_tasks_reads_memory_only() {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().join("tasks");
    agentd_core::paths::prepare_private_dir(&dir).unwrap();
    for index in 0..10_000 {
        let record = TaskRecord {
            task_id: format!("task_{index:08x}"),
            kind: TaskKind::Subagent,
            status: TaskStatus::Completed,
            parent_session_id: None,
            child_session_id: None,
            agent_type: None,
            description: "d".to_owned(),
            cwd: "/w".to_owned(),
            created_at: format!("2026-01-01T00:00:00.{index:06}Z"),
            started_at: None,
            finished_at: None,
            result: None,
            error: None,
            exit_code: None,
            usage: Default::default(),
            notification_pending: false,
            not_persisted: false,
            stalled: false,
            background: false,
        };
        std::fs::write(
            store::record_path(&dir, &record.task_id),
            serde_json::to_vec(&record).unwrap(),
        )
        .unwrap();
    }
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    // Remove the files: the listing must come from memory.
    std::fs::remove_dir_all(&dir).unwrap();
    let all = tasks.list(&TaskFilter {
        all: true,
        ..TaskFilter::default()
    });
    assert_eq!(all.len(), 10_000);
    assert_eq!(all[0].task_id, "task_0000270f");
}

#[tokio::test]
async fn stopping_a_parents_tasks_cancels_only_theirs() {
    let state = tempfile::tempdir().unwrap();
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    let mine = tasks.create(new_task("mine")).await.unwrap();
    let mut other = new_task("other");
    other.parent_session_id = Some("ses_other".to_owned());
    let other = tasks.create(other).await.unwrap();
    assert_eq!(tasks.stop_for_session("ses_parent").await, 1);
    assert!(tasks.stop_token(&mine.task_id).is_cancelled());
    assert!(!tasks.stop_token(&other.task_id).is_cancelled());
}

#[tokio::test]
async fn a_deferred_update_is_announced_at_once_written_by_shutdown_and_never_an_end() {
    let state = tempfile::tempdir().unwrap();
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    let created = tasks.create(new_task("deferred")).await.unwrap();
    let mut changes = tasks.changes();
    let running = tasks
        .update_deferred(&created.task_id, |task| {
            task.status = TaskStatus::Running;
            task.child_session_id = Some("ses_child".to_owned());
        })
        .unwrap();
    assert_eq!(running.status, TaskStatus::Running);
    assert!(running.started_at.is_some());
    assert_eq!(
        changes.recv().await.unwrap(),
        TaskChange::Updated(running.clone())
    );
    // An end is never taken this way: it must be on disk before it is announced.
    let still = tasks
        .update_deferred(&created.task_id, |task| task.status = TaskStatus::Completed)
        .unwrap();
    assert_eq!(still.status, TaskStatus::Running);
    tasks.shutdown().await;
    let text = std::fs::read_to_string(
        state
            .path()
            .join("tasks")
            .join(format!("{}.json", created.task_id)),
    )
    .unwrap();
    assert!(text.contains("ses_child"), "{text}");
}

#[tokio::test]
async fn writes_with_nothing_new_are_skipped_and_every_change_still_reaches_the_disk() {
    let state = tempfile::tempdir().unwrap();
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    let created = tasks.create(new_task("coalesced")).await.unwrap();
    let path = state
        .path()
        .join("tasks")
        .join(format!("{}.json", created.task_id));
    let inode = |path: &std::path::Path| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).unwrap().ino()
    };
    // Nothing changed since the create was written: no new write (a write is a new file
    // renamed over the old one).
    let before = inode(&path);
    tasks.persist(&created.task_id).await.unwrap();
    assert_eq!(inode(&path), before);
    // Two changes in a row, then the end: each is on disk once the writes are done.
    tasks
        .update_deferred(&created.task_id, |task| {
            task.child_session_id = Some("ses_child".to_owned());
        })
        .unwrap();
    tasks
        .update_deferred(&created.task_id, |task| task.status = TaskStatus::Running)
        .unwrap();
    tasks
        .update(&created.task_id, |task| {
            task.status = TaskStatus::Completed;
            task.result = Some("done".to_owned());
        })
        .await
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("ses_child") && text.contains("completed") && text.contains("done"),
        "{text}"
    );
    tasks.shutdown().await;
    let after_shutdown = std::fs::read_to_string(&path).unwrap();
    assert_eq!(after_shutdown, text);
}
