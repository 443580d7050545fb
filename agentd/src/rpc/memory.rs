//! Handler of `memory/get`: the curated memory stores sessions in a directory use, read on a
//! blocking thread (it walks up to the project root and reads two files).

use std::path::PathBuf;
use std::sync::Arc;

use protocol::error as codes;
use protocol::memory::{MemoryGetParams, MemoryGetResult};

use super::{RpcResult, internal, rpc_error};
use crate::server::ConnectionContext;
use crate::state::DaemonState;

pub async fn get(
    state: Arc<DaemonState>,
    params: MemoryGetParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<MemoryGetResult> {
    let cwd = PathBuf::from(&params.cwd);
    if !cwd.is_absolute() {
        return Err(rpc_error(
            codes::INVALID_PARAMS,
            format!(
                "cwd {} is not absolute; send the directory's absolute path",
                cwd.display()
            ),
        ));
    }
    let stores = state.memory.clone();
    let snapshot = tokio::task::spawn_blocking(move || {
        let cwd = std::fs::canonicalize(&cwd)
            .ok()
            .filter(|cwd| cwd.is_dir())
            .ok_or_else(|| {
                rpc_error(
                    codes::INVALID_PARAMS,
                    format!(
                        "cwd {} is not a directory; send an existing directory",
                        cwd.display()
                    ),
                )
            })?;
        Ok::<_, jsonrpsee::types::ErrorObjectOwned>(stores.snapshot(&cwd))
    })
    .await
    .map_err(|err| internal(err.to_string()))??;
    Ok(crate::wire::memory_get(&snapshot))
}
