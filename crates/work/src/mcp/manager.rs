//! The running MCP servers: one per [`ServerKey`], shared by every session that holds an
//! [`McpHandle`] for it, started in the background, restarted with backoff after a crash,
//! stopped after an idle period without handles, and stopped with the daemon. Each server is
//! a task of the manager's tracker ([`super::server::run`]); rmcp stays in `connection`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, broadcast, mpsc, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

mod login;
mod supersede;

pub use login::{LoginStarted, LoginState};

pub use super::limits::McpLimits;
use super::log::ServerLog;
use super::server::{RunContext, Server, ServerState, Superseded};
use super::{
    McpCallError, McpCallResult, McpProgress, McpPromptInfo, McpServerConfig, McpStatus,
    McpStatusChange, McpToolInfo, McpTransport, ServerKey,
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
    /// A reload changed or removed its definition: it is restarted with the new one (or
    /// stopped) once no session uses it.
    pub restart_pending: bool,
    /// Why not all its tools are offered as it described them (past `max_tools` or
    /// `max_description_chars`).
    pub warning: Option<String>,
}

/// The daemon's MCP servers.
pub struct McpManager {
    log_dir: PathBuf,
    idle_stop: Duration,
    limits: McpLimits,
    changes: broadcast::Sender<McpStatusChange>,
    /// The servers by key; a server leaves it when its task ends (idle, daemon stop).
    servers: Arc<Mutex<BTreeMap<ServerKey, Arc<Server>>>>,
    /// Owns every server's task: `shutdown` waits for them.
    tasks: TaskTracker,
    stop: CancellationToken,
    /// For streamable HTTP servers (None: it could not be built; they fail to start).
    http: Option<reqwest::Client>,
    confinement: ServerConfinement,
    /// The OAuth logins' token files (`oauth/` beside the logs, in the state dir).
    oauth: super::oauth::store::TokenStore,
    logins: login::Logins,
}

/// How the stdio servers of a project's `.mcp.json` are confined: by the shell's sandbox, with
/// the project root as their workspace (Landlock writes there, in the temp dir and the
/// `[sandbox] writable` dirs only; the project's configuration read-only; scoped signals and
/// abstract sockets; the daemon's socket hidden). A repository's server is code the repository
/// chose. The user's own servers and a client's `session/create` servers run as before.
#[derive(Clone, Debug, Default)]
pub struct ServerConfinement {
    /// The shell's sandbox (None: project servers run unconfined too).
    pub sandbox: Option<Arc<agentd_policy::process::sandbox::ShellSandbox>>,
    /// `[mcp] unconfined`: names of project servers the user lets run unconfined.
    pub unconfined: Vec<String>,
}

impl ServerConfinement {
    /// The sandbox `config` runs in, if any.
    fn for_server(
        &self,
        config: &McpServerConfig,
    ) -> Option<Arc<agentd_policy::process::sandbox::ShellSandbox>> {
        let from_project = matches!(config.source, super::McpSource::Project { .. });
        if !from_project || self.unconfined.contains(&config.name) {
            return None;
        }
        self.sandbox.clone()
    }
}

impl McpManager {
    /// Capacity of the status-change channel; a lagging receiver misses changes, never blocks
    /// a server.
    pub(crate) const CHANGES_CAPACITY: usize = 256;

    /// A manager whose stdio servers log their stderr under `log_dir` (created 0700 on first
    /// use) and stop after `idle_stop` without handles.
    pub fn new(log_dir: PathBuf, idle_stop: Duration) -> Arc<Self> {
        Self::with_limits(log_dir, idle_stop, McpLimits::default())
    }

    /// [`McpManager::new`] with other supervision timings and bounds.
    pub fn with_limits(log_dir: PathBuf, idle_stop: Duration, limits: McpLimits) -> Arc<Self> {
        Self::confining(log_dir, idle_stop, limits, ServerConfinement::default())
    }

    /// [`McpManager::with_limits`] whose project servers are confined by `confinement`.
    pub fn confining(
        log_dir: PathBuf,
        idle_stop: Duration,
        limits: McpLimits,
        confinement: ServerConfinement,
    ) -> Arc<Self> {
        let (changes, _) = broadcast::channel(Self::CHANGES_CAPACITY);
        let http = match agentd_llm::LlmClient::http_client() {
            Ok(http) => Some(http),
            Err(error) => {
                tracing::error!("MCP servers over HTTP cannot start: {error:#}");
                None
            }
        };
        Arc::new(Self {
            oauth: super::oauth::store::TokenStore::new(log_dir.join("oauth")),
            logins: login::Logins::default(),
            log_dir,
            idle_stop,
            limits,
            changes,
            servers: Arc::default(),
            tasks: TaskTracker::new(),
            stop: CancellationToken::new(),
            http,
            confinement,
        })
    }

    /// A handle on the server for `config` running for `project_root`: the running one with
    /// the same [`ServerKey`], else a new one starting in the background. Never waits.
    pub fn acquire(self: &Arc<Self>, config: &McpServerConfig, project_root: &Path) -> McpHandle {
        let key = server_key(config, project_root);
        let mut servers = self
            .servers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(server) = servers.get(&key) {
            server.users.send_modify(|users| *users += 1);
            let handle = McpHandle::new(server.clone());
            let _ = handle.retry_if_failed();
            return handle;
        }
        let log = ServerLog::new(
            &config.name,
            &self.log_dir,
            &format!("{}-{}", file_safe(&config.name), &key.config_digest[..8]),
            self.limits.stderr,
        );
        let (status, _) = watch::channel(McpStatus::Starting);
        let (users, _) = watch::channel(1);
        let stop = self.stop.child_token();
        let server = Arc::new(Server {
            key: key.clone(),
            config: config.clone(),
            status,
            users,
            state: Mutex::new(ServerState::default()),
            generation: Default::default(),
            restart: Notify::new(),
            log,
            stop: stop.clone(),
            retry: Notify::new(),
            tools_fresh: Arc::default(),
        });
        if self.stop.is_cancelled() {
            server.status.send_replace(McpStatus::Stopped);
            return McpHandle::new(server);
        }
        servers.insert(key, server.clone());
        let map = Arc::downgrade(&self.servers);
        let context = RunContext {
            limits: self.limits.clone(),
            idle_stop: self.idle_stop,
            http: self.http.clone(),
            sandbox: self.confinement.for_server(config),
            changes: self.changes.clone(),
            oauth: self.oauth.clone(),
            stop,
            remove_if_unused: Box::new(move |server| {
                let Some(map) = map.upgrade() else {
                    return true;
                };
                let mut servers = map.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                if *server.users.borrow() > 0 {
                    return false;
                }
                if servers
                    .get(&server.key)
                    .is_some_and(|listed| Arc::ptr_eq(listed, server))
                {
                    servers.remove(&server.key);
                }
                true
            }),
        };
        let supervised = server.clone();
        let changes = self.changes.clone();
        let listed = Arc::downgrade(&self.servers);
        self.tasks.spawn(async move {
            use futures::FutureExt;
            let run = std::panic::AssertUnwindSafe(super::server::run(supervised.clone(), context));
            if run.catch_unwind().await.is_err() {
                // The panic hook logged it; the server must not look alive.
                let status = McpStatus::Failed {
                    error: "internal error: agentd's supervisor of this server panicked (see the daemon's log); the next session that uses it starts it again".to_owned(),
                    stderr_tail: String::new(),
                };
                {
                    let mut state = supervised.lock();
                    state.client = None;
                    state.pid = None;
                }
                // Out of the map: the next acquire starts a new supervisor.
                if let Some(listed) = listed.upgrade() {
                    let mut servers = listed.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                    if servers
                        .get(&supervised.key)
                        .is_some_and(|current| Arc::ptr_eq(current, &supervised))
                    {
                        servers.remove(&supervised.key);
                    }
                }
                supervised.status.send_replace(status.clone());
                let _ = changes.send(McpStatusChange {
                    key: supervised.key.clone(),
                    status,
                });
            }
        });
        McpHandle::new(server)
    }

    /// Status changes of every server.
    pub fn status_changes(&self) -> broadcast::Receiver<McpStatusChange> {
        self.changes.subscribe()
    }

    /// Every server the manager knows (running, failed, or stopped but still listed), by name.
    pub fn servers(&self) -> Vec<McpServerInfo> {
        let servers: Vec<Arc<Server>> = self
            .servers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .values()
            .cloned()
            .collect();
        let mut infos: Vec<McpServerInfo> = servers
            .iter()
            .map(|server| {
                let state = server.lock();
                McpServerInfo {
                    key: server.key.clone(),
                    config: server.config.clone(),
                    status: server.status.borrow().clone(),
                    pid: state.pid,
                    tools: state.tools.iter().map(|tool| tool.name.clone()).collect(),
                    restarts: state.restarts,
                    last_error: state.last_error.clone(),
                    users: *server.users.borrow(),
                    // Stdio servers' stderr, and any server's `notifications/message`.
                    log_file: Some(server.log.path().to_path_buf()),
                    restart_pending: state.superseded.is_some(),
                    warning: state.warning.clone(),
                }
            })
            .collect();
        infos.sort_by(|a, b| a.key.cmp(&b.key));
        infos
    }

    /// How many servers run now (for `daemon/status`).
    pub fn running(&self) -> usize {
        self.servers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .values()
            .filter(|server| server.lock().client.is_some())
            .count()
    }

    /// Restarts the server `name` of `project_root` now (also one that `failed`), resetting
    /// its restart count, with the user's current definition: a server a reload superseded
    /// stops now (the calls of a run still using it fail) and its new definition starts. Err:
    /// no such server, or its entry was removed.
    pub async fn restart(self: &Arc<Self>, name: &str, project_root: &Path) -> Result<(), String> {
        let servers: Vec<Arc<Server>> = self
            .servers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .values()
            .filter(|server| server.key.name == name && server.key.project_root == project_root)
            .cloned()
            .collect();
        if servers.is_empty() {
            return Err(format!(
                "no MCP server named {name} runs for {}",
                project_root.display()
            ));
        }
        for server in servers {
            let superseded = server.lock().superseded.clone();
            match superseded {
                None => server.restart.notify_one(),
                Some(Superseded::Changed(config)) => {
                    self.unlist(&server);
                    server.stop.cancel();
                    drop(self.acquire(&config, project_root));
                }
                Some(Superseded::Removed) => {
                    return Err(format!(
                        "the MCP server {name} is no longer in config.toml (removed or disabled); it stops once no session uses it"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// A session's lease on one server; dropping the last handle starts the idle timer.
pub struct McpHandle {
    key: ServerKey,
    config: McpServerConfig,
    status: watch::Receiver<McpStatus>,
    server: Arc<Server>,
}

impl McpHandle {
    /// A handle on `server`, already counted among its users.
    fn new(server: Arc<Server>) -> Self {
        Self {
            key: server.key.clone(),
            config: server.config.clone(),
            status: server.status.subscribe(),
            server,
        }
    }

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

    /// The process id of a stdio server while it is ready.
    pub fn pid(&self) -> Option<u32> {
        self.server.lock().pid
    }

    /// Waits until the server is ready, failed, or `grace` passed; returns the status then.
    pub async fn wait_ready(&self, grace: Duration) -> McpStatus {
        let mut status = self.status.clone();
        let _ = tokio::time::timeout(
            grace,
            status.wait_for(|status| {
                !matches!(status, McpStatus::Starting | McpStatus::Restarting { .. })
            }),
        )
        .await;
        self.status()
    }

    /// The server's tools now (after `enabled_tools` / `disabled_tools`); empty unless ready.
    pub fn tools(&self) -> Arc<[McpToolInfo]> {
        self.server.lock().tools.clone()
    }

    /// Why not all the server's tools are offered as it described them, if so.
    pub fn warning(&self) -> Option<String> {
        self.server.lock().warning.clone()
    }

    /// Whether a `notifications/tools/list_changed` came that `tools()` does not show yet.
    pub fn tools_stale(&self) -> bool {
        !self.server.tools_fresh.is_settled()
    }

    /// Waits, at most `within`, until `tools()` shows every `list_changed` that came until
    /// now (the server answered `tools/list` again, or the connection is gone).
    pub async fn tools_settled(&self, within: Duration) {
        self.server.tools_fresh.settled(within).await;
    }

    /// A session needs the server: a `failed` HTTP server gets one more attempt (a remote
    /// server that came back is used again without `mcp/restart`). True when it was asked.
    pub fn retry_if_failed(&self) -> bool {
        let http = matches!(self.config.transport, McpTransport::Http { .. });
        let retried = http && matches!(*self.status.borrow(), McpStatus::Failed { .. });
        if retried {
            self.server.retry.notify_one();
        }
        retried
    }

    /// [`McpHandle::retry_if_failed`], then [`McpHandle::wait_ready`]: a retried server is
    /// waited for (it leaves `failed` as its attempt begins), within `grace` in all.
    pub async fn retry_and_wait_ready(&self, grace: Duration) -> McpStatus {
        let started = tokio::time::Instant::now();
        if self.retry_if_failed() {
            let mut status = self.status.clone();
            let _ = tokio::time::timeout(
                grace,
                status.wait_for(|status| !matches!(status, McpStatus::Failed { .. })),
            )
            .await;
        }
        self.wait_ready(grace.saturating_sub(started.elapsed()))
            .await
    }

    /// Changes whenever the tool list changes (ready, restart, `notifications/tools/list_changed`).
    pub fn tools_generation(&self) -> u64 {
        self.server.generation.load(Ordering::Relaxed)
    }

    /// The server's prompts (`prompts/list`), bounded by its `tool_timeout`; an error when it
    /// is not ready.
    pub async fn prompts(&self) -> Result<Vec<McpPromptInfo>, String> {
        let client = self.ready_client().map_err(|err| err.to_string())?;
        client.list_prompts(self.config.tool_timeout).await
    }

    /// The text of prompt `name` with `arguments` (`prompts/get`), bounded by the server's
    /// `tool_timeout`.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<String, String> {
        let client = self.ready_client().map_err(|err| err.to_string())?;
        client
            .get_prompt(name, arguments, self.config.tool_timeout)
            .await
    }

    /// The live connection's client, or why there is none.
    fn ready_client(&self) -> Result<Arc<super::connection::McpClient>, McpCallError> {
        self.server
            .lock()
            .client
            .clone()
            .ok_or_else(|| McpCallError::NotReady {
                server: self.key.name.clone(),
                status: describe_status(&self.status()),
            })
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
        self.call_asking(tool, arguments, (progress, None), cancel)
            .await
    }

    /// [`McpHandle::call`], the server's questions and sampling requests during the call
    /// going to `asker` (None: declined and refused, saying why).
    pub async fn call_asking(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        (progress, asker): (
            Option<mpsc::Sender<McpProgress>>,
            Option<crate::tools::server_requests::CallAsker>,
        ),
        cancel: CancellationToken,
    ) -> Result<McpCallResult, McpCallError> {
        let (client, offered) = {
            let state = self.server.lock();
            (
                state.client.clone(),
                state.tools.iter().any(|offered| offered.name == tool),
            )
        };
        let Some(client) = client else {
            return Err(McpCallError::NotReady {
                server: self.key.name.clone(),
                status: describe_status(&self.status()),
            });
        };
        if !offered {
            return Err(McpCallError::Refused {
                server: self.key.name.clone(),
                message: format!("it offers no tool named {tool} (or the tool is disabled)"),
            });
        }
        client
            .call(
                tool,
                arguments,
                self.config.tool_timeout,
                (progress, asker),
                cancel,
            )
            .await
    }
}

impl Clone for McpHandle {
    /// Another lease on the same server (counted among its users).
    fn clone(&self) -> Self {
        self.server.users.send_modify(|users| *users += 1);
        Self::new(self.server.clone())
    }
}

impl Drop for McpHandle {
    fn drop(&mut self) {
        self.server
            .users
            .send_modify(|users| *users = users.saturating_sub(1));
    }
}

/// The key of `config` for `project_root`: the name, the root and a digest of the resolved
/// settings (transport, filters, timeouts).
pub(crate) fn server_key(config: &McpServerConfig, project_root: &Path) -> ServerKey {
    // The whole resolved configuration but where it came from: a changed tool filter or
    // timeout is another server, never a running one keeping the old settings.
    let identity = format!(
        "{:?}|{}|{:?}|{:?}|{:?}|{:?}{}",
        config.transport,
        config.enabled,
        config.startup_timeout,
        config.tool_timeout,
        config.enabled_tools,
        config.disabled_tools,
        // Only when set, so the digests of servers without it stay what they were.
        if config.sampling { "|sampling" } else { "" },
    );
    let digest = agentd_policy::process::supervisor::fnv1a(identity.as_bytes());
    ServerKey {
        name: config.name.clone(),
        project_root: project_root.to_path_buf(),
        config_digest: format!("{digest:016x}"),
    }
}

/// A status in a few words, for errors.
fn describe_status(status: &McpStatus) -> String {
    match status {
        McpStatus::Starting => "it is starting".to_owned(),
        McpStatus::Ready { .. } => "it is ready".to_owned(),
        McpStatus::Failed { error, .. } => format!("it failed ({error}); restart it"),
        McpStatus::Restarting { attempt, error } => {
            format!("it is restarting (attempt {attempt}) after: {error}")
        }
        McpStatus::Stopped => "it is stopped".to_owned(),
        McpStatus::NeedsLogin { message } => format!("it needs a login ({message})"),
    }
}

/// `name` with anything but `[A-Za-z0-9_-]` replaced, for a file name.
pub(super) fn file_safe(name: &str) -> String {
    name.chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
