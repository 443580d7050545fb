//! The handler of `extension/register`: the connection must have declared
//! `capabilities.extensions` (it answers the daemon's requests), the scope's cwd is made
//! canonical, and the registration joins the daemon's `Extensions` for as long as the
//! connection lives.

use std::sync::Arc;

use protocol::error as codes;
use protocol::extension::{ExtensionRegisterParams, ExtensionRegisterResult};

use super::{RpcResult, refuse_if_stopping, rpc_error};
use crate::extension::{ExtensionPeer, RegisterError};
use crate::server::ConnectionContext;
use crate::state::DaemonState;

pub async fn register(
    state: Arc<DaemonState>,
    params: ExtensionRegisterParams,
    connection: Arc<ConnectionContext>,
) -> RpcResult<ExtensionRegisterResult> {
    refuse_if_stopping(&state)?;
    if !connection
        .extensions_capability
        .get()
        .copied()
        .unwrap_or(false)
    {
        return Err(rpc_error(
            codes::INVALID_REQUEST,
            "this connection did not declare capabilities.extensions in `initialize`: declare it (the daemon then sends extension/callTool and extension/event requests on this connection, which the client must answer) and register again",
        ));
    }
    let scope = match &params.scope.cwd {
        Some(cwd) => Some(super::workspace_dir(cwd).await?),
        None => None,
    };
    let peer: Arc<dyn ExtensionPeer> = connection.peer.clone();
    let name = params.name.clone();
    let registered = state
        .extensions
        .register(params, scope, peer, connection.connection_id)
        .map_err(|err| {
            let code = match &err {
                RegisterError::Invalid(_) => codes::INVALID_PARAMS,
                RegisterError::Conflict(_) => codes::CONFLICT,
                RegisterError::TooMany(_) => codes::OVERLOADED,
            };
            rpc_error(code, err.to_string())
        })?;
    tracing::info!(
        connection_id = connection.connection_id,
        extension = %name,
        id = %registered.extension_id,
        tools = registered.tools.len(),
        "extension registered"
    );
    Ok(registered)
}
