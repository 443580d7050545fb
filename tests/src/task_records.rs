//! Task records written on disk before a daemon starts, the way the daemon writes them: tests
//! and the bench read them back through `task/*` and `agentctl task` without running a
//! subagent (a record left `running` comes back `interrupted`).

use std::path::PathBuf;

use agentd::task::TaskRecord;
use protocol::event::Usage;
use protocol::task::{TaskKind, TaskStatus};

use crate::harness::TestEnv;

/// The daemon's task records directory in `env`.
pub fn tasks_dir(env: &TestEnv) -> PathBuf {
    env.path("state").join("agentd").join("tasks")
}

/// A record of a task of `kind` in `status`, created at `created_at` (RFC 3339), in the
/// workspace of `env`.
pub fn record(
    env: &TestEnv,
    task_id: &str,
    kind: TaskKind,
    status: TaskStatus,
    created_at: &str,
) -> TaskRecord {
    TaskRecord {
        task_id: task_id.to_owned(),
        kind,
        status,
        parent_session_id: None,
        child_session_id: None,
        agent_type: (kind == TaskKind::Subagent).then(|| "general-purpose".to_owned()),
        description: format!("{task_id} description"),
        cwd: env.workspace().display().to_string(),
        created_at: created_at.to_owned(),
        started_at: (status != TaskStatus::Pending).then(|| created_at.to_owned()),
        finished_at: status.is_finished().then(|| created_at.to_owned()),
        result: None,
        error: None,
        exit_code: None,
        usage: Usage::default(),
        notification_pending: false,
        not_persisted: false,
        stalled: false,
        background: false,
    }
}

/// Writes `task`'s record (and, when given, its output file) where the daemon keeps them.
pub fn seed(env: &TestEnv, task: &TaskRecord, output: Option<&str>) {
    let dir = tasks_dir(env);
    agentd_core::paths::prepare_private_dir(&dir).expect("tasks dir");
    agentd::task::store::write_record(&dir, task).expect("write task record");
    if let Some(output) = output {
        std::fs::write(dir.join(format!("{}.out", task.task_id)), output).expect("write output");
    }
}
