//! The task manager as the tools see it: `tools::SessionTasks` (what `task_list`, `task_get`,
//! `task_output` and `task_stop` read and stop) and `tools::ShellStarter` (where a background
//! `run_shell` starts), implemented here so tools never name the manager.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::shell::{ShellStart, ShellTasks};
use super::{TaskFilter, TaskManager, TaskRecord, view};
use agentd_policy::process::sandbox::ShellSandbox;
use agentd_work::tools::{OutputTail, SessionTasks, ShellStarter, TaskSummary};

impl SessionTasks for TaskManager {
    fn get(&self, session_id: &str, task_id: &str) -> Option<TaskSummary> {
        let task = TaskManager::get(self, task_id)?;
        (task.parent_session_id.as_deref() == Some(session_id)).then(|| summary(&task))
    }

    fn list(&self, session_id: &str, all: bool) -> Vec<TaskSummary> {
        TaskManager::list(
            self,
            &TaskFilter {
                parent_session_id: Some(session_id.to_owned()),
                status: None,
                all,
            },
        )
        .iter()
        .map(summary)
        .collect()
    }

    fn output_tail<'a>(
        &'a self,
        task: &'a TaskSummary,
        max_bytes: usize,
    ) -> BoxFuture<'a, Result<OutputTail, String>> {
        Box::pin(async move {
            let record = TaskManager::get(self, &task.task_id)
                .ok_or_else(|| format!("task {} is gone", task.task_id))?;
            // Read the end of the output: find its length first, then read the last part.
            let path = self.output_path(&record.task_id);
            let length = tokio::fs::metadata(&path)
                .await
                .map(|meta| meta.len())
                .unwrap_or(0);
            let from = length.saturating_sub(max_bytes as u64);
            let chunk = view::read_output(path, &record, from, max_bytes).await?;
            Ok(OutputTail {
                text: chunk.text,
                cut: from > 0,
            })
        })
    }

    fn stop<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            TaskManager::stop(self, task_id)
                .await
                .map(drop)
                .map_err(|err| err.to_string())
        })
    }
}

/// Background shells as a run's tools start them: the daemon's task records and its
/// running shells.
pub struct BackgroundShellStarter {
    pub tasks: Arc<TaskManager>,
    pub shells: Arc<ShellTasks>,
}

impl ShellStarter for BackgroundShellStarter {
    fn start<'a>(
        &'a self,
        command: String,
        cwd: PathBuf,
        session_id: &'a str,
        sandbox: &'a Arc<ShellSandbox>,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let start = ShellStart {
                command,
                cwd,
                session_id: Some(session_id.to_owned()),
            };
            let task = self.shells.start(&self.tasks, sandbox, start).await?;
            Ok(task.task_id)
        })
    }
}

/// What the tools show of a record.
fn summary(task: &TaskRecord) -> TaskSummary {
    TaskSummary {
        task_id: task.task_id.clone(),
        kind: task.kind,
        status: task.status,
        agent_type: task.agent_type.clone(),
        description: task.description.clone(),
        cwd: task.cwd.clone(),
        created_at: task.created_at.clone(),
        started_at: task.started_at.clone(),
        finished_at: task.finished_at.clone(),
        exit_code: task.exit_code,
        error: task.error.clone(),
        result: task.result.clone(),
        hint: view::hint(task),
    }
}

#[cfg(test)]
#[path = "for_tools_tests.rs"]
mod tests;
