//! Handlers of `mcp/list` (the servers the manager knows, and with a `cwd` what is configured
//! there and its problems) and `mcp/restart`.

use std::path::PathBuf;
use std::sync::Arc;

use protocol::Method;
use protocol::error::{self as codes, echo};
use protocol::mcp::*;
use protocol::methods::McpList;

use super::{RpcResult, internal, refuse_if_stopping, rpc_error, rpc_error_suggesting};
use crate::server::ConnectionContext;
use crate::state::DaemonState;
use agentd_work::mcp::config::McpEntries;

pub async fn list(
    state: Arc<DaemonState>,
    params: McpListParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<McpListResult> {
    let known = state.mcp.servers();
    let mut servers: Vec<McpServerListing> =
        known.iter().map(crate::wire::mcp_running_server).collect();
    let mut problems = Vec::new();
    if let Some(cwd) = &params.cwd {
        let cwd = super::workspace_dir(cwd).await?;
        let resolved = state
            .sessions
            .mcp_servers(cwd, McpEntries::default())
            .await
            .map_err(|err| internal(err.to_string()))?;
        let (root, set) = (resolved.project.root, resolved.set);
        let runs_here = |name: &str| {
            known
                .iter()
                .any(|info| info.key.name == name && info.key.project_root == root)
        };
        let configured = set
            .servers
            .iter()
            .filter(|config| !runs_here(&config.name))
            .map(|config| crate::wire::mcp_configured_server(config, McpServerState::Configured));
        let untrusted = set
            .untrusted
            .iter()
            .map(|config| crate::wire::mcp_configured_server(config, McpServerState::Untrusted));
        let disabled = set
            .disabled
            .iter()
            .map(|config| crate::wire::mcp_configured_server(config, McpServerState::Disabled));
        servers.extend(configured.chain(untrusted).chain(disabled));
        problems = set.problems.iter().map(crate::wire::mcp_problem).collect();
    }
    servers.sort_by(|a, b| (&a.name, &a.project_root).cmp(&(&b.name, &b.project_root)));
    Ok(McpListResult { servers, problems })
}

pub async fn restart(
    state: Arc<DaemonState>,
    params: McpRestartParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<McpRestartResult> {
    refuse_if_stopping(&state)?;
    super::config::read_pending_edit(&state).await;
    let root = match &params.cwd {
        Some(cwd) => {
            let cwd = super::workspace_dir(cwd).await?;
            tokio::task::spawn_blocking(move || agentd_policy::trust::project_root(&cwd))
                .await
                .map_err(|err| internal(err.to_string()))?
        }
        None => only_root_of(&state, &params.name)?,
    };
    state
        .mcp
        .restart(&params.name, &root)
        .await
        .map_err(|message| rpc_error_suggesting(codes::NOT_FOUND, message, Some(McpList::NAME)))?;
    Ok(McpRestartResult { restarted: true })
}

/// The project root of the one server named `name`; several are `-32602` (the client sends a
/// `cwd`), none is `-32005`.
fn only_root_of(state: &DaemonState, name: &str) -> RpcResult<PathBuf> {
    let mut roots: Vec<PathBuf> = state
        .mcp
        .servers()
        .into_iter()
        .filter(|info| info.key.name == name)
        .map(|info| info.key.project_root)
        .collect();
    roots.sort();
    roots.dedup();
    match roots.as_slice() {
        [] => Err(rpc_error_suggesting(
            codes::NOT_FOUND,
            format!("no MCP server named {} runs", echo(name)),
            Some(McpList::NAME),
        )),
        [root] => Ok(root.clone()),
        several => Err(rpc_error(
            codes::INVALID_PARAMS,
            format!(
                "MCP servers named {} run for several projects ({}); send the cwd of the one to restart",
                echo(name),
                several
                    .iter()
                    .map(|root| root.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}
