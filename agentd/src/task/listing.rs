//! Reading the task list: every match at once (`list`, for the tools and session delete) or a
//! page of it (`page`, for `task/list`), newest first, from memory only. A page's cursor is the
//! id of its last task; the next page starts after it.

use super::{TaskError, TaskFilter, TaskManager, TaskRecord};

/// Tasks one `task/list` answer carries when the client names no `limit`.
pub const DEFAULT_LIST_LIMIT: usize = 100;

/// The most tasks one `task/list` answer carries (`limit` is cut to it): an answer stays far
/// below the line limit even with long results.
pub const MAX_LIST_LIMIT: usize = 1000;

impl TaskManager {
    /// Tasks matching `filter`, newest first.
    pub fn list(&self, filter: &TaskFilter) -> Vec<TaskRecord> {
        let records = self.lock();
        records
            .order
            .iter()
            .rev()
            .filter_map(|id| records.by_id.get(id))
            .filter(|task| matches(filter, task))
            .cloned()
            .collect()
    }

    /// At most `limit` tasks matching `filter`, newest first, after the task `cursor` (the
    /// last of the previous page); the cursor of the next page when there is more. Err: a
    /// cursor naming no task (pruned, or never one).
    pub fn page(
        &self,
        filter: &TaskFilter,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<TaskRecord>, Option<String>), TaskError> {
        let records = self.lock();
        let newest_first = records.order.iter().rev();
        let after: Box<dyn Iterator<Item = &String>> = match cursor {
            None => Box::new(newest_first),
            Some(cursor) => {
                if !records.by_id.contains_key(cursor) {
                    return Err(TaskError::UnknownCursor(cursor.to_owned()));
                }
                Box::new(
                    newest_first
                        .skip_while(move |id| id.as_str() != cursor)
                        .skip(1),
                )
            }
        };
        let mut matching = after
            .filter_map(|id| records.by_id.get(id))
            .filter(|task| matches(filter, task));
        let page: Vec<TaskRecord> = matching.by_ref().take(limit.max(1)).cloned().collect();
        let next_cursor = match matching.next() {
            Some(_) => page.last().map(|task| task.task_id.clone()),
            None => None,
        };
        Ok((page, next_cursor))
    }
}

fn matches(filter: &TaskFilter, task: &TaskRecord) -> bool {
    (filter.all || filter.status.is_some() || !task.status.is_finished())
        && filter.status.is_none_or(|status| task.status == status)
        && filter
            .parent_session_id
            .as_deref()
            .is_none_or(|parent| task.parent_session_id.as_deref() == Some(parent))
}
