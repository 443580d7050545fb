//! The todo list of a `todoUpdated` event, compact on stderr: a count line, then one
//! `[ ]`/`[>]`/`[x]` line per item.

use protocol::todo::{TodoItem, TodoStatus};

/// Characters of an item shown at most (one terminal line).
const ITEM_MAX_CHARS: usize = 100;

/// The lines to print for a new list.
pub fn lines(items: &[TodoItem]) -> Vec<String> {
    if items.is_empty() {
        return vec!["todo: (cleared)".to_owned()];
    }
    let done = items
        .iter()
        .filter(|item| item.status == TodoStatus::Completed)
        .count();
    let mut lines = vec![format!("todo ({done}/{} done):", items.len())];
    for item in items {
        let mark = match item.status {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[>]",
            TodoStatus::Completed => "[x]",
        };
        let content = super::truncate(&super::one_line(&item.content), ITEM_MAX_CHARS);
        lines.push(format!("  {mark} {content}"));
    }
    lines
}
