//! Tasks: the daemon's background work (subagents the model or a client started, background
//! shell commands), as clients see them in `task/*` results and `task*` events.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::event::Usage;

/// What a task runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TaskKind {
    /// A subagent: a child session with its own context.
    Subagent,
    /// A background `run_shell` command.
    Shell,
}

/// Where a task is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TaskStatus {
    /// Waiting for a slot (the concurrency cap, or another writing agent in its workspace).
    Pending,
    Running,
    Completed,
    Failed,
    Cancelled,
    /// It was pending or running when the daemon stopped or crashed; never re-run silently.
    Interrupted,
}

impl TaskStatus {
    /// Whether the task has ended (it will not change any more).
    pub fn is_finished(self) -> bool {
        !matches!(self, TaskStatus::Pending | TaskStatus::Running)
    }

    /// Its wire name (`running`, `completed`, …), as the JSON carries it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::Running => "running",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Interrupted => "interrupted",
        }
    }
}

/// One task, as `task/get`, `task/list` and the task events carry it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskInfo {
    /// `task_` and hex digits.
    pub task_id: String,
    pub kind: TaskKind,
    pub status: TaskStatus,
    /// The session that started it (None: started by a client with `task/start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    /// A subagent's own session (subscribe to it like any session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_session_id: Option<String>,
    /// A subagent's definition name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// What it does; defaults to the prompt's (or command's) first line, at most 80 chars.
    pub description: String,
    /// The workspace it runs in.
    pub cwd: String,
    /// RFC 3339.
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// A subagent's final message; a shell task's exit summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A shell task's exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// A subagent's token usage so far.
    #[serde(default)]
    pub usage: Usage,
    /// The task's final state could not be written (after retries): it is announced as it
    /// ended, but a restart finds it `interrupted` with its result gone. Added in 1.3.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_persisted: bool,
    /// A running task whose child made no progress (no event of its child session, no output
    /// of its command) for `[tasks] stall_secs`; it stays `running` and clears when progress
    /// resumes. Added in 1.3.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stalled: bool,
}

/// Params of `task/list`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskListParams {
    /// Only the tasks this session started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Only tasks in this status (a finished status implies `all`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskStatus>,
    /// Finished tasks too; by default only pending and running ones.
    #[serde(default)]
    pub all: bool,
    /// Return tasks after this cursor (a previous answer's `nextCursor`). Added in 1.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// At most this many (default 100, max 1000). Added in 1.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// Result of `task/list`: newest first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskListResult {
    pub tasks: Vec<TaskInfo>,
    /// More tasks match: ask again with this `cursor`. Added in 1.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Params naming one task (`task/get`, `task/stop`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskRef {
    pub task_id: String,
}

/// Params of `task/get`.
pub type TaskGetParams = TaskRef;

/// Result of `task/get`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskGetResult {
    pub task: TaskInfo,
    /// What the user can do next, e.g. how to resume an `interrupted` task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// Params of `task/output`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskOutputParams {
    pub task_id: String,
    /// Byte offset to read from (a previous answer's `nextOffset`); 0 by default.
    #[serde(default)]
    pub after_offset: u64,
}

/// Result of `task/output`: a shell task's output, or a subagent's final message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskOutputResult {
    pub text: String,
    /// Where the next call continues (`afterOffset`).
    pub next_offset: u64,
    /// True when more is there than one answer carries (call again from `nextOffset`), or
    /// when the task's output was cut at its cap.
    pub truncated: bool,
    /// The task's status when read: a finished task's output does not grow any more.
    pub status: TaskStatus,
}

/// Params of `task/steer` and `task/followUp`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskMessageParams {
    pub task_id: String,
    pub text: String,
}

/// Result of `task/steer` and `task/followUp`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskMessageResult {
    /// The child session the message went to.
    pub child_session_id: String,
    /// The child's run it goes to.
    pub run_id: String,
    /// True when queued into the active run; false when it started a new run.
    pub queued: bool,
}

/// Params of `task/steer`.
pub type TaskSteerParams = TaskMessageParams;
/// Result of `task/steer`.
pub type TaskSteerResult = TaskMessageResult;
/// Params of `task/followUp`.
pub type TaskFollowUpParams = TaskMessageParams;
/// Result of `task/followUp`.
pub type TaskFollowUpResult = TaskMessageResult;

/// Params of `task/stop`.
pub type TaskStopParams = TaskRef;

/// Result of `task/stop`: the record when the stop was asked (the task becomes `cancelled`
/// when it has stopped; `taskFinished` says so).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskStopResult {
    pub task: TaskInfo,
}

/// Params of `task/start`: a background subagent with no parent session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskStartParams {
    /// The workspace (absolute).
    pub cwd: String,
    pub prompt: String,
    /// A subagent definition's name; `general-purpose` by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// As in `session/create`; the user's default mode when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<crate::approval::PermissionMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Result of `task/start`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskStartResult {
    pub task_id: String,
    pub task: TaskInfo,
}

#[cfg(test)]
mod tests {
    use super::TaskStatus;

    #[test]
    fn a_status_name_is_its_wire_name() {
        for status in [
            TaskStatus::Pending,
            TaskStatus::Running,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled,
            TaskStatus::Interrupted,
        ] {
            assert_eq!(
                serde_json::to_value(status).ok(),
                Some(serde_json::json!(status.as_str()))
            );
        }
    }
}
