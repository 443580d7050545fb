//! Background subagents that go on after a restart. At start, a background subagent found
//! running (`crate::task`'s resumable tasks) whose child session was marked active resumes:
//! once it has a run slot, its record goes `running` again (`taskResumed`), its child session
//! loads and its run goes on (`runResumed` in the child's log), and the task is followed to its
//! end as if the daemon had never stopped: the end recorded, the parent notified. A task whose
//! child was not marked (it had not started its run) or with `resume_after_restart` off stays
//! `interrupted`.

use std::sync::Arc;

use protocol::task::TaskStatus;

use super::ChildOutcome;
use super::child::{Follow, RunEnd, outcome_of, record_end};
use super::deliver;
use crate::session::SessionManager;
use crate::task::TaskRecord;

/// Of the sessions marked active at start, the children of resumable tasks: each is followed
/// by a task of the session manager (spawned here), which loads it once its task has a slot.
/// Returns the marked sessions left for the caller (top-level ones and those of children that
/// do not resume). `enabled`: `[sessions] resume_after_restart`.
pub(crate) fn resume_background_tasks(
    sessions: &Arc<SessionManager>,
    marked: Vec<String>,
    enabled: bool,
) -> Vec<String> {
    let tasks = &sessions.deps.tasks;
    let mut left = marked;
    for task in tasks.resumable() {
        let child = task.child_session_id.clone().unwrap_or_default();
        let Some(position) = left.iter().position(|marked| *marked == child) else {
            tracing::info!(task_id = %task.task_id, "task {} was not running its prompt yet; it stays interrupted", task.task_id);
            tasks.give_up_resume(&task.task_id);
            continue;
        };
        if !enabled {
            tasks.give_up_resume(&task.task_id);
            continue;
        }
        left.swap_remove(position);
        let manager = Arc::clone(sessions);
        sessions
            .tasks
            .spawn(async move { follow_resumed(manager, task, child).await });
    }
    left
}

/// Waits for a slot, resumes the task and its child's run, and follows it to its end.
async fn follow_resumed(sessions: Arc<SessionManager>, task: TaskRecord, child_id: String) {
    let tasks = Arc::clone(&sessions.deps.tasks);
    let task_id = task.task_id.clone();
    let read_only = sessions
        .read_slots()
        .get(&child_id)
        .and_then(|slot| slot.header.tool_filter.as_ref().map(|f| f.is_read_only()))
        .unwrap_or(false);
    let slot = tokio::select! {
        slot = tasks.slot(std::path::Path::new(&task.cwd), read_only) => slot,
        () = sessions.evictor_stop.cancelled() => {
            // The daemon stops before the task had its turn: the next start resumes it.
            tasks.resume_later(&task_id).await;
            return;
        }
    };
    if let Err(err) = tasks.resume(&task_id).await {
        tracing::warn!("task {task_id} does not resume: {err}");
        return;
    }
    // Its child's run goes on as the session loads.
    sessions.mark_resumable(&child_id);
    let notify_parent = task.parent_session_id.is_some();
    let outcome = match sessions.get(&child_id).await {
        Ok(child) => follow_child(&tasks, &task_id, &child).await,
        Err(err) => Some(ChildOutcome {
            status: TaskStatus::Failed,
            result: None,
            error: Some(format!(
                "its session could not be loaded after the restart: {err}"
            )),
            usage: None,
        }),
    };
    let Some(outcome) = outcome else {
        // Suspended again by a stop: it resumes at the next start.
        tasks.suspended(&task_id);
        return;
    };
    record_end(&tasks, &task_id, outcome, notify_parent).await;
    drop(slot);
    if !tasks.is_stopping()
        && let Some(task) = tasks.get(&task_id)
        && task.notification_pending
    {
        let notify_idle_parent = sessions.notify_idle_parent();
        deliver(&sessions, &task, notify_idle_parent, false).await;
    }
}

/// Follows the run `child` was in when it loaded (resumed, or recorded interrupted by the
/// load) from the log's seq at the load; None: suspended by a stop.
async fn follow_child(
    tasks: &crate::task::TaskManager,
    task_id: &str,
    child: &crate::session::Session,
) -> Option<ChildOutcome> {
    let interrupted = |error: String| ChildOutcome {
        status: TaskStatus::Interrupted,
        result: None,
        error: Some(error),
        usage: None,
    };
    let Some(loaded) = child.loaded_run.clone() else {
        return Some(interrupted(
            "the daemon stopped while this task was starting; it was not re-run: start it again if it is still needed".to_owned(),
        ));
    };
    let mut subscription = match child.log.subscribe(Some(loaded.after_seq)).await {
        Ok(subscription) => subscription,
        Err(err) => {
            return Some(interrupted(format!(
                "cannot follow the resumed subagent: {err:#}"
            )));
        }
    };
    let follow = Follow {
        tasks,
        task_id,
        child,
        run_id: &loaded.run_id,
    };
    let end = 'replayed: {
        loop {
            let page = match child.log.replay_page(&mut subscription.replay).await {
                Ok(page) => page,
                Err(err) => {
                    tracing::warn!(task_id, "cannot read the resumed subagent's log: {err:#}");
                    break;
                }
            };
            if page.is_empty() {
                break;
            }
            if let Some(end) = page.iter().find_map(|event| follow.end_in(&event.event)) {
                break 'replayed end;
            }
        }
        let stop = tasks.stop_token(task_id);
        follow
            .live(
                &mut subscription.live,
                subscription.caught_up_to,
                stop.cancelled_owned(),
            )
            .await
    };
    match end {
        RunEnd::Ended {
            status,
            error,
            usage,
        } => Some(outcome_of(child, status, error, usage)),
        RunEnd::Suspended => None,
    }
}
