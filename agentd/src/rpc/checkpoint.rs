//! `session/checkpoints`, `session/diff` and `session/rewind` (`session::rewind` does the work;
//! a rewind is carried to its end in a task of its own).

use std::sync::Arc;

use protocol::checkpoint::*;

use super::RpcResult;
use crate::server::ConnectionContext;
use crate::state::DaemonState;

pub async fn checkpoints(
    state: Arc<DaemonState>,
    params: SessionCheckpointsParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<SessionCheckpointsResult> {
    Ok(state.sessions.checkpoints(params).await?)
}

pub async fn diff(
    state: Arc<DaemonState>,
    params: SessionDiffParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<SessionDiffResult> {
    Ok(state.sessions.diff(params).await?)
}

pub async fn rewind(
    state: Arc<DaemonState>,
    params: SessionRewindParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<SessionRewindResult> {
    super::refuse_if_stopping(&state)?;
    // Carried to its end even if the client goes away meanwhile: a rewind stopped halfway
    // would leave the workspace half restored.
    let sessions = std::sync::Arc::clone(&state.sessions);
    let done = tokio::spawn(async move { sessions.rewind(params).await })
        .await
        .map_err(|err| {
            crate::session::SessionError::Internal(format!("the rewind failed: {err}"))
        })?;
    Ok(done?)
}
