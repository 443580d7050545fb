//! Driving `agentd_work::mcp::McpManager` directly in tests: a manager with quick supervision
//! timings in a temp dir (`Setup`), server configs, waiting on statuses, calls, and what is left
//! of a process group.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agentd_work::mcp::{
    McpContent, McpHandle, McpLimits, McpManager, McpServerConfig, McpSource, McpStatus,
    McpTransport,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::mcp_servers::ServerCommand;

/// How long a test waits for a real server to be ready (node and python start in about a
/// second; CI machines are slower).
pub const READY_DEADLINE: Duration = Duration::from_secs(60);

/// Supervision that is quick to observe: short backoff, few attempts, short stop grace.
pub fn quick_limits() -> McpLimits {
    McpLimits {
        max_restart_attempts: 2,
        http_max_restart_attempts: 2,
        restart_backoff: Duration::from_millis(20),
        stop_grace: Duration::from_millis(500),
        ..McpLimits::default()
    }
}

pub struct Setup {
    pub dir: tempfile::TempDir,
    pub manager: Arc<McpManager>,
}

impl Default for Setup {
    fn default() -> Self {
        Self::new()
    }
}

impl Setup {
    pub fn new() -> Setup {
        Self::with_idle(Duration::from_secs(600))
    }

    pub fn with_idle(idle_stop: Duration) -> Setup {
        Self::with(idle_stop, quick_limits())
    }

    /// With other supervision timings and bounds.
    pub fn with_limits(limits: McpLimits) -> Setup {
        Self::with(Duration::from_secs(600), limits)
    }

    fn with(idle_stop: Duration, limits: McpLimits) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let manager = McpManager::with_limits(dir.path().join("mcp-logs"), idle_stop, limits);
        Setup { dir, manager }
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    pub fn acquire(&self, config: &McpServerConfig) -> McpHandle {
        self.manager.acquire(config, &self.root())
    }
}

pub fn stdio(name: &str, server: ServerCommand) -> McpServerConfig {
    config(
        name,
        McpTransport::Stdio {
            command: server.command,
            args: server.args,
            env: server.env,
            cwd: None,
        },
    )
}

pub fn config(name: &str, transport: McpTransport) -> McpServerConfig {
    McpServerConfig {
        name: name.to_owned(),
        transport,
        enabled: true,
        startup_timeout: READY_DEADLINE,
        tool_timeout: Duration::from_secs(60),
        enabled_tools: None,
        disabled_tools: Vec::new(),
        sampling: false,
        source: McpSource::Session,
    }
}

pub async fn ready(handle: &McpHandle) -> usize {
    match handle.wait_ready(READY_DEADLINE).await {
        McpStatus::Ready { tools } => tools,
        other => panic!("{} is not ready: {other:?}", handle.config().name),
    }
}

pub fn arguments(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    value.as_object().unwrap().clone()
}

pub fn text(content: &[McpContent]) -> String {
    content
        .iter()
        .filter_map(|block| match block {
            McpContent::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub async fn echo(handle: &McpHandle, message: &str) -> String {
    let result = handle
        .call(
            "echo",
            arguments(json!({"message": message})),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(!result.is_error);
    text(&result.content)
}

/// Waits (on the handle's status watch) until `wanted` holds.
pub async fn status_until(handle: &McpHandle, wanted: impl Fn(&McpStatus) -> bool) -> McpStatus {
    let mut status = handle.watch_status();
    tokio::time::timeout(READY_DEADLINE, status.wait_for(|status| wanted(status)))
        .await
        .unwrap_or_else(|_| panic!("status still {:?}", handle.status()))
        .unwrap()
        .clone()
}

/// Live (not zombie) processes of process group `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields[0] != "Z" && fields[0] != "X" && fields[2] == pgid.to_string() {
            members.push(pid);
        }
    }
    members
}

/// Polls the process table (the outside world) until group `pgid` is empty, with a deadline.
pub async fn group_gone(pgid: u32) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !group_members(pgid).is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "process group {pgid} still has {:?}",
            group_members(pgid)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
