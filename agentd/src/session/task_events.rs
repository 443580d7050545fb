//! `taskStarted`, `taskUpdated`, `taskResumed` and `taskFinished` events: every change of a task goes to the
//! daemon stream (`daemon/subscribe`, not persisted there) and to the log of the task's parent
//! session (persisted), in the order the task manager announced them. A task marked stalled is
//! a `taskUpdated` (with `stalled`) and a Notification for the hooks of its parent (of its own
//! session when it has none). At start, the notifications parents are still owed (recorded in
//! the task records) are delivered, each once.

use std::ops::ControlFlow;
use std::sync::{Arc, Weak};

use protocol::event::Event;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::SessionManager;
use super::change_forward::{ChangeNames, SESSION_APPEND_DEADLINE, forward_changes};
use super::events::DaemonStream;
use crate::task::TaskChange;

impl SessionManager {
    /// Start forwarding the task manager's changes (stopped with the evictor, at shutdown),
    /// and let runs start subagents (the deps learn of the manager). The task belongs to the
    /// sessions' task tracker; it holds the manager weakly.
    pub fn start_task_events(self: &Arc<Self>) {
        let _ = self.deps.manager.set(Arc::downgrade(self));
        let changes = self.deps.tasks.changes();
        let daemon = self.daemon.clone();
        let stop = self.evictor_stop.clone();
        self.tasks.spawn(forward_task_changes(
            changes,
            Arc::downgrade(self),
            daemon,
            stop,
        ));
        self.tasks
            .spawn(deliver_owed_notifications(Arc::downgrade(self)));
    }
}

/// Delivers the notifications owed when the daemon last stopped (a task that finished while
/// its parent held the notification, or during the stop), one at a time, in the order the
/// tasks were made; one already in its parent's history is only recorded as delivered.
async fn deliver_owed_notifications(sessions: Weak<SessionManager>) {
    let Some(owed) = sessions
        .upgrade()
        .map(|s| s.deps.tasks.owed_notifications())
    else {
        return;
    };
    if !owed.is_empty() {
        tracing::info!(
            count = owed.len(),
            "delivering task notifications owed since the last stop"
        );
    }
    for task in owed {
        let Some(sessions) = sessions.upgrade() else {
            return;
        };
        if sessions.deps.tasks.is_stopping() {
            return;
        }
        let notify_idle_parent = sessions.notify_idle_parent();
        let delivery =
            super::subagent::deliver_notification(&sessions, &task, notify_idle_parent, true).await;
        tracing::debug!(task = %task.task_id, ?delivery, "an owed task notification");
    }
}

/// The event of a change.
pub fn task_event(change: &TaskChange) -> Event {
    match change {
        TaskChange::Started(task) => Event::TaskStarted {
            task: Box::new(task.to_info()),
        },
        TaskChange::Updated(task) | TaskChange::Stalled(task) => Event::TaskUpdated {
            task: Box::new(task.to_info()),
        },
        TaskChange::Finished(task) => Event::TaskFinished {
            task: Box::new(task.to_info()),
        },
        TaskChange::Resumed(task) => Event::TaskResumed {
            task: Box::new(task.to_info()),
        },
    }
}

/// Forward each change to the daemon stream, then to the parent session's log. A forwarder
/// that falls behind loses changes (said in the daemon log); tasks never wait on it.
async fn forward_task_changes(
    changes: broadcast::Receiver<TaskChange>,
    sessions: Weak<SessionManager>,
    daemon: DaemonStream,
    stop: CancellationToken,
) {
    let names = ChangeNames {
        missed: "task events",
        one: "a task event",
    };
    forward_changes(changes, daemon, stop, names, task_event, |change, event| {
        log_in_parent(sessions.clone(), change, event)
    })
    .await;
}

/// Append the event of `change` to the log of the task's parent session, if it has one; the
/// forwarder ends once the session manager is gone.
async fn log_in_parent(
    sessions: Weak<SessionManager>,
    change: TaskChange,
    event: Event,
) -> ControlFlow<()> {
    let task = change.record();
    let Some(sessions) = sessions.upgrade() else {
        return ControlFlow::Break(());
    };
    if let TaskChange::Stalled(task) = &change {
        // Not awaited here: a slow hook must not hold up the other tasks' events.
        let sessions = Arc::clone(&sessions);
        let task = task.clone();
        let tracker = sessions.tasks.clone();
        tracker.spawn(async move { notify_stalled(&sessions, &task).await });
    }
    let Some(parent) = task.parent_session_id.as_deref() else {
        return ControlFlow::Continue(());
    };
    let append = async {
        let session = sessions.get(parent).await?;
        session.log.append(event).await?;
        anyhow::Ok(())
    };
    match tokio::time::timeout(SESSION_APPEND_DEADLINE, append).await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => tracing::debug!("a task event not logged in {parent}: {err:#}"),
        Err(_) => tracing::warn!("the log of {parent} took too long to take a task event"),
    }
    ControlFlow::Continue(())
}

/// The Notification hooks of a stalled task's parent (of its own session when it has none).
async fn notify_stalled(sessions: &SessionManager, task: &crate::task::TaskRecord) {
    let Some(session_id) = task
        .parent_session_id
        .as_deref()
        .or(task.child_session_id.as_deref())
    else {
        return;
    };
    let Ok(session) = sessions.get(session_id).await else {
        return;
    };
    let stall_secs = sessions
        .deps
        .config
        .snapshot()
        .ok()
        .and_then(|config| config.tasks.stall)
        .map_or(0, |stall| stall.as_secs());
    let kind = match task.kind {
        protocol::task::TaskKind::Shell => "shell",
        protocol::task::TaskKind::Subagent => task.agent_type.as_deref().unwrap_or("subagent"),
    };
    let message = format!(
        "task {} ({kind}) made no progress for {stall_secs}s; it may be stuck: look at it, or stop it",
        task.task_id
    );
    super::hooks::at_session_point(
        &session.header,
        &sessions.deps,
        &*session.log,
        agentd_agent::intercept::Point::Notification { message: &message },
    )
    .await;
}
