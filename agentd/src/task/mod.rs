//! Tasks: the daemon's background work, subagents (child sessions with their own context) and
//! background shell commands. `TaskManager` keeps every task's record (persisted under
//! `<state>/tasks/`, so `task/list` works across restarts; a task pending or running when the
//! daemon stopped is `interrupted` at the next start, never re-run), announces changes, holds
//! each running task's stop token, and hands out run slots (a cap on running subagents with a
//! queue; at most one writing agent per workspace unless configured).
//!
//! SKELETON: the API the rest of the daemon builds on; bodies are filled in by the task work.

pub mod view;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use protocol::task::{TaskInfo, TaskKind, TaskStatus};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// Default cap on running subagents (`[tasks] max_running`).
pub const DEFAULT_MAX_RUNNING: usize = 4;
/// A description defaults to the first line of the prompt or command, cut to this many chars.
pub const MAX_DESCRIPTION_CHARS: usize = 80;

/// What starts a task.
#[derive(Clone, Debug, PartialEq)]
pub struct NewTask {
    pub kind: TaskKind,
    pub parent_session_id: Option<String>,
    pub agent_type: Option<String>,
    /// None: the first line of `prompt`, at most [`MAX_DESCRIPTION_CHARS`].
    pub description: Option<String>,
    /// The subagent's prompt, or the shell command.
    pub prompt: String,
    /// Canonical workspace.
    pub cwd: PathBuf,
}

/// Which tasks `list` returns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskFilter {
    pub parent_session_id: Option<String>,
    pub status: Option<TaskStatus>,
    /// Finished tasks too (by default only pending and running ones).
    pub all: bool,
}

/// A change of one task, for the parent session's stream and the daemon stream.
#[derive(Clone, Debug, PartialEq)]
pub enum TaskChange {
    Started(TaskInfo),
    Updated(TaskInfo),
    Finished(TaskInfo),
}

/// Why a task operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    #[error("no task {0}")]
    NotFound(String),
    #[error("task {task_id} has already ended ({status})")]
    Finished { task_id: String, status: String },
    #[error("cannot record task {task_id}: {reason}")]
    Persist { task_id: String, reason: String },
}

/// Limits of the task manager.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskLimits {
    pub max_running: usize,
    /// More than one writing agent in one workspace at a time.
    pub parallel_writers: bool,
}

impl Default for TaskLimits {
    fn default() -> Self {
        Self {
            max_running: DEFAULT_MAX_RUNNING,
            parallel_writers: false,
        }
    }
}

/// A run slot: held while a subagent runs; dropping it lets the next pending task start.
pub struct TaskSlot {
    _private: (),
}

/// Every task of the daemon.
pub struct TaskManager {
    dir: PathBuf,
    limits: TaskLimits,
    changes: broadcast::Sender<TaskChange>,
}

impl TaskManager {
    /// Capacity of the change channel; a lagging receiver misses changes, never blocks a task.
    pub const CHANGES_CAPACITY: usize = 1024;

    /// The manager of the tasks recorded under `<state_dir>/tasks/`: records of tasks that
    /// were pending or running are marked `interrupted`. Blocking (reads the records).
    pub fn load(state_dir: &Path, limits: TaskLimits) -> Arc<Self> {
        let (changes, _) = broadcast::channel(Self::CHANGES_CAPACITY);
        Arc::new(Self {
            dir: state_dir.join("tasks"),
            limits,
            changes,
        })
    }

    /// Records a new `pending` task and announces it; returns its record.
    pub async fn create(&self, new: NewTask) -> Result<TaskInfo, TaskError> {
        let _ = (&self.dir, self.limits, new);
        Err(TaskError::Persist {
            task_id: String::new(),
            reason: "tasks are not supported yet".to_owned(),
        })
    }

    /// Changes a task's record with `change`, persists it and announces it (`Finished` when
    /// its status became a finished one). Err: unknown task.
    pub async fn update(
        &self,
        task_id: &str,
        change: impl FnOnce(&mut TaskInfo) + Send,
    ) -> Result<TaskInfo, TaskError> {
        let _ = change;
        Err(TaskError::NotFound(task_id.to_owned()))
    }

    pub fn get(&self, task_id: &str) -> Option<TaskInfo> {
        let _ = task_id;
        None
    }

    /// Tasks matching `filter`, newest first.
    pub fn list(&self, filter: &TaskFilter) -> Vec<TaskInfo> {
        let _ = filter;
        Vec::new()
    }

    /// Changes of every task.
    pub fn changes(&self) -> broadcast::Receiver<TaskChange> {
        self.changes.subscribe()
    }

    /// The token `stop` cancels for a running task (a subagent's run, a shell's process).
    pub fn stop_token(&self, task_id: &str) -> CancellationToken {
        let _ = task_id;
        CancellationToken::new()
    }

    /// Stops a task: cancels its token; the task's runner records `cancelled` when it has
    /// stopped. Err: unknown or already finished.
    pub async fn stop(&self, task_id: &str) -> Result<TaskInfo, TaskError> {
        Err(TaskError::NotFound(task_id.to_owned()))
    }

    /// Where a task's output is kept (a shell's capped output; a subagent's final message).
    pub fn output_path(&self, task_id: &str) -> PathBuf {
        self.dir.join(format!("{task_id}.out"))
    }

    /// Waits for a run slot for a subagent in `workspace` (read-only agents never wait for a
    /// writer); the task stays `pending` meanwhile.
    pub async fn slot(&self, workspace: &Path, read_only: bool) -> TaskSlot {
        let _ = (workspace, read_only);
        TaskSlot { _private: () }
    }

    /// Stops every running task (daemon shutdown): subagents cancelled, shell groups killed.
    pub async fn shutdown(&self) {}
}
