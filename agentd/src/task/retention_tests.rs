//! Tests of the retention passes: by count and by age, never a running task, a task whose end
//! is not on disk or whose notification is owed, and the files go with the records.

use super::*;
use crate::task::{NewTask, TaskFilter, TaskLimits};
use protocol::task::{TaskKind, TaskStatus};

fn shell(prompt: &str) -> NewTask {
    NewTask {
        kind: TaskKind::Shell,
        parent_session_id: None,
        agent_type: None,
        description: None,
        prompt: prompt.to_owned(),
        cwd: std::path::PathBuf::from("/work/project"),
        background: false,
    }
}

async fn finished(tasks: &TaskManager, prompt: &str, owed: bool) -> TaskRecord {
    let task = tasks.create(shell(prompt)).await.unwrap();
    std::fs::write(tasks.output_path(&task.task_id), "output").unwrap();
    tasks
        .update(&task.task_id, |task| {
            task.status = TaskStatus::Completed;
            task.notification_pending = owed;
        })
        .await
        .unwrap()
}

fn all(tasks: &TaskManager) -> Vec<String> {
    tasks
        .list(&TaskFilter {
            all: true,
            ..TaskFilter::default()
        })
        .into_iter()
        .map(|task| task.task_id)
        .collect()
}

#[tokio::test]
async fn the_oldest_finished_records_beyond_the_count_go_with_their_files() {
    let state = tempfile::tempdir().unwrap();
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    let old = finished(&tasks, "old", false).await;
    let owed = finished(&tasks, "owed", true).await;
    let running = tasks.create(shell("running")).await.unwrap();
    let newer = finished(&tasks, "newer", false).await;
    let newest = finished(&tasks, "newest", false).await;
    let keep_two = Retention {
        keep_finished: 2,
        max_age: None,
    };
    assert_eq!(tasks.prune_once(keep_two, SystemTime::now()).await, 1);
    // The owed one is kept until it is delivered, the running one always.
    assert_eq!(
        all(&tasks),
        [&newest, &newer, &running, &owed].map(|task| task.task_id.clone())
    );
    let dir = state.path().join("tasks");
    assert!(!store::record_path(&dir, &old.task_id).exists());
    assert!(!tasks.output_path(&old.task_id).exists());
    assert!(store::record_path(&dir, &newer.task_id).exists());
    assert!(tasks.output_path(&newer.task_id).exists());
    tasks.mark_notified(&owed.task_id).await;
    assert_eq!(tasks.prune_once(keep_two, SystemTime::now()).await, 1);
    assert!(!all(&tasks).contains(&owed.task_id));
    // And the next start reads what is left.
    let reloaded = TaskManager::load(state.path(), TaskLimits::default());
    assert_eq!(all(&reloaded).len(), 3);
}

#[tokio::test]
async fn records_older_than_the_age_go_whatever_the_count() {
    let state = tempfile::tempdir().unwrap();
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    let first = finished(&tasks, "first", false).await;
    let retention = Retention {
        keep_finished: 100,
        max_age: Some(Duration::from_secs(86_400)),
    };
    assert_eq!(tasks.prune_once(retention, SystemTime::now()).await, 0);
    let tomorrow = SystemTime::now() + Duration::from_secs(2 * 86_400);
    assert_eq!(tasks.prune_once(retention, tomorrow).await, 1);
    assert!(tasks.get(&first.task_id).is_none());
}

#[tokio::test]
async fn a_pass_prunes_a_bounded_batch() {
    let state = tempfile::tempdir().unwrap();
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    for index in 0..PRUNE_BATCH + 3 {
        finished(&tasks, &format!("task {index}"), false).await;
    }
    let keep_one = Retention {
        keep_finished: 1,
        max_age: None,
    };
    assert_eq!(
        tasks.prune_once(keep_one, SystemTime::now()).await,
        PRUNE_BATCH
    );
    assert_eq!(tasks.prune_once(keep_one, SystemTime::now()).await, 2);
    assert_eq!(all(&tasks).len(), 1);
}

#[tokio::test]
async fn the_pass_at_start_prunes_every_batch_before_it_returns() {
    let state = tempfile::tempdir().unwrap();
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    for index in 0..PRUNE_BATCH + 1 {
        finished(&tasks, &format!("task {index}"), false).await;
    }
    let reloaded = TaskManager::load(state.path(), TaskLimits::default());
    let keep_one = Retention {
        keep_finished: 1,
        max_age: None,
    };
    assert_eq!(reloaded.prune_at_start(keep_one), PRUNE_BATCH);
    assert_eq!(all(&reloaded).len(), 1);
    let files = std::fs::read_dir(state.path().join("tasks"))
        .unwrap()
        .count();
    assert_eq!(files, 2, "one record and its output are left");
}
