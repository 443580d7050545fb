//! MCP servers as the wire shows them: a status change as an `mcpServerStatus` event, a
//! running server or a configured entry as an `mcp/list` row, a configuration problem.

use protocol::event::Event;
use protocol::mcp::{
    McpConfigProblem as WireProblem, McpServerListing, McpServerSource, McpServerState,
    McpTransportKind,
};

use agentd_work::mcp::manager::McpServerInfo;
use agentd_work::mcp::{McpConfigProblem, McpServerConfig, McpSource, McpStatus, McpStatusChange};

/// A status change as the `mcpServerStatus` event sessions and the daemon stream carry.
pub fn mcp_status_event(change: &McpStatusChange) -> Event {
    let mut tools = None;
    let mut error = None;
    let mut stderr_tail = None;
    let mut attempt = None;
    match &change.status {
        McpStatus::Starting | McpStatus::Stopped => {}
        McpStatus::Ready { tools: count } => tools = Some(*count as u64),
        McpStatus::Failed {
            error: why,
            stderr_tail: tail,
        } => {
            error = Some(why.clone());
            stderr_tail = Some(tail.clone());
        }
        McpStatus::Restarting {
            attempt: which,
            error: why,
        } => {
            attempt = Some(*which);
            error = Some(why.clone());
        }
        McpStatus::NeedsLogin { message } => error = Some(message.clone()),
    }
    Event::McpServerStatus {
        server: change.key.name.clone(),
        status: mcp_state(&change.status),
        project_root: Some(change.key.project_root.display().to_string()),
        tools,
        error,
        stderr_tail,
        attempt,
    }
}

/// The status word of a server the daemon runs.
pub fn mcp_state(status: &McpStatus) -> McpServerState {
    match status {
        McpStatus::Starting => McpServerState::Starting,
        McpStatus::Ready { .. } => McpServerState::Ready,
        McpStatus::Failed { .. } => McpServerState::Failed,
        McpStatus::Restarting { .. } => McpServerState::Restarting,
        McpStatus::Stopped => McpServerState::Stopped,
        McpStatus::NeedsLogin { .. } => McpServerState::NeedsLogin,
    }
}

/// A server the manager knows, as an `mcp/list` row.
pub fn mcp_running_server(info: &McpServerInfo) -> McpServerListing {
    let mut listing = mcp_configured_server(&info.config, mcp_state(&info.status));
    listing.project_root = Some(info.key.project_root.display().to_string());
    listing.pid = info.pid;
    listing.tools = info.tools.clone();
    listing.restarts = info.restarts;
    listing.last_error = info.last_error.clone();
    listing.log_file = info
        .log_file
        .as_ref()
        .map(|file| file.display().to_string());
    listing.users = u32::try_from(info.users).unwrap_or(u32::MAX);
    listing.restart_pending = info.restart_pending;
    listing.warning = info.warning.clone();
    listing
}

/// A configured entry that does not run, as an `mcp/list` row with `status`.
pub fn mcp_configured_server(config: &McpServerConfig, status: McpServerState) -> McpServerListing {
    let (source, file) = match &config.source {
        McpSource::User { file } => (McpServerSource::User, Some(file.display().to_string())),
        McpSource::Project { file } => (McpServerSource::Project, Some(file.display().to_string())),
        McpSource::Session => (McpServerSource::Session, None),
    };
    let transport = match &config.transport {
        agentd_work::mcp::McpTransport::Stdio { .. } => McpTransportKind::Stdio,
        agentd_work::mcp::McpTransport::Http { .. } => McpTransportKind::Http,
    };
    McpServerListing {
        name: config.name.clone(),
        source,
        file,
        transport,
        status,
        project_root: None,
        pid: None,
        tools: Vec::new(),
        restarts: 0,
        last_error: None,
        log_file: None,
        users: 0,
        restart_pending: false,
        warning: None,
    }
}

/// A configuration problem as `mcp/list` reports it.
pub fn mcp_problem(problem: &McpConfigProblem) -> WireProblem {
    WireProblem {
        file: problem.file.as_ref().map(|file| file.display().to_string()),
        server: problem.server.clone(),
        reason: problem.reason.clone(),
    }
}
