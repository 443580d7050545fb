//! Unit tests of what makes tasks durable and readable: paging, the retried final write and
//! `notPersisted`, owed notifications, and the stall watchdog.

use super::*;

fn shell(prompt: &str) -> NewTask {
    NewTask {
        kind: TaskKind::Shell,
        parent_session_id: Some("ses_parent".to_owned()),
        agent_type: None,
        description: None,
        prompt: prompt.to_owned(),
        cwd: PathBuf::from("/work/project"),
        background: false,
    }
}

fn every() -> TaskFilter {
    TaskFilter {
        all: true,
        ..TaskFilter::default()
    }
}

#[tokio::test]
async fn pages_follow_their_cursor_newest_first_without_gap_or_duplicate() {
    let state = tempfile::tempdir().unwrap();
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    let mut made = Vec::new();
    for index in 0..5 {
        made.push(
            tasks
                .create(shell(&format!("t{index}")))
                .await
                .unwrap()
                .task_id,
        );
    }
    made.reverse();
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let (page, next) = tasks.page(&every(), cursor.as_deref(), 2).unwrap();
        assert!(page.len() <= 2);
        seen.extend(page.into_iter().map(|task| task.task_id));
        match next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, made);
    // A page that ends exactly at the end says there is no more.
    let (page, next) = tasks.page(&every(), None, 5).unwrap();
    assert_eq!((page.len(), next), (5, None));
    assert!(matches!(
        tasks.page(&every(), Some("task_gone"), 2),
        Err(TaskError::UnknownCursor(_))
    ));
}

#[tokio::test]
async fn a_write_is_tried_again_after_each_delay_until_it_succeeds() {
    let attempts = std::sync::atomic::AtomicUsize::new(0);
    let delays = [std::time::Duration::from_millis(1); 3];
    let result = persist::write_with_retries(&delays, || {
        let attempt = attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            if attempt < 2 {
                Err(format!("attempt {attempt} failed"))
            } else {
                Ok(())
            }
        }
    })
    .await;
    assert_eq!(result, Ok(()));
    assert_eq!(attempts.load(std::sync::atomic::Ordering::SeqCst), 3);
    let failing = persist::write_with_retries(&delays, || async { Err("full".to_owned()) }).await;
    assert_eq!(failing, Err("full".to_owned()));
}

#[tokio::test]
async fn an_end_that_cannot_be_written_is_announced_not_persisted() {
    let state = tempfile::tempdir().unwrap();
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    let task = tasks.create(shell("sleep 1")).await.unwrap();
    let mut changes = tasks.changes();
    // Where the records go there is a file now: every write fails.
    let dir = state.path().join("tasks");
    std::fs::rename(&dir, state.path().join("moved")).unwrap();
    std::fs::write(&dir, "not a directory").unwrap();
    let ended = tasks
        .update(&task.task_id, |task| task.status = TaskStatus::Completed)
        .await
        .unwrap();
    assert!(ended.not_persisted, "{ended:?}");
    assert!(ended.to_info().not_persisted);
    let TaskChange::Finished(announced) = changes.recv().await.unwrap() else {
        panic!("not a finish")
    };
    assert!(announced.not_persisted, "{announced:?}");
    assert!(tasks.get(&task.task_id).unwrap().not_persisted);
    // An end that was written is not marked.
    std::fs::remove_file(&dir).unwrap();
    std::fs::rename(state.path().join("moved"), &dir).unwrap();
    let other = tasks.create(shell("true")).await.unwrap();
    let ended = tasks
        .update(&other.task_id, |task| task.status = TaskStatus::Completed)
        .await
        .unwrap();
    assert!(!ended.not_persisted);
}

#[tokio::test]
async fn an_owed_notification_survives_a_restart_until_it_is_marked_delivered() {
    let state = tempfile::tempdir().unwrap();
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    let task = tasks.create(shell("echo")).await.unwrap();
    tasks
        .update(&task.task_id, |task| {
            task.status = TaskStatus::Completed;
            task.notification_pending = true;
        })
        .await
        .unwrap();
    let reloaded = TaskManager::load(state.path(), TaskLimits::default());
    let owed: Vec<String> = reloaded
        .owed_notifications()
        .into_iter()
        .map(|task| task.task_id)
        .collect();
    assert_eq!(owed, std::slice::from_ref(&task.task_id));
    reloaded.mark_notified(&task.task_id).await;
    assert!(reloaded.owed_notifications().is_empty());
    let again = TaskManager::load(state.path(), TaskLimits::default());
    assert!(again.owed_notifications().is_empty());
    assert_eq!(
        again.get(&task.task_id).map(|task| task.status),
        Some(TaskStatus::Completed)
    );
}

#[tokio::test]
async fn a_task_without_progress_is_marked_stalled_until_it_makes_some() {
    let state = tempfile::tempdir().unwrap();
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    let mut changes = tasks.changes();
    let task = tasks.create(shell("sleep 100")).await.unwrap();
    let pending_only = tasks.create(shell("waiting")).await.unwrap();
    tasks
        .update(&task.task_id, |task| task.status = TaskStatus::Running)
        .await
        .unwrap();
    tasks.start_stall_watchdog(std::time::Duration::from_secs(1));
    let stalled = loop {
        if let TaskChange::Stalled(stalled) = changes.recv().await.unwrap() {
            break stalled;
        }
    };
    assert_eq!(stalled.task_id, task.task_id);
    assert!(stalled.to_info().stalled);
    assert!(tasks.get(&task.task_id).unwrap().stalled);
    assert!(!tasks.get(&pending_only.task_id).unwrap().stalled);
    tasks.progress(&task.task_id);
    let TaskChange::Updated(cleared) = changes.recv().await.unwrap() else {
        panic!("progress did not clear the mark")
    };
    assert!(!cleared.stalled);
    // Quiet again: marked again; and an end clears the mark.
    assert!(matches!(
        changes.recv().await.unwrap(),
        TaskChange::Stalled(_)
    ));
    let ended = tasks
        .update(&task.task_id, |task| task.status = TaskStatus::Completed)
        .await
        .unwrap();
    assert!(!ended.stalled);
    tasks.shutdown().await;
}
