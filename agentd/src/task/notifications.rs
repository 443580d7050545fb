//! What a parent session is still owed: a background subagent's end sets its record's
//! `notificationPending` (in the same write as the end), and the session layer clears it once
//! the `<task-notification>` is in the parent's history or queued in its run. A flag still set
//! at start is delivered again then (`session::task_events`), so a notification held in memory
//! or not yet delivered when the daemon stopped is neither lost nor, as the parent's history is
//! checked first, delivered twice.

use super::{TaskManager, TaskRecord};

impl TaskManager {
    /// Finished tasks whose notification is owed, oldest first.
    pub fn owed_notifications(&self) -> Vec<TaskRecord> {
        let records = self.lock();
        records
            .order
            .iter()
            .filter_map(|id| records.by_id.get(id))
            .filter(|task| task.notification_pending && task.status.is_finished())
            .cloned()
            .collect()
    }

    /// The notification of `task_id` reached its parent (or has nobody to reach): the flag
    /// is cleared and written. Nothing is announced (clients do not see the flag).
    pub async fn mark_notified(&self, task_id: &str) {
        {
            let mut records = self.lock();
            match records.by_id.get_mut(task_id) {
                Some(task) if task.notification_pending => task.notification_pending = false,
                _ => return,
            }
            records.bump(task_id);
        }
        if let Err(reason) = self.persist(task_id).await {
            // The flag stays set on disk: the parent's history is checked before a second
            // delivery, so this costs a check at the next start, never a duplicate.
            tracing::warn!("cannot record that task {task_id} was delivered: {reason}");
        }
    }
}
