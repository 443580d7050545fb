//! Handlers of the `session/*` methods: translate params into session-manager and actor calls
//! and their errors into JSON-RPC errors. No session logic lives here.

use std::sync::Arc;

use jsonrpsee::types::ErrorObjectOwned;
use protocol::error as codes;
use protocol::session::*;

use super::{RpcResult, rpc_error, rpc_error_suggesting};
use crate::server::ConnectionContext;
use crate::session::{DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, SessionError};
use crate::state::DaemonState;

impl From<SessionError> for ErrorObjectOwned {
    fn from(err: SessionError) -> Self {
        let code = match &err {
            SessionError::NotFound(_) => codes::NOT_FOUND,
            SessionError::Conflict(_) => codes::CONFLICT,
            SessionError::InvalidParams(_) | SessionError::InvalidId(_) => codes::INVALID_PARAMS,
            SessionError::Config(_) => codes::CONFIG_ERROR,
            SessionError::Internal(_) | SessionError::Upstream(_) => codes::INTERNAL_ERROR,
        };
        rpc_error_suggesting(code, err.to_string(), err.suggested_method())
    }
}

pub async fn create(
    state: Arc<DaemonState>,
    params: SessionCreateParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<SessionCreateResult> {
    super::refuse_if_stopping(&state)?;
    let session = state.sessions.create(params).await?;
    Ok(SessionCreateResult {
        session_id: session.id().to_owned(),
        session: session.info(),
    })
}

pub async fn list(
    state: Arc<DaemonState>,
    params: SessionListParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<SessionListResult> {
    let limit = params
        .limit
        .map(|limit| (limit as usize).clamp(1, MAX_LIST_LIMIT))
        .unwrap_or(DEFAULT_LIST_LIMIT);
    let (sessions, next_cursor) = state.sessions.list(params.cursor.as_deref(), limit).await?;
    Ok(SessionListResult {
        sessions,
        next_cursor,
    })
}

pub async fn get(
    state: Arc<DaemonState>,
    params: SessionGetParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<SessionGetResult> {
    let session = state.sessions.get(&params.session_id).await?;
    let info = session.info();
    let shared = session.shared.lock();
    let history = params.include_history.then(|| {
        shared
            .history
            .iter()
            .map(agentd_core::conversation::wire::history_message)
            .collect()
    });
    Ok(SessionGetResult {
        session: info,
        history,
        queued_steers: shared.steers.iter().cloned().collect(),
        queued_follow_ups: shared.follow_ups.iter().cloned().collect(),
        mcp_servers: session.header.mcp_servers().entries.into_keys().collect(),
    })
}

pub async fn delete(
    state: Arc<DaemonState>,
    params: SessionRef,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<SessionDeleteResult> {
    state.sessions.delete(&params.session_id).await?;
    Ok(SessionDeleteResult { deleted: true })
}

pub async fn prompt(
    state: Arc<DaemonState>,
    params: SessionPromptParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<SessionPromptResult> {
    super::refuse_if_stopping(&state)?;
    check_text_length("prompt", &params.text)?;
    let images = super::images::checked(params.images)?;
    let session = state.sessions.get(&params.session_id).await?;
    Ok(session
        .prompt(
            params.text,
            params.client_request_id,
            params.queue_if_busy,
            crate::session::RunOptions {
                hold_approvals: params.hold_approvals,
                max_steps: params.max_steps,
                parent_run_id: None,
                images,
                ..Default::default()
            },
        )
        .await?)
}

pub async fn steer(
    state: Arc<DaemonState>,
    params: QueueMessageParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<QueueMessageResult> {
    check_text_length("steer", &params.text)?;
    let session = state.sessions.get(&params.session_id).await?;
    Ok(session.steer(params.text).await?)
}

pub async fn follow_up(
    state: Arc<DaemonState>,
    params: QueueMessageParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<QueueMessageResult> {
    super::refuse_if_stopping(&state)?;
    check_text_length("follow-up", &params.text)?;
    let session = state.sessions.get(&params.session_id).await?;
    Ok(session.follow_up(params.text).await?)
}

pub async fn cancel(
    state: Arc<DaemonState>,
    params: SessionRef,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<SessionCancelResult> {
    let session = state.sessions.get(&params.session_id).await?;
    let run_id = session.cancel();
    Ok(SessionCancelResult {
        cancelled: run_id.is_some(),
        run_id,
    })
}

pub async fn compact(
    state: Arc<DaemonState>,
    params: SessionCompactParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<SessionCompactResult> {
    super::refuse_if_stopping(&state)?;
    let session = state.sessions.get(&params.session_id).await?;
    Ok(session.compact().await?)
}

pub async fn update(
    state: Arc<DaemonState>,
    params: SessionUpdateParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<SessionUpdateResult> {
    super::refuse_if_stopping(&state)?;
    let session = state.sessions.update(params).await?;
    Ok(SessionUpdateResult { session })
}

pub async fn fork(
    state: Arc<DaemonState>,
    params: SessionForkParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<SessionForkResult> {
    super::refuse_if_stopping(&state)?;
    let session = state.sessions.fork(params).await?;
    Ok(SessionForkResult {
        session_id: session.session_id.clone(),
        session,
    })
}

/// User text longer than one message may be is refused (a model reply is cut instead): the
/// user can still decide what to send.
pub(super) fn check_text_length(what: &str, text: &str) -> RpcResult<()> {
    let limit = agentd_core::conversation::MAX_MESSAGE_CHARS;
    if text.len() <= limit {
        return Ok(());
    }
    let chars = text.chars().count();
    if chars <= limit {
        return Ok(());
    }
    Err(rpc_error(
        codes::INVALID_PARAMS,
        format!(
            "{what} too long: {chars} chars, the limit is {limit}; put large inputs in a file in the workspace and refer to it"
        ),
    ))
}
