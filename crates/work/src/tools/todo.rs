//! `todo_write`: the model keeps a todo list for the task at hand. Each call replaces the
//! session's whole list; the run announces it as a `todoUpdated` event (persisted), which
//! editors show as a plan. Read-only with respect to the workspace: it changes nothing there.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{ToolContext, ToolOutput, TypedTool};

/// Items one list holds at most: a plan, not a backlog, and every update goes into the context.
pub(crate) const TODO_MAX_ITEMS: usize = 50;
/// Characters of one item's content at most; an item is one line.
pub(crate) const TODO_MAX_CONTENT_CHARS: usize = 500;

/// The `todo_write` tool.
#[derive(Clone, Copy, Debug, Default)]
pub struct TodoWrite;

// One item as the model writes it (no doc comment: it would be sent in the schema).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoItem {
    /// One short imperative line.
    pub(crate) content: String,
    pub(crate) status: TodoStatus,
}

// At most one item is `in_progress` (said in the tool's description, not in its schema).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct TodoWriteParams {
    // The whole list, in order (said in the tool's description).
    items: Vec<TodoItem>,
}

/// Where a written list goes: the run turns it into a `todoUpdated` event. The error is for the
/// model (the list could not be recorded). Cheap to clone; the default drops every list.
#[derive(Clone, Default)]
pub struct TodoSink(Option<Arc<RecordTodo>>);

/// What a [`TodoSink`] calls with each written list.
type RecordTodo = dyn Fn(Vec<TodoItem>) -> Result<(), String> + Send + Sync;

impl TodoSink {
    pub fn new(
        record: impl Fn(Vec<TodoItem>) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        Self(Some(Arc::new(record)))
    }

    fn record(&self, items: Vec<TodoItem>) -> Result<(), String> {
        match &self.0 {
            Some(record) => record(items),
            None => Ok(()),
        }
    }
}

impl fmt::Debug for TodoSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "TodoSink(..)"
        } else {
            "TodoSink(none)"
        })
    }
}

impl TypedTool for TodoWrite {
    type Params = TodoWriteParams;
    const NAME: &'static str = "todo_write";
    const DESCRIPTION: &'static str = "Your todo list, written whole each time, in order. For tasks of three or more \
         steps: plan first; mark one item `in_progress` before starting it, `completed` \
         once done. The user sees it as your plan.";
    const READ_ONLY: bool = true;

    fn summary(&self, input: &serde_json::Value) -> String {
        let items = input
            .get("items")
            .and_then(serde_json::Value::as_array)
            .map_or(0, Vec::len);
        format!("{items} items")
    }

    fn run<'a>(
        &'a self,
        params: TodoWriteParams,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        let output = check(&params.items).and_then(|()| {
            let text = render(&params.items);
            ctx.todo.record(params.items).map(|()| ToolOutput::ok(text))
        });
        Box::pin(std::future::ready(output))
    }
}

/// The rules of a list, with messages that say how to fix it.
fn check(items: &[TodoItem]) -> Result<(), String> {
    if items.len() > TODO_MAX_ITEMS {
        return Err(format!(
            "the todo list has {} items; keep it to at most {TODO_MAX_ITEMS} (merge small steps)",
            items.len()
        ));
    }
    for (index, item) in items.iter().enumerate() {
        if item.content.trim().is_empty() {
            return Err(format!("item {} has no content; say what to do", index + 1));
        }
        if item.content.chars().count() > TODO_MAX_CONTENT_CHARS {
            return Err(format!(
                "item {} is longer than {TODO_MAX_CONTENT_CHARS} characters; keep each item to one short line",
                index + 1
            ));
        }
    }
    let in_progress: Vec<String> = items
        .iter()
        .filter(|item| item.status == TodoStatus::InProgress)
        .map(|item| format!("`{}`", super::one_line(item.content.trim(), 60)))
        .collect();
    if in_progress.len() > 1 {
        return Err(format!(
            "at most one item may be in_progress, found {}: {}; keep the one you are working on in_progress and mark the others pending or completed",
            in_progress.len(),
            in_progress.join(", ")
        ));
    }
    Ok(())
}

/// The list as the model reads it back: one `[ ]`/`[>]`/`[x]` line per item.
fn render(items: &[TodoItem]) -> String {
    if items.is_empty() {
        return "todo list cleared".to_owned();
    }
    let mut text = String::from("todo list updated:");
    for item in items {
        let mark = match item.status {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[>]",
            TodoStatus::Completed => "[x]",
        };
        text.push_str(&format!("\n{mark} {}", item.content.trim()));
    }
    text
}

/// A todo list as `todoUpdated` carries it.
pub fn wire_items(items: &[TodoItem]) -> Vec<protocol::todo::TodoItem> {
    use protocol::todo::TodoStatus as Wire;
    items
        .iter()
        .map(|item| protocol::todo::TodoItem {
            content: item.content.trim().to_owned(),
            status: match item.status {
                TodoStatus::Pending => Wire::Pending,
                TodoStatus::InProgress => Wire::InProgress,
                TodoStatus::Completed => Wire::Completed,
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::{call, workspace};
    use serde_json::json;
    use std::sync::Mutex;

    #[tokio::test]
    async fn a_list_is_recorded_and_read_back() {
        let (_dir, mut ctx) = workspace();
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let sink = recorded.clone();
        ctx.todo = TodoSink::new(move |items| {
            sink.lock().unwrap().push(items);
            Ok(())
        });
        let output = call(
            &TodoWrite,
            json!({"items": [
                {"content": "read the code", "status": "completed"},
                {"content": "write the test", "status": "in_progress"},
                {"content": "fix it", "status": "pending"},
            ]}),
            &ctx,
        )
        .await;
        assert!(!output.is_error, "{}", output.content);
        assert_eq!(
            output.content,
            "todo list updated:\n[x] read the code\n[>] write the test\n[ ] fix it"
        );
        let recorded = recorded.lock().unwrap();
        assert_eq!(recorded.len(), 1);
        assert_eq!(recorded[0][1].status, TodoStatus::InProgress);
    }

    #[tokio::test]
    async fn two_in_progress_items_or_a_bad_item_are_refused_and_nothing_is_recorded() {
        let (_dir, mut ctx) = workspace();
        let recorded = Arc::new(Mutex::new(0));
        let sink = recorded.clone();
        ctx.todo = TodoSink::new(move |_| {
            *sink.lock().unwrap() += 1;
            Ok(())
        });
        let output = call(
            &TodoWrite,
            json!({"items": [
                {"content": "a", "status": "in_progress"},
                {"content": "b", "status": "in_progress"},
            ]}),
            &ctx,
        )
        .await;
        assert!(output.is_error);
        assert!(
            output
                .content
                .starts_with("at most one item may be in_progress, found 2: `a`, `b`"),
            "{}",
            output.content
        );
        let output = call(
            &TodoWrite,
            json!({"items": [{"content": " ", "status": "pending"}]}),
            &ctx,
        )
        .await;
        assert_eq!(output.content, "item 1 has no content; say what to do");
        let output = call(
            &TodoWrite,
            json!({"items": [{"content": "x", "status": "doing"}]}),
            &ctx,
        )
        .await;
        assert!(
            output.is_error && output.content.contains("unknown variant `doing`"),
            "{}",
            output.content
        );
        assert_eq!(*recorded.lock().unwrap(), 0);
    }
}
