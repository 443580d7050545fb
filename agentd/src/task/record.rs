//! `TaskRecord`: a task as the manager keeps it and as its file under `<state>/tasks/` holds
//! it, apart from the wire's `protocol::task::TaskInfo`, so a change of the wire type is not
//! silently a change of every record on disk. [`TaskRecord::to_info`] is the one conversion to
//! the wire. The file's own format version is written beside the fields by `store`; the small
//! value types (`TaskKind`, `TaskStatus`, `Usage`) are the protocol's, and the test pinning a
//! record's file form catches a change of their names.

use protocol::event::Usage;
use protocol::task::{TaskInfo, TaskKind, TaskStatus};
use serde::{Deserialize, Serialize};

/// One task. Field names and optional fields as the files written before records had a format
/// version (format 1), so those read unchanged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    /// `task_` and hex digits; the record's file is named after it.
    pub task_id: String,
    pub kind: TaskKind,
    pub status: TaskStatus,
    /// The session that started it (None: started by a client with `task/start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    /// A subagent's own session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_session_id: Option<String>,
    /// A subagent's definition name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// What it does (the prompt's or command's first line when none was given).
    pub description: String,
    /// The workspace it runs in.
    pub cwd: String,
    /// RFC 3339, as all the times here; records are listed in this order.
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
    /// The parent session is owed this task's `<task-notification>`: set with a background
    /// subagent's end (in the same write), cleared once the notification is in the parent's
    /// history or queued in its run. One still set at start is delivered then (unless the
    /// parent's history already holds it), so it is delivered once, never lost.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub notification_pending: bool,
    /// Its final state could not be written (in memory only; the wire's `notPersisted`).
    #[serde(skip)]
    pub not_persisted: bool,
    /// No progress for `[tasks] stall_secs` (in memory only; the wire's `stalled`).
    #[serde(skip)]
    pub stalled: bool,
    /// A subagent run in the background (`NewTask::background`): it resumes after a restart.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
}

impl TaskRecord {
    /// The task as `task/*` results and `task*` events carry it.
    pub fn to_info(&self) -> TaskInfo {
        TaskInfo {
            task_id: self.task_id.clone(),
            kind: self.kind,
            status: self.status,
            parent_session_id: self.parent_session_id.clone(),
            child_session_id: self.child_session_id.clone(),
            agent_type: self.agent_type.clone(),
            description: self.description.clone(),
            cwd: self.cwd.clone(),
            created_at: self.created_at.clone(),
            started_at: self.started_at.clone(),
            finished_at: self.finished_at.clone(),
            result: self.result.clone(),
            error: self.error.clone(),
            exit_code: self.exit_code,
            usage: self.usage,
            not_persisted: self.not_persisted,
            stalled: self.stalled,
        }
    }
}
