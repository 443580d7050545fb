//! The running MCP servers: one per [`ServerKey`], shared by every session that holds an
//! [`McpHandle`] for it, started in the background, restarted with backoff after a crash,
//! stopped after an idle period without handles, and stopped with the daemon.
//!
//! SKELETON: the API the rest of the daemon builds on; the bodies are filled in by the MCP
//! runtime work.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::{
    McpCallError, McpCallResult, McpProgress, McpServerConfig, McpStatus, McpStatusChange,
    McpToolInfo, ServerKey,
};

/// What `mcp/list` shows of one running (or failed, or stopped) server.
#[derive(Clone, Debug, PartialEq)]
pub struct McpServerInfo {
    pub key: ServerKey,
    pub config: McpServerConfig,
    pub status: McpStatus,
    /// The process id of a stdio server while it runs.
    pub pid: Option<u32>,
    /// The server's tools (after `enabled_tools` / `disabled_tools`).
    pub tools: Vec<String>,
    /// Restarts since it was first started (or since the last `mcp/restart`).
    pub restarts: u32,
    pub last_error: Option<String>,
    /// Handles held now (sessions using it).
    pub users: usize,
    /// Its stderr log file (stdio servers).
    pub log_file: Option<PathBuf>,
}

/// The daemon's MCP servers.
pub struct McpManager {
    log_dir: PathBuf,
    idle_stop: Duration,
    changes: broadcast::Sender<McpStatusChange>,
}

impl McpManager {
    /// Capacity of the status-change channel; a lagging receiver misses changes, never blocks
    /// a server.
    pub const CHANGES_CAPACITY: usize = 256;

    /// A manager whose stdio servers log their stderr under `log_dir` (created 0700 on first
    /// use) and stop after `idle_stop` without handles.
    pub fn new(log_dir: PathBuf, idle_stop: Duration) -> Arc<Self> {
        let (changes, _) = broadcast::channel(Self::CHANGES_CAPACITY);
        Arc::new(Self {
            log_dir,
            idle_stop,
            changes,
        })
    }

    /// A handle on the server for `config` running for `project_root`: the running one with
    /// the same [`ServerKey`], else a new one starting in the background. Never waits.
    pub fn acquire(self: &Arc<Self>, config: &McpServerConfig, project_root: &Path) -> McpHandle {
        let _ = (&self.log_dir, self.idle_stop);
        let key = ServerKey {
            name: config.name.clone(),
            project_root: project_root.to_path_buf(),
            config_digest: String::new(),
        };
        let (_, status) = watch::channel(McpStatus::Failed {
            error: "MCP servers are not supported yet".to_owned(),
            stderr_tail: String::new(),
        });
        McpHandle {
            key,
            config: config.clone(),
            status,
        }
    }

    /// Status changes of every server.
    pub fn status_changes(&self) -> broadcast::Receiver<McpStatusChange> {
        self.changes.subscribe()
    }

    /// Every server the manager knows (running, failed, or stopped but still listed), by name.
    pub fn servers(&self) -> Vec<McpServerInfo> {
        Vec::new()
    }

    /// How many servers run now (for `daemon/status`).
    pub fn running(&self) -> usize {
        0
    }

    /// Restarts the server `name` of `project_root` now (also one that `failed`), resetting
    /// its restart count. Err: no such server.
    pub async fn restart(&self, name: &str, project_root: &Path) -> Result<(), String> {
        Err(format!(
            "no MCP server named {name} runs for {}",
            project_root.display()
        ))
    }

    /// Stops every server: stdin closed, SIGTERM to its process group, SIGKILL after a grace.
    pub async fn shutdown(&self) {}
}

/// A session's lease on one server; dropping the last handle starts the idle timer.
pub struct McpHandle {
    key: ServerKey,
    config: McpServerConfig,
    status: watch::Receiver<McpStatus>,
}

impl McpHandle {
    pub fn key(&self) -> &ServerKey {
        &self.key
    }

    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// The status now.
    pub fn status(&self) -> McpStatus {
        self.status.borrow().clone()
    }

    /// Status changes of this server.
    pub fn watch_status(&self) -> watch::Receiver<McpStatus> {
        self.status.clone()
    }

    /// Waits until the server is ready, failed, or `grace` passed; returns the status then.
    pub async fn wait_ready(&self, grace: Duration) -> McpStatus {
        let _ = grace;
        self.status()
    }

    /// The server's tools now (after `enabled_tools` / `disabled_tools`); empty unless ready.
    pub fn tools(&self) -> Arc<[McpToolInfo]> {
        Arc::from(Vec::new())
    }

    /// Changes whenever the tool list changes (ready, restart, `notifications/tools/list_changed`).
    pub fn tools_generation(&self) -> u64 {
        0
    }

    /// Calls `tool` with `arguments`, bounded by the server's `tool_timeout`; progress
    /// notifications go to `progress` (dropped when it is full); `cancel` cancels the call on
    /// the server (`notifications/cancelled`).
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        progress: Option<mpsc::Sender<McpProgress>>,
        cancel: CancellationToken,
    ) -> Result<McpCallResult, McpCallError> {
        let _ = (tool, arguments, progress, cancel);
        Err(McpCallError::NotReady {
            server: self.key.name.clone(),
            status: "not supported yet".to_owned(),
        })
    }
}
