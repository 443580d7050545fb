//! Stopping what a session started, when the session is deleted: its running tasks
//! (subagents and background shells) are stopped through the manager, like `task/stop`.

use super::{TaskFilter, TaskManager};

impl TaskManager {
    /// Stops every pending or running task whose parent is `session_id`; returns how many
    /// were asked to stop.
    pub async fn stop_for_session(&self, session_id: &str) -> usize {
        let running = self.list(&TaskFilter {
            parent_session_id: Some(session_id.to_owned()),
            status: None,
            all: false,
        });
        let mut stopped = 0;
        for task in running {
            if !task.status.is_finished() && self.stop(&task.task_id).await.is_ok() {
                stopped += 1;
            }
        }
        stopped
    }
}
