//! What the task tools and a background `run_shell` need of the daemon's background tasks, as
//! traits: the task manager lives above this layer and implements them (`task::for_tools`),
//! so tools never name it.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use protocol::task::{TaskKind, TaskStatus};

use agentd_policy::process::sandbox::ShellSandbox;

/// A background task as the task tools show it to the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSummary {
    pub task_id: String,
    pub kind: TaskKind,
    pub status: TaskStatus,
    /// A subagent's agent type.
    pub agent_type: Option<String>,
    pub description: String,
    pub cwd: String,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
    /// A subagent's final message.
    pub result: Option<String>,
    /// What to do next with it, when there is something to say (an interrupted task).
    pub hint: Option<String>,
}

/// The end of a task's output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputTail {
    pub text: String,
    /// Output before `text` was left out.
    pub cut: bool,
}

/// The background tasks of sessions, as `task_list`, `task_get`, `task_output` and
/// `task_stop` see them: a session sees and stops only the tasks it started.
pub trait SessionTasks: Send + Sync {
    /// The task with this id, when `session_id` started it.
    fn get(&self, session_id: &str, task_id: &str) -> Option<TaskSummary>;
    /// The tasks `session_id` started, newest first: only pending and running ones unless
    /// `all`.
    fn list(&self, session_id: &str, all: bool) -> Vec<TaskSummary>;
    /// The last `max_bytes` (at most) of a task's output. Err: a message for the model.
    fn output_tail<'a>(
        &'a self,
        task: &'a TaskSummary,
        max_bytes: usize,
    ) -> BoxFuture<'a, Result<OutputTail, String>>;
    /// Stops a task; it ends `cancelled`. Err: why it could not be stopped.
    fn stop<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, Result<(), String>>;
}

/// Where `run_shell {runInBackground: true}` starts its command.
pub trait ShellStarter: Send + Sync {
    /// Records a background shell task of `session_id` running `command` in `cwd`, confined
    /// by `sandbox`, and starts it; its task id. Err: a message for the model.
    fn start<'a>(
        &'a self,
        command: String,
        cwd: PathBuf,
        session_id: &'a str,
        sandbox: &'a Arc<ShellSandbox>,
    ) -> BoxFuture<'a, Result<String, String>>;
}

/// What a background run_shell needs: where shells start, and the session that starts it
/// (deleting the session kills its shells).
#[derive(Clone)]
pub struct BackgroundShells {
    pub shells: Arc<dyn ShellStarter>,
    pub session_id: String,
}

impl std::fmt::Debug for BackgroundShells {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("BackgroundShells")
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}
