//! A subagent's child run: it waits for a task slot, runs the child's one prompt to its end,
//! records the outcome in the task, and hands a background child's result to its parent as a
//! `<task-notification>` follow-up.

use std::sync::Arc;

use protocol::event::{Event, RunStatus};
use protocol::task::TaskStatus;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::{ChildOutcome, NO_SUMMARY};
use crate::session::{Session, SessionManager};
use crate::task::TaskManager;
use agentd_core::conversation::Message;

/// One child run and its task record.
pub(super) struct ChildRun {
    pub(super) tasks: Arc<TaskManager>,
    pub(super) task_id: String,
    pub(super) child: Arc<Session>,
    pub(super) prompt: String,
    pub(super) workspace: std::path::PathBuf,
    pub(super) read_only: bool,
    /// How its run goes: whether its approvals hold, the parent run they name.
    pub(super) options: crate::session::RunOptions,
    /// Its end is owed to its parent as a `<task-notification>` (a background child of a
    /// session): recorded with the end, so a restart delivers what a stop left undelivered.
    pub(super) notify_parent: bool,
}

impl ChildRun {
    /// Waits for a slot, runs the child's one prompt to its end and records the outcome (a
    /// run the daemon's stop suspended records nothing: it resumes at the next start).
    /// `parent_cancel`: a foreground child stops with its parent's run.
    pub(super) async fn run(self, parent_cancel: Option<CancellationToken>) -> ChildOutcome {
        let stop = self.tasks.stop_token(&self.task_id);
        let stopped = || stopped(stop.clone(), parent_cancel.clone());
        // The slot is held until the end is recorded: no record shows more tasks running
        // than the cap (or two writers in one workspace), even for a moment.
        let (outcome, slot) = tokio::select! {
            slot = self.tasks.slot(&self.workspace, self.read_only) => {
                (self.run_in_slot(stopped).await, Some(slot))
            }
            () = stopped() => (
                Some(ChildOutcome {
                    status: TaskStatus::Cancelled,
                    result: None,
                    error: Some("stopped before it started".to_owned()),
                    usage: None,
                }),
                None,
            ),
        };
        let Some(outcome) = outcome else {
            self.tasks.suspended(&self.task_id);
            drop(slot);
            return ChildOutcome {
                status: TaskStatus::Interrupted,
                result: None,
                error: Some(SUSPENDED.to_owned()),
                usage: None,
            };
        };
        let outcome = record_end(&self.tasks, &self.task_id, outcome, self.notify_parent).await;
        drop(slot);
        outcome
    }

    /// The child's run in its slot; None: suspended by the daemon's stop.
    async fn run_in_slot<F, Fut>(&self, stopped: F) -> Option<ChildOutcome>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let failed = |error: String| {
            Some(ChildOutcome {
                status: TaskStatus::Failed,
                result: None,
                error: Some(error),
                usage: None,
            })
        };
        let _ = self
            .tasks
            .update_deferred(&self.task_id, |task| task.status = TaskStatus::Running);
        let mut events = match self.child.log.subscribe(None).await {
            Ok(subscription) => subscription.live,
            Err(err) => return failed(format!("cannot follow the child session: {err:#}")),
        };
        // A child of a run decides as its parent would: with nobody who answers on either,
        // by mode at once (unless the parent run holds its approvals); a client's task waits.
        let run_id = match self
            .child
            .prompt(self.prompt.clone(), None, false, self.options.clone())
            .await
        {
            Ok(started) => started.run_id,
            Err(err) => return failed(err.to_string()),
        };
        tracing::debug!(task = %self.task_id, %run_id, "subagent run started");
        let follow = Follow {
            tasks: &self.tasks,
            task_id: &self.task_id,
            child: &self.child,
            run_id: &run_id,
        };
        match follow.live(&mut events, 0, stopped()).await {
            RunEnd::Ended {
                status,
                error,
                usage,
            } => Some(outcome_of(&self.child, status, error, usage)),
            RunEnd::Suspended => None,
        }
    }
}

/// The error a suspended child's outcome carries (its task records nothing: it resumes).
const SUSPENDED: &str =
    "the daemon stopped while this subagent ran; it resumes when the daemon starts again";

/// How following a child's run ended.
pub(super) enum RunEnd {
    Ended {
        status: RunStatus,
        error: Option<String>,
        usage: Option<protocol::event::Usage>,
    },
    /// The daemon's stop suspended it: it resumes at the next start.
    Suspended,
}

/// One child run followed to its end, each of its events counted as its task's progress.
pub(super) struct Follow<'a> {
    pub(super) tasks: &'a TaskManager,
    pub(super) task_id: &'a str,
    pub(super) child: &'a Session,
    pub(super) run_id: &'a str,
}

impl Follow<'_> {
    /// What `event` says of the run: its end, its suspension, or nothing yet.
    pub(super) fn end_in(&self, event: &Event) -> Option<RunEnd> {
        match event {
            Event::RunFinished {
                run_id,
                status,
                error,
                usage,
                ..
            } if run_id == self.run_id => Some(RunEnd::Ended {
                status: *status,
                error: error.clone(),
                usage: Some(*usage),
            }),
            Event::RunSuspended { run_id, .. } if run_id == self.run_id => Some(RunEnd::Suspended),
            _ => None,
        }
    }

    /// Follows the run on `events` (those at or below `skip_up_to` were seen already) until it
    /// ends or is suspended. Once `stop_requested` resolves the run is cancelled, or, when the
    /// daemon is stopping, stopped as interrupted (nobody stopped it).
    pub(super) async fn live(
        &self,
        events: &mut tokio::sync::broadcast::Receiver<Arc<crate::session::events::Published>>,
        skip_up_to: u64,
        stop_requested: impl std::future::Future<Output = ()>,
    ) -> RunEnd {
        let mut stop_requested = std::pin::pin!(stop_requested);
        let mut cancel_sent = false;
        loop {
            tokio::select! {
                () = &mut stop_requested, if !cancel_sent => {
                    cancel_sent = true;
                    if self.tasks.is_stopping() {
                        self.child.request_stop(agentd_agent::StopReason::Shutdown);
                        tracing::debug!(task = %self.task_id, "subagent interrupted by the stop");
                    } else {
                        let cancelled = self.child.cancel();
                        tracing::debug!(task = %self.task_id, ?cancelled, "subagent cancelled");
                    }
                }
                event = events.recv() => match event {
                    Ok(published) => {
                        if published.persisted && published.seq <= skip_up_to {
                            continue;
                        }
                        self.tasks.progress(self.task_id);
                        if let Some(end) = self.end_in(&published.event) {
                            return end;
                        }
                    }
                    Err(RecvError::Lagged(_)) => {
                        self.tasks.progress(self.task_id);
                        if self.child.shared.lock().run_id.as_deref() != Some(self.run_id) {
                            return RunEnd::Ended { status: RunStatus::Completed, error: None, usage: None };
                        }
                    }
                    Err(RecvError::Closed) => {
                        return RunEnd::Ended {
                            status: RunStatus::Failed,
                            error: Some("the child session closed".to_owned()),
                            usage: None,
                        };
                    }
                },
            }
        }
    }
}

/// A child run's end as its task records it, with the child's last message.
pub(super) fn outcome_of(
    child: &Session,
    status: RunStatus,
    error: Option<String>,
    usage: Option<protocol::event::Usage>,
) -> ChildOutcome {
    tracing::debug!(session = %child.id(), ?status, "subagent run ended");
    let final_message = last_assistant_text(&child.shared.lock().history);
    match status {
        RunStatus::Completed => ChildOutcome {
            status: TaskStatus::Completed,
            result: Some(final_message.unwrap_or_else(|| NO_SUMMARY.to_owned())),
            error: None,
            usage,
        },
        RunStatus::Cancelled => ChildOutcome {
            status: TaskStatus::Cancelled,
            result: final_message,
            error: Some(error.unwrap_or_else(|| "cancelled".to_owned())),
            usage,
        },
        // Stopped by the daemon's stop, or not resumed again after a restart.
        RunStatus::Interrupted => ChildOutcome {
            status: TaskStatus::Interrupted,
            result: final_message,
            error: Some(error.unwrap_or_else(|| crate::task::INTERRUPTED_ERROR.to_owned())),
            usage,
        },
        // A budget nobody raised: the task failed, its error names the budget.
        RunStatus::Failed | RunStatus::MaxSteps | RunStatus::Budget => ChildOutcome {
            status: TaskStatus::Failed,
            result: final_message,
            error: Some(error.unwrap_or_else(|| "the run failed".to_owned())),
            usage,
        },
    }
}

/// Records how a child's task ended (a child stopped by the daemon's stop is `interrupted`,
/// not `cancelled`), with the notification its parent is owed when `notify_parent`. Returns
/// the outcome as recorded.
pub(super) async fn record_end(
    tasks: &TaskManager,
    task_id: &str,
    outcome: ChildOutcome,
    notify_parent: bool,
) -> ChildOutcome {
    let stopped = matches!(
        outcome.status,
        TaskStatus::Cancelled | TaskStatus::Interrupted
    );
    let outcome = if stopped && tasks.is_stopping() {
        // Stopped because the daemon is stopping: nobody stopped it, so it is not
        // `cancelled`; it is never re-run by itself (the task's hint says what to do).
        ChildOutcome {
            status: TaskStatus::Interrupted,
            error: Some(crate::task::INTERRUPTED_ERROR.to_owned()),
            ..outcome
        }
    } else {
        outcome
    };
    tracing::debug!(task = %task_id, status = ?outcome.status, "recording the subagent's end");
    // Interrupted by the stop, the parent is not told (a client sees the task); interrupted
    // after a restart (not resumed again), it is.
    let owed = notify_parent && !(outcome.status == TaskStatus::Interrupted && tasks.is_stopping());
    let recorded = tasks
        .update(task_id, |task| {
            task.notification_pending = owed;
            task.status = outcome.status;
            task.result = outcome.result.clone();
            task.error = outcome.error.clone();
            if let Some(usage) = &outcome.usage {
                task.usage = *usage;
            }
        })
        .await;
    if let Err(err) = recorded {
        tracing::warn!("cannot record the end of task {task_id}: {err}");
    }
    outcome
}

/// Resolves when the task is stopped or the parent run (if any) is cancelled.
async fn stopped(stop: CancellationToken, parent: Option<CancellationToken>) {
    match parent {
        Some(parent) => tokio::select! {
            () = stop.cancelled() => {}
            () = parent.cancelled() => {}
        },
        None => stop.cancelled().await,
    }
}

/// The last non-empty assistant text of a history, the child's own (a forked child's history
/// starts with its parent's).
fn last_assistant_text(history: &[Message]) -> Option<String> {
    let own = history
        .iter()
        .rposition(super::fork::is_fork_point)
        .map_or(history, |fork| &history[fork..]);
    own.iter().rev().find_map(|message| match message {
        Message::Assistant { content, .. } if !content.trim().is_empty() => Some(content.clone()),
        _ => None,
    })
}

/// The follow-up a background task's end becomes in its parent: marked as a notification,
/// not the user's words.
pub fn task_notification(
    task_id: &str,
    agent_type: &str,
    outcome_status: TaskStatus,
    body: &str,
) -> String {
    format!(
        "<task-notification>\n<task-id>{task_id}</task-id>\n<agent-type>{agent_type}</agent-type>\n<status>{}</status>\n<result>\n{body}\n</result>\n</task-notification>",
        outcome_status.as_str()
    )
}

/// The task a notification (from [`task_notification`]) is about.
pub fn notification_task_id(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("<task-notification>\n<task-id>")?;
    rest.split_once("</task-id>").map(|(task_id, _)| task_id)
}

/// What became of a task's notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// In the parent's history, or queued in its active run (recorded: nothing more owed).
    Delivered,
    /// Held in the parent's memory for its next run (still owed until a run takes it).
    Held,
    /// Not delivered (still owed: the next start tries again).
    NotDelivered,
}

/// Hands a finished background task's notification to its parent: a follow-up of the active
/// run, or a new run when the parent is idle (unless `notify_idle_parent` is off: then it
/// opens the parent's next run), and records what is still owed. `after_restart`: the
/// parent's history is looked at first, and a notification already in it is not sent again.
pub(crate) async fn deliver(
    sessions: &SessionManager,
    task: &crate::task::TaskRecord,
    notify_idle_parent: bool,
    after_restart: bool,
) -> Delivery {
    let tasks = &sessions.deps.tasks;
    let task_id = task.task_id.as_str();
    let Some(parent_id) = task.parent_session_id.as_deref() else {
        tasks.mark_notified(task_id).await;
        return Delivery::Delivered;
    };
    let body = match (&task.result, &task.error) {
        (Some(result), None) => result.clone(),
        (result, Some(error)) => match result {
            Some(result) => format!("error: {error}\n{result}"),
            None => format!("error: {error}"),
        },
        (None, None) => NO_SUMMARY.to_owned(),
    };
    let agent_type = task.agent_type.as_deref().unwrap_or("subagent");
    let text = task_notification(task_id, agent_type, task.status, &body);
    let parent = match sessions.get(parent_id).await {
        Ok(parent) => parent,
        Err(crate::session::SessionError::NotFound(err)) => {
            // Deleted: nobody is owed it any more.
            tracing::debug!("task {task_id} not delivered, {parent_id} is gone: {err}");
            tasks.mark_notified(task_id).await;
            return Delivery::Delivered;
        }
        Err(err) => {
            tracing::debug!("task {task_id} not delivered to {parent_id}: {err}");
            return Delivery::NotDelivered;
        }
    };
    if after_restart && in_history(&parent, task_id) {
        tasks.mark_notified(task_id).await;
        return Delivery::Delivered;
    }
    // With `notify_idle_parent` off, an idle parent holds it for its next run.
    let origin = Some(protocol::event::FollowUpOrigin::TaskNotification);
    let delivery = match parent
        .follow_up_from(text, origin, notify_idle_parent)
        .await
    {
        // Held by the parent: its actor records the delivery once a run takes it.
        Ok(queued) if queued.run_id.is_empty() => Delivery::Held,
        Ok(_) => {
            tasks.mark_notified(task_id).await;
            Delivery::Delivered
        }
        Err(err) => {
            tracing::warn!("task {task_id} not delivered to {parent_id}: {err}");
            Delivery::NotDelivered
        }
    };
    // The parent's Notification hooks hear of it (this runs in the task's own background
    // task, never in an actor).
    let message = format!("task {task_id} ({agent_type}) {}", task.status.as_str());
    crate::session::hooks::at_session_point(
        &parent.header,
        &sessions.deps,
        &*parent.log,
        agentd_agent::intercept::Point::Notification { message: &message },
    )
    .await;
    delivery
}

/// Whether the history of `parent` holds the notification of `task_id` already.
fn in_history(parent: &Session, task_id: &str) -> bool {
    parent.shared.lock().history.iter().any(|message| {
        matches!(message, Message::User { content, .. } if notification_task_id(content) == Some(task_id))
    })
}
