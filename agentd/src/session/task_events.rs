//! `taskStarted`, `taskUpdated` and `taskFinished` events: every change of a task goes to the
//! daemon stream (`daemon/subscribe`, not persisted there) and to the log of the task's parent
//! session (persisted), in the order the task manager announced them.

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
    }
}

/// The event of a change.
pub fn task_event(change: &TaskChange) -> Event {
    match change {
        TaskChange::Started(task) => Event::TaskStarted {
            task: Box::new(task.to_info()),
        },
        TaskChange::Updated(task) => Event::TaskUpdated {
            task: Box::new(task.to_info()),
        },
        TaskChange::Finished(task) => Event::TaskFinished {
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
    let (TaskChange::Started(task) | TaskChange::Updated(task) | TaskChange::Finished(task)) =
        &change;
    let Some(parent) = task.parent_session_id.as_deref() else {
        return ControlFlow::Continue(());
    };
    let Some(sessions) = sessions.upgrade() else {
        return ControlFlow::Break(());
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
