//! Unit tests of resumable tasks: which tasks found running at start may resume, the record
//! going `interrupted` → `running`, and a suspended task the stop does not wait for.

use std::path::PathBuf;

use protocol::task::{TaskKind, TaskStatus};

use super::super::{INTERRUPTED_ERROR, NewTask, TaskChange, TaskLimits, TaskManager};

fn subagent(prompt: &str, background: bool) -> NewTask {
    NewTask {
        kind: TaskKind::Subagent,
        parent_session_id: Some("ses_parent".to_owned()),
        agent_type: Some("explore".to_owned()),
        description: None,
        prompt: prompt.to_owned(),
        cwd: PathBuf::from("/work/project"),
        background,
    }
}

/// Creates a task and takes it to `running` with a child session.
async fn running(tasks: &TaskManager, new: NewTask) -> String {
    let task = tasks.create(new).await.unwrap();
    tasks
        .update(&task.task_id, |task| {
            task.status = TaskStatus::Running;
            task.child_session_id = Some("ses_child".to_owned());
        })
        .await
        .unwrap();
    task.task_id
}

#[tokio::test]
async fn only_running_background_subagents_may_resume_and_resuming_runs_them_again() {
    let state = tempfile::tempdir().unwrap();
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    let background = running(&tasks, subagent("in the back", true)).await;
    let foreground = running(&tasks, subagent("in the front", false)).await;
    let pending = tasks
        .create(subagent("waiting", true))
        .await
        .unwrap()
        .task_id;
    drop(tasks);

    let again = TaskManager::load(state.path(), TaskLimits::default());
    let resumable: Vec<String> = again.resumable().into_iter().map(|t| t.task_id).collect();
    assert_eq!(resumable, std::slice::from_ref(&background));
    // Every one of them is interrupted until it resumes.
    for id in [&background, &foreground, &pending] {
        let task = again.get(id).unwrap();
        assert_eq!(task.status, TaskStatus::Interrupted, "{id}");
        assert_eq!(task.error.as_deref(), Some(INTERRUPTED_ERROR));
    }
    assert!(again.resume(&foreground).await.is_err());

    let mut changes = again.changes();
    let resumed = again.resume(&background).await.unwrap();
    assert_eq!(resumed.status, TaskStatus::Running);
    assert_eq!(resumed.error, None);
    assert_eq!(resumed.finished_at, None);
    assert_eq!(changes.recv().await.unwrap(), TaskChange::Resumed(resumed));
    assert!(!again.stop_token(&background).is_cancelled());
    // Once only.
    assert!(again.resume(&background).await.is_err());
    assert!(again.resumable().is_empty());
    // Written: a crash now finds it running, to resume again.
    drop(again);
    let third = TaskManager::load(state.path(), TaskLimits::default());
    let resumable: Vec<String> = third.resumable().into_iter().map(|t| t.task_id).collect();
    assert_eq!(resumable, [background]);
}

#[tokio::test]
async fn a_suspended_task_stays_running_and_the_stop_does_not_wait_for_it() {
    let state = tempfile::tempdir().unwrap();
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    let task_id = running(&tasks, subagent("long", true)).await;
    tasks.suspended(&task_id);
    // Nothing else holds a token: the stop ends at once, not after its wait.
    tokio::time::timeout(std::time::Duration::from_secs(2), tasks.shutdown())
        .await
        .expect("the stop waited for a suspended task");
    assert_eq!(tasks.get(&task_id).unwrap().status, TaskStatus::Running);
    drop(tasks);
    let again = TaskManager::load(state.path(), TaskLimits::default());
    assert_eq!(again.resumable().len(), 1);
}

#[tokio::test]
async fn a_resumable_task_given_up_stays_interrupted() {
    let state = tempfile::tempdir().unwrap();
    let tasks = TaskManager::load(state.path(), TaskLimits::default());
    let task_id = running(&tasks, subagent("long", true)).await;
    drop(tasks);
    let again = TaskManager::load(state.path(), TaskLimits::default());
    again.give_up_resume(&task_id);
    assert!(again.resumable().is_empty());
    assert!(again.resume(&task_id).await.is_err());
    assert_eq!(again.get(&task_id).unwrap().status, TaskStatus::Interrupted);
}
