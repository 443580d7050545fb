//! Tasks: the daemon's background work (subagents the model or a client started, background
//! shell commands), as clients see them in `task/*` results and `task*` events.

use serde::{Deserialize, Serialize};

use crate::event::Usage;

/// What a task runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TaskKind {
    /// A subagent: a child session with its own context.
    Subagent,
    /// A background `run_shell` command.
    Shell,
}

/// Where a task is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
}

/// One task, as `task/get`, `task/list` and the task events carry it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
}
