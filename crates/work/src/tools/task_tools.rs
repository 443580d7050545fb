//! `task_list`, `task_get`, `task_output`, `task_stop`: the model watches and stops the
//! background tasks its session started (subagents, background shell commands). A session
//! sees and stops only its own tasks; subagents never get these tools
//! (`agents::never_for_subagents`).

use std::fmt::Write as _;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{SessionTasks, TaskSummary};
use super::{ToolContext, ToolOutput, TypedTool};
use protocol::task::TaskKind;

/// Lines of output `task_output` returns by default (its tail): enough to judge a build or a
/// test run, small next to the context (the executor's output cap applies on top).
pub(crate) const TASK_OUTPUT_DEFAULT_TAIL_LINES: usize = 100;
/// Bytes of a task's output `task_output` reads at most, from the end.
const TASK_OUTPUT_READ_BYTES: usize = 256 * 1024;

/// `task_list`.
#[derive(Clone)]
pub struct TaskList(pub Arc<dyn SessionTasks>);
/// `task_get`.
#[derive(Clone)]
pub struct TaskGet(pub Arc<dyn SessionTasks>);
/// `task_output`.
#[derive(Clone)]
pub struct TaskOutputTool(pub Arc<dyn SessionTasks>);
/// `task_stop`.
#[derive(Clone)]
pub struct TaskStop(pub Arc<dyn SessionTasks>);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct TaskListParams {
    /// Finished ones too.
    #[serde(default)]
    all: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct TaskIdParams {
    /// The task's id (`task_…`).
    task_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct TaskOutputParams {
    /// The task's id (`task_…`).
    task_id: String,
    /// Lines from the end (default 100).
    #[serde(default)]
    tail: Option<usize>,
}

impl TypedTool for TaskList {
    type Params = TaskListParams;
    const NAME: &'static str = "task_list";
    const DESCRIPTION: &'static str = "Your background tasks (subagents, shell commands): id, status, kind, \
         description, newest first; pending and running ones unless `all`.";
    const READ_ONLY: bool = true;

    fn summary(&self, input: &serde_json::Value) -> String {
        if input.get("all").and_then(serde_json::Value::as_bool) == Some(true) {
            "all".to_owned()
        } else {
            String::new()
        }
    }

    fn run<'a>(
        &'a self,
        params: TaskListParams,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        let output = match ctx.session_id.as_deref() {
            None => Err("task_list works only in a session".to_owned()),
            Some(session_id) => {
                let tasks = self.0.list(session_id, params.all);
                Ok(ToolOutput::ok(render_list(&tasks, params.all)))
            }
        };
        Box::pin(std::future::ready(output))
    }
}

impl TypedTool for TaskGet {
    type Params = TaskIdParams;
    const NAME: &'static str = "task_get";
    const DESCRIPTION: &'static str = "One background task: status, kind, description, times, result or error, exit \
         code.";
    const READ_ONLY: bool = true;

    fn summary(&self, input: &serde_json::Value) -> String {
        super::str_field(input, "taskId").to_owned()
    }

    fn run<'a>(
        &'a self,
        params: TaskIdParams,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        let output =
            own_task(&*self.0, &params.task_id, ctx).map(|task| ToolOutput::ok(render_task(&task)));
        Box::pin(std::future::ready(output))
    }
}

impl TypedTool for TaskOutputTool {
    type Params = TaskOutputParams;
    const NAME: &'static str = "task_output";
    const DESCRIPTION: &'static str = "A background task's output (a shell's so far, a subagent's final message): its \
         last `tail` lines and its status.";
    const READ_ONLY: bool = true;

    fn summary(&self, input: &serde_json::Value) -> String {
        super::str_field(input, "taskId").to_owned()
    }

    fn run<'a>(
        &'a self,
        params: TaskOutputParams,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        Box::pin(async move {
            let task = own_task(&*self.0, &params.task_id, ctx)?;
            let tail = params.tail.unwrap_or(TASK_OUTPUT_DEFAULT_TAIL_LINES).max(1);
            let chunk = self.0.output_tail(&task, TASK_OUTPUT_READ_BYTES).await?;
            let shown = last_lines(&chunk.text, tail);
            let mut text = format!("task {} is {}", task.task_id, task.status.as_str());
            if shown.len() < chunk.text.len() || chunk.cut {
                let _ = write!(text, "; the last {tail} lines of its output:");
            } else if shown.is_empty() {
                text.push_str("; no output yet");
            } else {
                text.push_str("; its output:");
            }
            if !shown.is_empty() {
                text.push('\n');
                text.push_str(shown);
            }
            Ok(ToolOutput::ok(text))
        })
    }
}

impl TypedTool for TaskStop {
    type Params = TaskIdParams;
    const NAME: &'static str = "task_stop";
    const DESCRIPTION: &'static str = "Stop a background task (a subagent's run cancelled, a shell killed with its \
         process group); it ends `cancelled`.";
    const READ_ONLY: bool = false;

    fn summary(&self, input: &serde_json::Value) -> String {
        super::str_field(input, "taskId").to_owned()
    }

    fn run<'a>(
        &'a self,
        params: TaskIdParams,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        Box::pin(async move {
            let task = own_task(&*self.0, &params.task_id, ctx)?;
            if task.status.is_finished() {
                return Err(format!(
                    "task {} has already ended ({}); nothing to stop",
                    task.task_id,
                    task.status.as_str()
                ));
            }
            self.0
                .stop(&task.task_id)
                .await
                .map_err(|err| format!("cannot stop task {}: {err}", task.task_id))?;
            Ok(ToolOutput::ok(format!(
                "stopping task {}; it ends cancelled",
                task.task_id
            )))
        })
    }
}

/// The last `count` lines of `text` (a final newline ends a line, it does not start one).
fn last_lines(text: &str, count: usize) -> &str {
    let body = text.strip_suffix('\n').unwrap_or(text);
    match body.rmatch_indices('\n').nth(count.saturating_sub(1)) {
        Some((index, _)) => &text[index + 1..],
        None => text,
    }
}

/// The task, when this session started it; otherwise a message for the model.
fn own_task(
    tasks: &dyn SessionTasks,
    task_id: &str,
    ctx: &ToolContext,
) -> Result<TaskSummary, String> {
    let unknown = || format!("no task {task_id} of yours; call task_list to see your tasks");
    let session_id = ctx.session_id.as_deref().ok_or_else(unknown)?;
    tasks.get(session_id, task_id).ok_or_else(unknown)
}

fn kind_name(task: &TaskSummary) -> String {
    match task.kind {
        TaskKind::Shell => "shell".to_owned(),
        TaskKind::Subagent => match &task.agent_type {
            Some(agent) => format!("subagent {agent}"),
            None => "subagent".to_owned(),
        },
    }
}

fn render_list(tasks: &[TaskSummary], all: bool) -> String {
    if tasks.is_empty() {
        return if all {
            "you have started no background tasks".to_owned()
        } else {
            "no background task of yours is pending or running (all: true lists finished ones)"
                .to_owned()
        };
    }
    let mut text = String::new();
    for task in tasks {
        let _ = writeln!(
            text,
            "{} {} {}: {}",
            task.task_id,
            task.status.as_str(),
            kind_name(task),
            task.description
        );
    }
    text.truncate(text.trim_end().len());
    text
}

fn render_task(task: &TaskSummary) -> String {
    let mut text = format!(
        "task {}\nstatus: {}\nkind: {}\ndescription: {}\ncwd: {}\ncreated: {}",
        task.task_id,
        task.status.as_str(),
        kind_name(task),
        task.description,
        task.cwd,
        task.created_at
    );
    if let Some(started) = &task.started_at {
        let _ = write!(text, "\nstarted: {started}");
    }
    if let Some(finished) = &task.finished_at {
        let _ = write!(text, "\nfinished: {finished}");
    }
    if let Some(code) = task.exit_code {
        let _ = write!(text, "\nexit code: {code}");
    }
    if let Some(error) = &task.error {
        let _ = write!(text, "\nerror: {error}");
    }
    if let Some(result) = &task.result {
        let _ = write!(text, "\nresult:\n{result}");
    }
    if let Some(hint) = &task.hint {
        let _ = write!(text, "\n{hint}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_is_counted_in_lines() {
        assert_eq!(last_lines("a\nb\nc\n", 2), "b\nc\n");
        assert_eq!(last_lines("a\nb\nc", 2), "b\nc");
        assert_eq!(last_lines("a\nb\n", 5), "a\nb\n");
        assert_eq!(last_lines("", 1), "");
    }
}
