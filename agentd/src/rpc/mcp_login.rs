//! Handlers of the OAuth login of HTTP MCP servers: `mcp/login` (the daemon discovers the
//! authorization server, listens on a loopback port for the redirect and answers the URL to
//! open), `mcp/loginStatus` (a bounded wait for its end) and `mcp/logout`. The daemon owns the
//! tokens and the servers; a client only opens the URL and follows the login.

use std::sync::Arc;
use std::time::Duration;

use protocol::Method;
use protocol::error::{self as codes, echo};
use protocol::mcp::*;
use protocol::methods::McpList;

use super::{RpcResult, refuse_if_stopping, rpc_error, rpc_error_suggesting};
use crate::server::ConnectionContext;
use crate::state::DaemonState;
use agentd_work::mcp::config::McpEntries;
use agentd_work::mcp::manager::LoginState;
use agentd_work::mcp::{McpServerConfig, McpTransport};

/// The longest `waitSecs` of `mcp/loginStatus`: well inside a client's request timeout.
const MAX_STATUS_WAIT: Duration = Duration::from_secs(30);

pub async fn login(
    state: Arc<DaemonState>,
    params: McpLoginParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<McpLoginResult> {
    refuse_if_stopping(&state)?;
    let config = server_config(&state, &params.name, params.cwd.as_deref()).await?;
    let started = state
        .mcp
        .login(&config)
        .await
        .map_err(|message| rpc_error(codes::CONFIG_ERROR, message))?;
    Ok(McpLoginResult {
        login_id: started.login_id,
        authorization_url: started.authorization_url,
        redirect_uri: started.redirect_uri,
        timeout_secs: started.timeout.as_secs(),
    })
}

pub async fn login_status(
    state: Arc<DaemonState>,
    params: McpLoginStatusParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<McpLoginStatusResult> {
    let wait = Duration::from_secs(params.wait_secs).min(MAX_STATUS_WAIT);
    let now = state
        .mcp
        .login_state(&params.login_id, wait)
        .await
        .ok_or_else(|| {
            rpc_error(
                codes::NOT_FOUND,
                format!(
                    "no login {} is known (the daemon restarted, or it ended long ago)",
                    echo(&params.login_id)
                ),
            )
        })?;
    Ok(match now {
        LoginState::Pending => McpLoginStatusResult {
            state: McpLoginState::Pending,
            error: None,
        },
        LoginState::Done => McpLoginStatusResult {
            state: McpLoginState::Done,
            error: None,
        },
        LoginState::Failed(error) => McpLoginStatusResult {
            state: McpLoginState::Failed,
            error: Some(error),
        },
    })
}

pub async fn logout(
    state: Arc<DaemonState>,
    params: McpLogoutParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<McpLogoutResult> {
    let config = server_config(&state, &params.name, params.cwd.as_deref()).await?;
    let deleted = state
        .mcp
        .logout(&config)
        .await
        .map_err(|message| rpc_error(codes::INVALID_PARAMS, message))?;
    Ok(McpLogoutResult { deleted })
}

/// The HTTP server `name`: configured for `cwd`; without one, the one the daemon runs (every
/// one of that name at the same URL), else the user's config.toml entry.
async fn server_config(
    state: &DaemonState,
    name: &str,
    cwd: Option<&str>,
) -> RpcResult<McpServerConfig> {
    let candidates: Vec<McpServerConfig> = match cwd {
        Some(cwd) => {
            let cwd = super::workspace_dir(cwd).await?;
            let resolved = state
                .sessions
                .mcp_servers(cwd, McpEntries::default())
                .await
                .map_err(|err| super::internal(err.to_string()))?;
            resolved
                .set
                .servers
                .into_iter()
                .filter(|config| config.name == name)
                .collect()
        }
        None => {
            let running: Vec<McpServerConfig> = state
                .mcp
                .servers()
                .into_iter()
                .filter(|info| info.key.name == name)
                .map(|info| info.config)
                .collect();
            if running.is_empty() {
                state
                    .sessions
                    .user_mcp_servers()
                    .await
                    .into_iter()
                    .filter(|config| config.name == name)
                    .collect()
            } else {
                running
            }
        }
    };
    let mut urls: Vec<&str> = candidates
        .iter()
        .filter_map(|config| match &config.transport {
            McpTransport::Http { url, .. } => Some(url.as_str()),
            McpTransport::Stdio { .. } => None,
        })
        .collect();
    urls.sort_unstable();
    urls.dedup();
    match (candidates.first(), urls.len()) {
        (None, _) => Err(rpc_error_suggesting(
            codes::NOT_FOUND,
            format!(
                "no MCP server named {} is configured{}",
                echo(name),
                if cwd.is_some() {
                    " there"
                } else {
                    " in config.toml or running"
                }
            ),
            Some(McpList::NAME),
        )),
        (Some(_), 0) => Err(rpc_error(
            codes::INVALID_PARAMS,
            format!(
                "MCP server {} is a stdio server; only HTTP servers log in with OAuth",
                echo(name)
            ),
        )),
        (Some(config), 1) => Ok(config.clone()),
        (Some(_), _) => Err(rpc_error(
            codes::INVALID_PARAMS,
            format!(
                "MCP servers named {} run at several URLs ({}); send the cwd of the project",
                echo(name),
                urls.join(", ")
            ),
        )),
    }
}
