//! Handlers of the `task/*` methods: read and steer the daemon's background tasks through the
//! task manager and the child sessions. No task logic lives here.

use std::sync::Arc;

use jsonrpsee::types::ErrorObjectOwned;
use protocol::Method;
use protocol::error::{self as codes, echo};
use protocol::methods;
use protocol::task::*;

use super::{RpcResult, rpc_error, rpc_error_suggesting};
use crate::server::ConnectionContext;
use crate::state::DaemonState;
use crate::task::{TaskError, TaskFilter, TaskRecord, view};

impl From<TaskError> for ErrorObjectOwned {
    fn from(err: TaskError) -> Self {
        match err {
            TaskError::NotFound(task_id) => not_found(&task_id),
            TaskError::Finished { .. } => rpc_error(codes::CONFLICT, err.to_string()),
            TaskError::Persist { .. } => rpc_error(codes::INTERNAL_ERROR, err.to_string()),
            TaskError::UnknownCursor(_) => rpc_error(codes::INVALID_PARAMS, err.to_string()),
        }
    }
}

/// `task not found`, suggesting `task/list`.
fn not_found(task_id: &str) -> ErrorObjectOwned {
    rpc_error_suggesting(
        codes::NOT_FOUND,
        format!(
            "task not found: {}; list the tasks to see which exist",
            echo(task_id)
        ),
        Some(methods::TaskList::NAME),
    )
}

fn task(state: &DaemonState, task_id: &str) -> RpcResult<TaskRecord> {
    state.tasks.get(task_id).ok_or_else(|| not_found(task_id))
}

pub async fn list(
    state: Arc<DaemonState>,
    params: TaskListParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<TaskListResult> {
    if let Some(session_id) = &params.session_id {
        crate::session::check_session_id(session_id)?;
    }
    let filter = TaskFilter {
        parent_session_id: params.session_id,
        // Asking for a finished status asks for finished tasks.
        all: params.all || params.status.is_some_and(TaskStatus::is_finished),
        status: params.status,
    };
    let limit = params
        .limit
        .map(|limit| (limit as usize).clamp(1, crate::task::MAX_LIST_LIMIT))
        .unwrap_or(crate::task::DEFAULT_LIST_LIMIT);
    let (tasks, next_cursor) = state.tasks.page(&filter, params.cursor.as_deref(), limit)?;
    Ok(TaskListResult {
        tasks: tasks.iter().map(TaskRecord::to_info).collect(),
        next_cursor,
    })
}

pub async fn get(
    state: Arc<DaemonState>,
    params: TaskGetParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<TaskGetResult> {
    let task = task(&state, &params.task_id)?;
    Ok(TaskGetResult {
        hint: view::hint(&task),
        task: task.to_info(),
    })
}

pub async fn output(
    state: Arc<DaemonState>,
    params: TaskOutputParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<TaskOutputResult> {
    let task = task(&state, &params.task_id)?;
    let chunk = view::read_output(
        state.tasks.output_path(&task.task_id),
        &task,
        params.after_offset,
        view::MAX_OUTPUT_CHUNK_BYTES,
    )
    .await
    .map_err(|message| rpc_error(codes::INTERNAL_ERROR, message))?;
    Ok(TaskOutputResult {
        text: chunk.text,
        next_offset: chunk.next_offset,
        truncated: chunk.more,
        status: task.status,
    })
}

pub async fn steer(
    state: Arc<DaemonState>,
    params: TaskSteerParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<TaskSteerResult> {
    super::session::check_text_length("steer", &params.text)?;
    let child_session_id = running_child(&state, &params.task_id, "steer")?;
    let session = state.sessions.get(&child_session_id).await?;
    let queued = session.steer(params.text).await?;
    Ok(TaskMessageResult {
        child_session_id,
        run_id: queued.run_id,
        queued: queued.queued,
    })
}

pub async fn follow_up(
    state: Arc<DaemonState>,
    params: TaskFollowUpParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<TaskFollowUpResult> {
    super::refuse_if_stopping(&state)?;
    super::session::check_text_length("follow-up", &params.text)?;
    let child_session_id = running_child(&state, &params.task_id, "follow up")?;
    let session = state.sessions.get(&child_session_id).await?;
    let queued = session.follow_up(params.text).await?;
    Ok(TaskMessageResult {
        child_session_id,
        run_id: queued.run_id,
        queued: queued.queued,
    })
}

pub async fn stop(
    state: Arc<DaemonState>,
    params: TaskStopParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<TaskStopResult> {
    let task = task(&state, &params.task_id)?;
    if task.status.is_finished() {
        return Err(finished(&task, "stop"));
    }
    let stopping = state.tasks.stop(&params.task_id).await?;
    // The runner sees the stop token; the child's run is cancelled here too, so a stop
    // reaches a running child even between the runner's checks (cancel is idempotent).
    if let Some(child) = &stopping.child_session_id {
        match state.sessions.get(child).await {
            Ok(session) => {
                session.cancel();
            }
            Err(err) => {
                tracing::debug!(task = %stopping.task_id, "child session not cancelled: {err}")
            }
        }
    }
    Ok(TaskStopResult {
        task: stopping.to_info(),
    })
}

pub async fn start(
    state: Arc<DaemonState>,
    params: TaskStartParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<TaskStartResult> {
    super::refuse_if_stopping(&state)?;
    if params.prompt.trim().is_empty() {
        return Err(rpc_error(
            codes::INVALID_PARAMS,
            "the prompt is empty; say what the subagent should do",
        ));
    }
    super::session::check_text_length("prompt", &params.prompt)?;
    let cwd = super::workspace_dir(&params.cwd).await?;
    let task = state
        .sessions
        .start_task(
            cwd,
            agentd_work::tools::TaskParams {
                prompt: params.prompt,
                agent_type: params.agent_type,
                description: params.description,
                run_in_background: true,
                fork: false,
            },
            params.permission_mode,
        )
        .await?;
    Ok(TaskStartResult {
        task_id: task.task_id.clone(),
        task: task.to_info(),
    })
}

/// The child session of a subagent task that has not ended, for a message to it.
fn running_child(state: &DaemonState, task_id: &str, what: &str) -> RpcResult<String> {
    let task = task(state, task_id)?;
    if task.kind != TaskKind::Subagent {
        return Err(rpc_error(
            codes::INVALID_PARAMS,
            format!(
                "task {task_id} is a shell command; only subagent tasks take messages (stop it and start another instead)"
            ),
        ));
    }
    if task.status.is_finished() {
        return Err(finished(&task, what));
    }
    let Some(child) = task.child_session_id else {
        return Err(rpc_error(
            codes::CONFLICT,
            format!(
                "task {task_id} is still pending (waiting for a run slot) and has no session yet; try again once it runs"
            ),
        ));
    };
    Ok(child)
}

/// A task that has ended takes no more messages and cannot be stopped.
fn finished(task: &TaskRecord, what: &str) -> ErrorObjectOwned {
    let status = task.status.as_str();
    rpc_error(
        codes::CONFLICT,
        format!(
            "cannot {what} task {}: it has already ended ({status}); read its output, or start a new task",
            task.task_id
        ),
    )
}
