//! The dispatch table: every method the daemon serves, mapped to its handler. Handlers run
//! concurrently (one task per request); per-session ordering is the session actor's job.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::{Extensions, ResponsePayload, RpcModule};
use protocol::Method;
use protocol::daemon::*;
use protocol::error::echo;
use protocol::methods;

mod agents;
mod approval;
mod budget;
mod checkpoint;
mod commands;
mod config;
mod elicitation;
mod extension;
mod images;
mod mcp;
mod mcp_login;
mod memory;
mod project;
mod session;
mod skills;
mod subscription;
mod task;

use crate::server::ConnectionContext;
use crate::server::params;
use crate::state::DaemonState;

type RpcResult<T> = Result<T, ErrorObjectOwned>;

/// Build the method table. Every handler runs concurrently with the others; commands that must
/// be ordered per session (prompt, steer, follow-up) are serialised by the session's actor.
pub fn build(state: Arc<DaemonState>) -> anyhow::Result<RpcModule<DaemonState>> {
    use methods::*;
    let mut module = RpcModule::from_arc(state);
    register::<Initialize, _, _>(&mut module, initialize)?;
    register::<DaemonStatus, _, _>(&mut module, daemon_status)?;
    register::<DaemonShutdown, _, _>(&mut module, daemon_shutdown)?;
    register::<DaemonReload, _, _>(&mut module, config::reload)?;
    register::<SessionCreate, _, _>(&mut module, session::create)?;
    register::<SessionList, _, _>(&mut module, session::list)?;
    register::<SessionGet, _, _>(&mut module, session::get)?;
    register::<SessionDelete, _, _>(&mut module, session::delete)?;
    register::<SessionPrompt, _, _>(&mut module, session::prompt)?; // via the session actor
    register::<SessionSteer, _, _>(&mut module, session::steer)?; // via the session actor
    register::<SessionFollowUp, _, _>(&mut module, session::follow_up)?; // via the session actor
    register::<SessionCancel, _, _>(&mut module, session::cancel)?;
    register::<SessionCompact, _, _>(&mut module, session::compact)?; // via the session actor
    register::<SessionFork, _, _>(&mut module, session::fork)?; // the source's log writer cuts
    register::<SessionCheckpoints, _, _>(&mut module, checkpoint::checkpoints)?;
    register::<SessionDiff, _, _>(&mut module, checkpoint::diff)?;
    register::<SessionRewind, _, _>(&mut module, checkpoint::rewind)?; // holds the session idle
    register::<ApprovalList, _, _>(&mut module, approval::list)?;
    register::<ApprovalRespond, _, _>(&mut module, approval::respond)?;
    register::<ProjectTrust, _, _>(&mut module, project::trust)?;
    register::<ProjectUntrust, _, _>(&mut module, project::untrust)?;
    register::<ProjectList, _, _>(&mut module, project::list)?;
    register::<MemoryGet, _, _>(&mut module, memory::get)?;
    register_subscribe::<SessionSubscribe, _, _>(&mut module, subscription::session_subscribe)?;
    register::<SessionUnsubscribe, _, _>(&mut module, subscription::session_unsubscribe)?;
    register_subscribe::<DaemonSubscribe, _, _>(&mut module, subscription::daemon_subscribe)?;
    register::<DaemonUnsubscribe, _, _>(&mut module, subscription::daemon_unsubscribe)?;
    register::<SkillsList, _, _>(&mut module, skills::list)?;
    register::<AgentsList, _, _>(&mut module, agents::list)?;
    register::<McpList, _, _>(&mut module, mcp::list)?;
    register::<McpRestart, _, _>(&mut module, mcp::restart)?;
    register::<McpLogin, _, _>(&mut module, mcp_login::login)?; // a task of the manager waits
    register::<McpLoginStatus, _, _>(&mut module, mcp_login::login_status)?; // bounded wait
    register::<McpLogout, _, _>(&mut module, mcp_login::logout)?;
    register::<TaskList, _, _>(&mut module, task::list)?;
    register::<TaskGet, _, _>(&mut module, task::get)?;
    register::<TaskOutput, _, _>(&mut module, task::output)?;
    register::<TaskSteer, _, _>(&mut module, task::steer)?; // via the child session's actor
    register::<TaskFollowUp, _, _>(&mut module, task::follow_up)?; // via the child's actor
    register::<TaskStop, _, _>(&mut module, task::stop)?;
    register::<TaskStart, _, _>(&mut module, task::start)?;
    register::<SessionUpdate, _, _>(&mut module, session::update)?; // via the session actor
    register::<ExtensionRegister, _, _>(&mut module, extension::register)?;
    register::<CommandsList, _, _>(&mut module, commands::list)?;
    register::<SessionCommand, _, _>(&mut module, commands::run)?; // runs via the session actor
    register::<BudgetList, _, _>(&mut module, budget::list)?;
    register::<BudgetRespond, _, _>(&mut module, budget::respond)?;
    register::<ElicitationRespond, _, _>(&mut module, elicitation::respond)?;
    Ok(module)
}

/// Register an async handler for method `M`, with params parsing (object or one-element array)
/// done once here.
fn register<M, F, Fut>(module: &mut RpcModule<DaemonState>, handler: F) -> anyhow::Result<()>
where
    M: Method + 'static,
    M::Params: Send,
    M::Result: Clone + Send + 'static,
    F: Fn(Arc<DaemonState>, M::Params, Arc<ConnectionContext>) -> Fut
        + Clone
        + Send
        + Sync
        + 'static,
    Fut: Future<Output = RpcResult<M::Result>> + Send,
{
    module.register_async_method(M::NAME, move |raw, state, extensions: Extensions| {
        let handler = handler.clone();
        async move {
            agentd_core::test_seam::panic_in_method(M::NAME);
            let params = params::parse::<M::Params>(&raw)?;
            let connection = extensions
                .get::<Arc<ConnectionContext>>()
                .cloned()
                .ok_or_else(|| internal("request without a connection context"))?;
            handler(state, params, connection).await
        }
    })?;
    Ok(())
}

/// Register a subscribe method `M`: like `register`, but the handler answers a payload that
/// tells it when the answer is queued (its forwarder starts sending then, never before).
fn register_subscribe<M, F, Fut>(
    module: &mut RpcModule<DaemonState>,
    handler: F,
) -> anyhow::Result<()>
where
    M: Method + 'static,
    M::Params: Send,
    M::Result: Clone + Send + 'static,
    F: Fn(Arc<DaemonState>, M::Params, Arc<ConnectionContext>) -> Fut
        + Clone
        + Send
        + Sync
        + 'static,
    Fut: Future<Output = RpcResult<ResponsePayload<'static, M::Result>>> + Send,
{
    module.register_async_method(M::NAME, move |raw, state, extensions: Extensions| {
        let handler = handler.clone();
        async move {
            agentd_core::test_seam::panic_in_method(M::NAME);
            let params = match params::parse::<M::Params>(&raw) {
                Ok(params) => params,
                Err(err) => return ResponsePayload::error(err),
            };
            let Some(connection) = extensions.get::<Arc<ConnectionContext>>().cloned() else {
                return ResponsePayload::error(internal("request without a connection context"));
            };
            handler(state, params, connection)
                .await
                .unwrap_or_else(ResponsePayload::error)
        }
    })?;
    Ok(())
}

pub fn internal(message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(protocol::error::INTERNAL_ERROR, message.into(), None::<()>)
}

pub fn rpc_error(code: i32, message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(code, message.into(), None::<()>)
}

/// An error whose `data` suggests `method` (one of `protocol::methods::ALL`) to recover: the
/// message stays free of any client's commands, each client words the suggestion itself.
pub fn rpc_error_suggesting(
    code: i32,
    message: impl Into<String>,
    method: Option<&str>,
) -> ErrorObjectOwned {
    let data = method.map(protocol::error::ErrorData::suggest_method);
    ErrorObjectOwned::owned(code, message.into(), data)
}

/// Refuse new work once the daemon is stopping.
pub fn refuse_if_stopping(state: &DaemonState) -> Result<(), ErrorObjectOwned> {
    if state.shutdown.is_cancelled() {
        return Err(rpc_error(
            protocol::error::SHUTTING_DOWN,
            "the daemon is shutting down; retry once it is back",
        ));
    }
    Ok(())
}

async fn initialize(
    state: Arc<DaemonState>,
    params: InitializeParams,
    connection: Arc<ConnectionContext>,
) -> RpcResult<InitializeResult> {
    let negotiated = protocol::version::negotiate(
        &params.protocol_version,
        protocol::version::ProtocolVersion::current(),
    )
    .map_err(|refusal| {
        rpc_error(
            protocol::error::UNSUPPORTED_PROTOCOL_VERSION,
            refusal.to_string(),
        )
    })?;
    if state.shutdown.is_cancelled() {
        return Err(rpc_error(
            protocol::error::SHUTTING_DOWN,
            "the daemon is shutting down",
        ));
    }
    let _ = connection.client_name.set(params.client_info.name.clone());
    // The first `initialize` of a connection decides, like its name and capabilities.
    let negotiated = *connection.protocol_version.get_or_init(|| negotiated);
    let _ = connection
        .approvals_capability
        .set(params.capabilities.approvals);
    let _ = connection
        .extensions_capability
        .set(params.capabilities.extensions);
    connection
        .initialized
        .store(true, std::sync::atomic::Ordering::Release);
    tracing::debug!(
        connection_id = connection.connection_id,
        client = %params.client_info.name,
        version = %params.client_info.version,
        answers_approvals = connection.answers_approvals(),
        "client initialized"
    );
    Ok(InitializeResult {
        server_info: Implementation {
            name: "agentd".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        },
        protocol_version: negotiated.to_string(),
        capabilities: Capabilities {
            methods: methods::ALL.iter().map(|m| (*m).to_owned()).collect(),
            notifications: vec![
                protocol::event::SESSION_EVENT.to_owned(),
                protocol::event::DAEMON_EVENT.to_owned(),
            ],
            max_line_bytes: crate::server::ServerLimits::default().max_line_bytes as u64,
            extensions: true,
        },
    })
}

async fn daemon_status(
    state: Arc<DaemonState>,
    _params: DaemonStatusParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<DaemonStatusResult> {
    let config = config::status(&state).await;
    Ok(DaemonStatusResult {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        protocol_version: protocol::PROTOCOL_VERSION.to_owned(),
        pid: std::process::id(),
        started_at: humantime::format_rfc3339_seconds(state.started_at).to_string(),
        uptime_secs: state.started.elapsed().as_secs(),
        socket_path: state.paths.socket.display().to_string(),
        state_dir: state.paths.state_dir.display().to_string(),
        config_path: state.paths.config.display().to_string(),
        config_error: state.sessions.config_error(),
        counts: StatusCounts {
            sessions: state.sessions.count() as u64,
            loaded_sessions: state.sessions.loaded_count() as u64,
            active_runs: state.sessions.active_runs() as u64,
            tasks: 0,
            mcp_servers: state.mcp.running() as u64,
        },
        connected_clients: state.connections.open_connections(),
        panics: agentd_core::logging::panic_count(),
        sandbox: state.sessions.sandbox_status(),
        checkpoints: state.sessions.checkpoints_status().await,
        config_loaded: state.sessions.config_loaded(),
        providers: state.sessions.providers(),
        default_provider: state.sessions.default_provider(),
        // The environment does not change while the daemon runs: this is the start's.
        env_hash: protocol::daemon::env_hash(std::env::vars_os().map(|(name, value)| {
            (
                name.to_string_lossy().into_owned(),
                value.to_string_lossy().into_owned(),
            )
        })),
        config_loaded_at: Some(config.loaded_at),
        config_state: Some(config.state),
        needs_restart: config.needs_restart,
        service_manager: state.service_unit.as_ref().map(|_| "systemd".to_owned()),
        service_unit: state.service_unit.clone(),
        executable: state
            .executable
            .as_ref()
            .map(|path| path.display().to_string()),
        context_limits: state.sessions.context_limits(),
    })
}

async fn daemon_shutdown(
    state: Arc<DaemonState>,
    _params: DaemonShutdownParams,
    connection: Arc<ConnectionContext>,
) -> RpcResult<DaemonShutdownResult> {
    tracing::info!(
        connection_id = connection.connection_id,
        "shutdown requested by a client"
    );
    state.shutdown.cancel();
    Ok(DaemonShutdownResult {
        shutting_down: true,
    })
}

/// The directory a `cwd` param names: absolute, existing, canonical; else `-32602` saying
/// what to send. (`agents/list`, `skills/list`, `memory/get`, `mcp/list`.)
pub(super) async fn workspace_dir(cwd: &str) -> RpcResult<PathBuf> {
    let path = Path::new(cwd);
    if !path.is_absolute() {
        return Err(rpc_error(
            protocol::error::INVALID_PARAMS,
            format!(
                "cwd must be an absolute path, got {:?}; send the workspace directory's absolute path",
                echo(cwd)
            ),
        ));
    }
    let canonical = tokio::fs::canonicalize(path).await.ok();
    let is_dir = match &canonical {
        Some(dir) => tokio::fs::metadata(dir)
            .await
            .is_ok_and(|meta| meta.is_dir()),
        None => false,
    };
    match canonical {
        Some(dir) if is_dir => Ok(dir),
        _ => Err(rpc_error(
            protocol::error::INVALID_PARAMS,
            format!(
                "cwd {} is not a directory; send the workspace directory of the session",
                echo(cwd)
            ),
        )),
    }
}
