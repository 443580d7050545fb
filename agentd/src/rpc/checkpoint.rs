//! `session/checkpoints`, `session/diff` and `session/rewind` (`session::rewind` does the work).

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
    Ok(state.sessions.rewind(params).await?)
}
