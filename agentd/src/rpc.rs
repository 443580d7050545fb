//! The dispatch table: every method the daemon serves, mapped to its handler. Handlers run
//! concurrently (one task per request); per-session ordering is the session actor's job.

use std::sync::Arc;

use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::{Extensions, RpcModule};
use protocol::Method;
use protocol::daemon::*;
use protocol::methods;

use crate::server::ConnectionContext;
use crate::server::params;
use crate::state::DaemonState;

type RpcResult<T> = Result<T, ErrorObjectOwned>;

/// Build the method table.
pub fn build(state: Arc<DaemonState>) -> anyhow::Result<RpcModule<DaemonState>> {
    let mut module = RpcModule::from_arc(state);
    register::<methods::Initialize, _, _>(&mut module, initialize)?;
    register::<methods::DaemonStatus, _, _>(&mut module, daemon_status)?;
    register::<methods::DaemonShutdown, _, _>(&mut module, daemon_shutdown)?;
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

pub fn internal(message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(protocol::error::INTERNAL_ERROR, message.into(), None::<()>)
}

pub fn rpc_error(code: i32, message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(code, message.into(), None::<()>)
}

async fn initialize(
    state: Arc<DaemonState>,
    params: InitializeParams,
    connection: Arc<ConnectionContext>,
) -> RpcResult<InitializeResult> {
    if protocol::protocol_major(&params.protocol_version)
        != protocol::protocol_major(protocol::PROTOCOL_VERSION)
    {
        return Err(rpc_error(
            protocol::error::UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "unsupported protocol version {}: this daemon speaks {}; upgrade the client or the daemon",
                params.protocol_version,
                protocol::PROTOCOL_VERSION
            ),
        ));
    }
    if state.shutdown.is_cancelled() {
        return Err(rpc_error(
            protocol::error::SHUTTING_DOWN,
            "the daemon is shutting down",
        ));
    }
    connection
        .initialized
        .store(true, std::sync::atomic::Ordering::Release);
    tracing::debug!(
        connection_id = connection.connection_id,
        client = %params.client_info.name,
        version = %params.client_info.version,
        "client initialized"
    );
    Ok(InitializeResult {
        server_info: Implementation {
            name: "agentd".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        },
        protocol_version: protocol::PROTOCOL_VERSION.to_owned(),
        capabilities: Capabilities {
            methods: methods::ALL.iter().map(|m| (*m).to_owned()).collect(),
            notifications: vec![protocol::event::SESSION_EVENT.to_owned()],
            max_line_bytes: crate::server::ServerLimits::default().max_line_bytes as u64,
        },
    })
}

async fn daemon_status(
    state: Arc<DaemonState>,
    _params: StatusParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<StatusResult> {
    Ok(StatusResult {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        protocol_version: protocol::PROTOCOL_VERSION.to_owned(),
        pid: std::process::id(),
        started_at: humantime::format_rfc3339_seconds(state.started_at).to_string(),
        uptime_secs: state.started.elapsed().as_secs(),
        socket_path: state.paths.socket.display().to_string(),
        state_dir: state.paths.state_dir.display().to_string(),
        config_path: state.paths.config.display().to_string(),
        config_error: state.config_error.clone(),
        counts: StatusCounts::default(),
        connected_clients: state.connections.open_connections(),
    })
}

async fn daemon_shutdown(
    state: Arc<DaemonState>,
    _params: ShutdownParams,
    connection: Arc<ConnectionContext>,
) -> RpcResult<ShutdownResult> {
    tracing::info!(
        connection_id = connection.connection_id,
        "shutdown requested by a client"
    );
    state.shutdown.cancel();
    Ok(ShutdownResult {
        shutting_down: true,
    })
}
