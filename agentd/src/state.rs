//! The daemon's shared state, handed to every method handler as the `RpcModule` context.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use tokio_util::sync::CancellationToken;

use crate::server::ConnectionStats;
use crate::session::SessionManager;
use agentd_core::paths::Paths;

/// Everything handlers share. Owned by `daemon::run`; cloned as `Arc<DaemonState>`.
pub struct DaemonState {
    pub paths: Paths,
    pub started_at: SystemTime,
    pub started: Instant,
    /// Cancelled to stop the daemon (signal or `daemon/shutdown`).
    pub shutdown: CancellationToken,
    pub connections: Arc<ConnectionStats>,
    pub sessions: Arc<SessionManager>,
    /// Tool calls waiting for a person, across sessions.
    pub approvals: Arc<agentd_policy::approval::ApprovalBroker>,
    /// Trusted project roots (`project/trust`, `project/untrust`, `project/list`).
    pub trust: Arc<agentd_policy::trust::TrustStore>,
    /// The curated memory stores (`memory/get`; the `memory` tool writes through the same one).
    pub memory: Arc<agentd_knowledge::memory::MemoryStores>,
    /// The MCP servers sessions share (`mcp/list`, `mcp/restart`).
    pub mcp: Arc<agentd_work::mcp::McpManager>,
    /// Background tasks (`task/*`).
    pub tasks: Arc<crate::task::TaskManager>,
    /// The live extensions (`extension/register`), which sessions in their scope use.
    pub extensions: Arc<crate::extension::Extensions>,
    /// The service manager's unit the daemon runs as (`daemon::service`), if one started it.
    pub service_unit: Option<String>,
    /// The executable the daemon started from (`daemon/status`'s `executable`).
    pub executable: Option<std::path::PathBuf>,
}
