//! The daemon's shared state, handed to every method handler as the `RpcModule` context.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use tokio_util::sync::CancellationToken;

use crate::paths::Paths;
use crate::server::ConnectionStats;

/// Everything handlers share. Owned by `daemon::run`; cloned as `Arc<DaemonState>`.
#[derive(Debug)]
pub struct DaemonState {
    pub paths: Paths,
    pub started_at: SystemTime,
    pub started: Instant,
    /// Cancelled to stop the daemon (signal or `daemon/shutdown`).
    pub shutdown: CancellationToken,
    pub connections: Arc<ConnectionStats>,
    /// Why the config file is unusable, if it is (file, line and reason).
    pub config_error: Option<String>,
}
