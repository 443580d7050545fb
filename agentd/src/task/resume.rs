//! Background subagents that survive a restart. A background subagent found `running` at
//! start (its run was suspended by a graceful stop, or the daemon crashed under it) is recorded
//! `interrupted` like every unfinished task, and kept aside as resumable: the session manager
//! then resumes it (`resume`: `interrupted` → `running`, announced as [`TaskChange::Resumed`])
//! as its child session's run goes on, or gives it up (`give_up_resume`: it stays
//! `interrupted`). A graceful stop leaves such a task `running` on disk (`suspended`), so a
//! stop and a crash resume alike. Shell tasks and foreground children never resume.

use protocol::task::{TaskKind, TaskStatus};

use super::{TaskChange, TaskError, TaskManager, TaskRecord};

/// Whether `record`, found unfinished at start, may resume: a background subagent that was
/// running, with its child session.
pub(super) fn may_resume(record: &TaskRecord) -> bool {
    record.kind == TaskKind::Subagent
        && record.background
        && record.status == TaskStatus::Running
        && record.child_session_id.is_some()
}

impl TaskManager {
    /// The tasks found running at start that may resume, in creation order.
    pub fn resumable(&self) -> Vec<TaskRecord> {
        let records = self.lock();
        records
            .order
            .iter()
            .filter(|id| records.resumable.contains(*id))
            .filter_map(|id| records.by_id.get(id).cloned())
            .collect()
    }

    /// `task_id` does not resume: it stays `interrupted` (and may be pruned from now on).
    pub fn give_up_resume(&self, task_id: &str) {
        self.lock().resumable.remove(task_id);
        self.prune_wake.notify_one();
    }

    /// `task_id`, found running at start, goes on: `running` again with a stop token and a
    /// fresh stall clock, written and announced. Err: not a resumable task (any more).
    pub async fn resume(&self, task_id: &str) -> Result<TaskRecord, TaskError> {
        let record = {
            let mut records = self.lock();
            if !records.resumable.remove(task_id) {
                return Err(TaskError::NotFound(task_id.to_owned()));
            }
            let Some(record) = records.by_id.get_mut(task_id) else {
                return Err(TaskError::NotFound(task_id.to_owned()));
            };
            record.status = TaskStatus::Running;
            record.finished_at = None;
            record.error = None;
            let record = record.clone();
            records.bump(task_id);
            records
                .tokens
                .insert(task_id.to_owned(), self.stopping.child_token());
            records
                .progress
                .insert(task_id.to_owned(), tokio::time::Instant::now());
            record
        };
        if let Err(reason) = self.persist(task_id).await {
            // It runs all the same; a crash before its end is written finds it interrupted.
            tracing::warn!("cannot record task {task_id} resumed: {reason}");
        }
        let _ = self.changes.send(TaskChange::Resumed(record.clone()));
        Ok(record)
    }

    /// `task_id` resumes at the next start, not now (the daemon stops before it had a slot):
    /// written `running` again, without an announcement.
    pub async fn resume_later(&self, task_id: &str) {
        {
            let mut records = self.lock();
            if !records.resumable.remove(task_id) {
                return;
            }
            let Some(record) = records.by_id.get_mut(task_id) else {
                return;
            };
            record.status = TaskStatus::Running;
            record.finished_at = None;
            record.error = None;
            records.bump(task_id);
        }
        if let Err(reason) = self.persist(task_id).await {
            tracing::warn!("cannot keep task {task_id} for the next start: {reason}");
        }
    }

    /// The run of `task_id` was suspended by the daemon's stop: the task records no end (it is
    /// `running` in its file, and resumes at the next start); its stop token is let go, so the
    /// stop does not wait for it.
    pub fn suspended(&self, task_id: &str) {
        {
            let mut records = self.lock();
            records.tokens.remove(task_id);
            records.progress.remove(task_id);
        }
        tracing::debug!(
            task_id,
            "task {task_id} suspended; it resumes at the next start"
        );
        self.released.notify_one();
    }
}

#[cfg(test)]
#[path = "resume_tests.rs"]
mod tests;
