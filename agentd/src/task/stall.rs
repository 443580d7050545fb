//! The stall watchdog (`[tasks] stall_secs`): a running task whose child made no progress
//! (no event of its child session, no output of its command) for that long is marked
//! `stalled` and announced ([`TaskChange::Stalled`]: clients see a `taskUpdated` with
//! `stalled: true`, the parent's Notification hooks hear of it); its next progress clears the
//! mark (a `taskUpdated` with `stalled` gone). The task itself is left alone: stalled is a
//! sign for the user, never a stop. The watchdog looks every quarter of `stall_secs` (at least
//! [`MIN_CHECK_EVERY`]), so a stall shows within a quarter more than the limit.

use std::sync::Arc;
use std::time::Duration;

use protocol::task::TaskStatus;

use super::{TaskChange, TaskManager, TaskRecord};

/// The shortest time between two looks of the watchdog.
pub const MIN_CHECK_EVERY: Duration = Duration::from_millis(100);

impl TaskManager {
    /// The child of `task_id` made progress: its stall clock starts again, and a stalled mark
    /// is cleared (announced). Cheap: called for every event of a child and every output chunk.
    pub fn progress(&self, task_id: &str) {
        let cleared = {
            let mut records = self.lock();
            let Some(task) = records.by_id.get_mut(task_id) else {
                return;
            };
            if task.status != TaskStatus::Running {
                return;
            }
            let cleared = task.stalled.then(|| {
                task.stalled = false;
                task.clone()
            });
            records
                .progress
                .insert(task_id.to_owned(), tokio::time::Instant::now());
            cleared
        };
        if let Some(task) = cleared {
            tracing::info!(task_id, "task {task_id} makes progress again");
            let _ = self.changes.send(TaskChange::Updated(task));
        }
    }

    /// Starts the watchdog with the limit `stall`; it ends at shutdown.
    pub fn start_stall_watchdog(self: &Arc<Self>, stall: Duration) {
        let manager = Arc::downgrade(self);
        let stopping = self.stopping.clone();
        let every = (stall / 4).max(MIN_CHECK_EVERY);
        self.writers.spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = stopping.cancelled() => return,
                    _ = ticks.tick() => {}
                }
                let Some(tasks) = manager.upgrade() else {
                    return;
                };
                for task in tasks.newly_stalled(stall, tokio::time::Instant::now()) {
                    tracing::warn!(
                        task_id = %task.task_id,
                        "task {} made no progress for {}s; it is marked stalled",
                        task.task_id,
                        stall.as_secs()
                    );
                    let _ = tasks.changes.send(TaskChange::Stalled(task));
                }
            }
        });
    }

    /// Marks the running tasks that made no progress for `stall` by `now`; the ones marked now.
    fn newly_stalled(&self, stall: Duration, now: tokio::time::Instant) -> Vec<TaskRecord> {
        let mut records = self.lock();
        let quiet: Vec<String> = records
            .progress
            .iter()
            .filter(|(_, last)| now.saturating_duration_since(**last) >= stall)
            .map(|(task_id, _)| task_id.clone())
            .collect();
        quiet
            .into_iter()
            .filter_map(|task_id| {
                let task = records.by_id.get_mut(&task_id)?;
                if task.status != TaskStatus::Running || task.stalled {
                    return None;
                }
                task.stalled = true;
                Some(task.clone())
            })
            .collect()
    }
}
