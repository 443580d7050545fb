//! Handler of `memory/get`: the curated memory stores sessions in a directory use, read on a
//! blocking thread (it walks up to the project root and reads two files).

use std::sync::Arc;

use protocol::memory::{MemoryGetParams, MemoryGetResult};

use super::{RpcResult, internal};
use crate::server::ConnectionContext;
use crate::state::DaemonState;

pub async fn get(
    state: Arc<DaemonState>,
    params: MemoryGetParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<MemoryGetResult> {
    let cwd = super::workspace_dir(&params.cwd).await?;
    let stores = state.memory.clone();
    let snapshot = tokio::task::spawn_blocking(move || stores.snapshot(&cwd))
        .await
        .map_err(|err| internal(err.to_string()))?;
    Ok(crate::wire::memory_get(&snapshot))
}
