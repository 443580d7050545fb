//! One supervised MCP server: its shared state (status, tools, the live connection's client,
//! users) and the task that runs it: start, publish `ready`, refresh tools on
//! `list_changed`, restart with exponential backoff after a crash (bounded attempts, more
//! and spanning minutes for an HTTP server, then `failed` until `restart`, or for an HTTP
//! server until a session next needs it: one more attempt then), `needs login` (an OAuth login
//! no stored token answers) until a login restarts it, stop when idle without users or when
//! the daemon stops. The tools offered are capped in number and description length.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, broadcast, mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::connection::{Connection, McpClient, StartContext};
use super::limits::McpLimits;
use super::log::ServerLog;
use super::{McpServerConfig, McpStatus, McpStatusChange, McpToolInfo, ServerKey};

/// What the manager, its handles and the server's task share.
pub(super) struct Server {
    pub(super) key: ServerKey,
    pub(super) config: McpServerConfig,
    pub(super) status: watch::Sender<McpStatus>,
    /// Handles held now; the task watches it for the idle stop.
    pub(super) users: watch::Sender<usize>,
    pub(super) state: Mutex<ServerState>,
    pub(super) generation: AtomicU64,
    /// `restart` asks the task to start over (a stored permit if it is busy).
    pub(super) restart: Notify,
    pub(super) log: Arc<ServerLog>,
    /// Stops this server alone (a child of the manager's stop): a superseded server once idle.
    pub(super) stop: CancellationToken,
    /// Asks a `failed` HTTP server for one more attempt (a session needs it again).
    pub(super) retry: Notify,
    /// Whether the tools are as the server last said (`list_changed` seen and not listed yet).
    pub(super) tools_fresh: Arc<ToolListFreshness>,
}

/// `notifications/tools/list_changed` seen (counted as they arrive, before the responses
/// behind them) against the ones a `tools/list` has answered since: a run waits for the two to
/// meet before its next model call, so a change made by a tool call is offered at once.
#[derive(Debug)]
pub(crate) struct ToolListFreshness {
    seen: AtomicU64,
    listed: watch::Sender<u64>,
}

impl Default for ToolListFreshness {
    fn default() -> Self {
        Self {
            seen: AtomicU64::new(0),
            listed: watch::Sender::new(0),
        }
    }
}

impl ToolListFreshness {
    /// A `list_changed` arrived.
    pub(crate) fn changed(&self) {
        self.seen.fetch_add(1, Ordering::SeqCst);
    }

    /// The changes seen so far: a `tools/list` sent after this answers them.
    fn seen(&self) -> u64 {
        self.seen.load(Ordering::SeqCst)
    }

    /// A `tools/list` sent once `seen` changes were seen has answered (or the connection is
    /// gone: there is nothing more to wait for).
    fn listed(&self, seen: u64) {
        self.listed.send_if_modified(|listed| {
            let newer = seen > *listed;
            if newer {
                *listed = seen;
            }
            newer
        });
    }

    /// Waits, at most `within`, until every change seen now is listed.
    pub(super) async fn settled(&self, within: Duration) {
        let seen = self.seen();
        let mut listed = self.listed.subscribe();
        let _ = tokio::time::timeout(within, listed.wait_for(|listed| *listed >= seen)).await;
    }

    pub(super) fn is_settled(&self) -> bool {
        *self.listed.borrow() >= self.seen()
    }
}

/// Why a server's definition is no longer the user's (config.toml was reloaded): it is
/// restarted with the new one, or stopped, once no session uses it.
#[derive(Clone, Debug)]
pub(super) enum Superseded {
    /// `[mcp_servers.<name>]` now says this.
    Changed(Box<McpServerConfig>),
    /// The entry is gone or disabled.
    Removed,
}

/// The server's changing parts, read by `servers()` and handles.
#[derive(Default)]
pub(super) struct ServerState {
    /// The live connection's client: None unless ready.
    pub(super) client: Option<Arc<McpClient>>,
    pub(super) pid: Option<u32>,
    /// After `enabled_tools` / `disabled_tools`.
    pub(super) tools: Arc<[McpToolInfo]>,
    pub(super) restarts: u32,
    pub(super) last_error: Option<String>,
    /// Set when a reload changed or removed the server's definition (`restartPending`).
    pub(super) superseded: Option<Superseded>,
    /// Why not all of the server's tools are offered as it described them (the caps).
    pub(super) warning: Option<String>,
}

/// See [`RunContext::remove_if_unused`].
pub(super) type RemoveIfUnused = Box<dyn Fn(&Arc<Server>) -> bool + Send + Sync>;

/// What the task needs from the manager.
pub(super) struct RunContext {
    pub(super) limits: McpLimits,
    pub(super) idle_stop: Duration,
    pub(super) http: Option<reqwest::Client>,
    /// The sandbox a stdio server runs in (a project's server, see `ServerConfinement`).
    pub(super) sandbox: Option<Arc<agentd_policy::process::sandbox::ShellSandbox>>,
    pub(super) changes: broadcast::Sender<McpStatusChange>,
    /// Where OAuth logins leave their tokens.
    pub(super) oauth: super::oauth::store::TokenStore,
    pub(super) stop: CancellationToken,
    /// Removes the server from the manager's map if it still has no users (under the map's
    /// lock, where acquire counts users); false: someone acquired it meanwhile.
    pub(super) remove_if_unused: RemoveIfUnused,
}

impl Server {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, ServerState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn publish(&self, context: &RunContext, status: McpStatus) {
        self.status.send_replace(status.clone());
        let _ = context.changes.send(McpStatusChange {
            key: self.key.clone(),
            status,
        });
    }

    /// The live connection (None: lost) and its tools, filtered and capped. Once ready the
    /// last error is over.
    fn set_live(
        &self,
        client: Option<Arc<McpClient>>,
        pid: Option<u32>,
        tools: Vec<McpToolInfo>,
        limits: &McpLimits,
    ) {
        let ready = client.is_some();
        let (tools, warning) =
            cap_tools(&self.config.name, filter_tools(&self.config, tools), limits);
        if let Some(warning) = &warning {
            tracing::warn!(server = %self.config.name, "{warning}");
        }
        let mut state = self.lock();
        state.client = client;
        state.pid = pid;
        state.tools = tools.into();
        if ready {
            state.last_error = None;
            state.warning = warning;
        }
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    fn note_error(&self, error: &str) {
        self.lock().last_error = Some(error.to_owned());
    }
}

/// How a connected period ended.
enum Ended {
    Lost(String),
    /// The server asks for an OAuth login that no stored token answers.
    NeedsLogin(String),
    Restart,
    Stop,
}

/// Runs `server` until the daemon stops or it is idle without users.
pub(super) async fn run(server: Arc<Server>, context: RunContext) {
    let (tools_changed, mut tools_changed_rx) = mpsc::channel(1);
    let mut users = server.users.subscribe();
    let name = server.config.name.clone();
    // Consecutive failed starts or early crashes.
    let mut attempt: u32 = 0;
    let mut error;
    loop {
        if attempt == 0 {
            server.publish(&context, McpStatus::Starting);
        } else {
            server.lock().restarts += 1;
        }
        let started = tokio::select! {
            started = Connection::start(
                &server.config,
                StartContext {
                    project_root: &server.key.project_root,
                    log: &server.log,
                    http: context.http.as_ref(),
                    sandbox: context.sandbox.as_ref(),
                    tools_changed: tools_changed.clone(),
                    tools_fresh: server.tools_fresh.clone(),
                    limits: &context.limits,
                    oauth: &context.oauth,
                },
            ) => started,
            () = context.stop.cancelled() => break,
        };
        let ended = match started {
            Ok(mut connection) => {
                let client = connection.client();
                let seen = server.tools_fresh.seen();
                let listed = tokio::select! {
                    listed = tokio::time::timeout(server.config.startup_timeout, client.list_tools()) => listed,
                    () = context.stop.cancelled() => {
                        connection.stop(context.limits.stop_grace).await;
                        break;
                    }
                };
                match listed {
                    Ok(Ok(tools)) => {
                        server.set_live(
                            Some(client.clone()),
                            connection.pid(),
                            tools,
                            &context.limits,
                        );
                        server.tools_fresh.listed(seen);
                        let count = server.lock().tools.len();
                        server.publish(&context, McpStatus::Ready { tools: count });
                        tracing::info!(server = %name, pid = ?connection.pid(), tools = count, "MCP server ready");
                        let up_since = Instant::now();
                        let ended = connected(
                            &server,
                            &context,
                            &mut connection,
                            &client,
                            &mut tools_changed_rx,
                            &mut users,
                        )
                        .await;
                        server.set_live(None, None, Vec::new(), &context.limits);
                        server.tools_fresh.listed(server.tools_fresh.seen());
                        connection.stop(context.limits.stop_grace).await;
                        if up_since.elapsed() >= context.limits.stable_after {
                            attempt = 0;
                        }
                        ended
                    }
                    Ok(Err(list_error)) => {
                        connection.stop(context.limits.stop_grace).await;
                        Ended::Lost(list_error)
                    }
                    Err(_) => {
                        connection.stop(context.limits.stop_grace).await;
                        Ended::Lost(format!(
                            "tools/list took longer than {} s",
                            server.config.startup_timeout.as_secs_f64()
                        ))
                    }
                }
            }
            Err(start_error) if start_error.needs_login => Ended::NeedsLogin(start_error.message),
            Err(start_error) => Ended::Lost(start_error.message),
        };
        match ended {
            Ended::Stop => break,
            Ended::Restart => {
                attempt = 0;
                server.lock().restarts = 0;
                server.log.clear_tail();
                continue;
            }
            Ended::Lost(reason) => {
                tracing::warn!(server = %name, "MCP server lost: {reason}");
                server.note_error(&reason);
                error = reason;
            }
            Ended::NeedsLogin(message) => {
                tracing::warn!(server = %name, "MCP server needs a login: {message}");
                server.note_error(&message);
                server.publish(&context, McpStatus::NeedsLogin { message });
                // Until a login (which restarts it), `mcp/restart`, the stop or idleness.
                let resumed = loop {
                    tokio::select! {
                        () = server.restart.notified() => break true,
                        () = context.stop.cancelled() => break false,
                        () = idle(&mut users, context.idle_stop) => {
                            if (context.remove_if_unused)(&server) {
                                break false;
                            }
                        }
                    }
                };
                if !resumed {
                    break;
                }
                attempt = 0;
                server.lock().restarts = 0;
                continue;
            }
        }
        attempt += 1;
        let attempts = context.limits.attempts_for(&server.config.transport);
        if attempt > attempts {
            server.publish(
                &context,
                McpStatus::Failed {
                    error: error.clone(),
                    stderr_tail: server.log.tail(),
                },
            );
            let mut once_more = false;
            let resumed = loop {
                tokio::select! {
                    () = server.restart.notified() => break true,
                    () = server.retry.notified() => {
                        once_more = true;
                        break true;
                    }
                    () = context.stop.cancelled() => break false,
                    () = idle(&mut users, context.idle_stop) => {
                        if (context.remove_if_unused)(&server) {
                            break false;
                        }
                    }
                }
            };
            if !resumed {
                break;
            }
            if once_more {
                // One attempt: if it fails, `failed` again at once.
                attempt = attempts;
                server.publish(
                    &context,
                    McpStatus::Restarting {
                        attempt,
                        error: error.clone(),
                    },
                );
                continue;
            }
            attempt = 0;
            server.lock().restarts = 0;
            server.log.clear_tail();
            continue;
        }
        server.publish(
            &context,
            McpStatus::Restarting {
                attempt,
                error: error.clone(),
            },
        );
        let backoff = context.limits.backoff(attempt);
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            () = server.restart.notified() => {
                attempt = 0;
                server.lock().restarts = 0;
            }
            () = context.stop.cancelled() => break,
        }
    }
    server.set_live(None, None, Vec::new(), &context.limits);
    server.tools_fresh.listed(server.tools_fresh.seen());
    server.publish(&context, McpStatus::Stopped);
}

/// While connected: refreshes tools, notices loss, restart requests, the stop and idleness.
async fn connected(
    server: &Arc<Server>,
    context: &RunContext,
    connection: &mut Connection,
    client: &Arc<McpClient>,
    tools_changed: &mut mpsc::Receiver<()>,
    users: &mut watch::Receiver<usize>,
) -> Ended {
    loop {
        tokio::select! {
            reason = connection.lost() => return Ended::Lost(reason),
            Some(()) = tools_changed.recv() => {
                let seen = server.tools_fresh.seen();
                let listed = tokio::select! {
                    listed = tokio::time::timeout(server.config.startup_timeout, client.list_tools()) => listed,
                    () = context.stop.cancelled() => return Ended::Stop,
                };
                match listed.unwrap_or_else(|_| Err("tools/list did not answer in time".to_owned())) {
                    Ok(tools) => {
                        server.set_live(Some(client.clone()), connection.pid(), tools, &context.limits);
                        let count = server.lock().tools.len();
                        tracing::info!(server = %server.config.name, tools = count, "MCP server's tools changed");
                        server.publish(context, McpStatus::Ready { tools: count });
                    }
                    Err(error) => tracing::warn!(server = %server.config.name, "cannot refresh the MCP server's tools: {error}"),
                }
                // Listed or not, a run waits no longer for it.
                server.tools_fresh.listed(seen);
            }
            () = server.restart.notified() => return Ended::Restart,
            () = context.stop.cancelled() => return Ended::Stop,
            () = idle(users, context.idle_stop) => {
                if (context.remove_if_unused)(server) {
                    tracing::info!(server = %server.config.name, "MCP server stopped: unused");
                    return Ended::Stop;
                }
            }
        }
    }
}

/// Resolves once nobody has used the server for `idle_stop` (never if the sender is gone).
async fn idle(users: &mut watch::Receiver<usize>, idle_stop: Duration) {
    loop {
        let unused = users.wait_for(|count| *count == 0).await.is_ok();
        if !unused {
            return std::future::pending().await;
        }
        let used_again = tokio::time::timeout(idle_stop, async {
            users.wait_for(|count| *count > 0).await.is_ok()
        })
        .await;
        match used_again {
            Err(_) => return,
            Ok(true) => continue,
            Ok(false) => return std::future::pending().await,
        }
    }
}

/// `tools` within `limits.max_tools` (the first ones, in the server's order) and each
/// description within `limits.max_description_chars`; a warning saying what was left out.
pub(super) fn cap_tools(
    server: &str,
    mut tools: Vec<McpToolInfo>,
    limits: &McpLimits,
) -> (Vec<McpToolInfo>, Option<String>) {
    let mut said = Vec::new();
    if tools.len() > limits.max_tools {
        said.push(format!(
            "it offers {} tools; only the first {} are offered to the model",
            tools.len(),
            limits.max_tools
        ));
        tools.truncate(limits.max_tools);
    }
    let mut cut = Vec::new();
    for tool in &mut tools {
        if let Some((at, _)) = tool
            .description
            .char_indices()
            .nth(limits.max_description_chars)
        {
            let chars = tool.description.chars().count();
            tool.description.truncate(at);
            tool.description.push_str(" […]");
            cut.push(format!("{} ({chars} characters)", tool.name));
        }
    }
    if !cut.is_empty() {
        said.push(format!(
            "the description of {} is cut to {} characters",
            cut.join(", "),
            limits.max_description_chars
        ));
    }
    let warning = (!said.is_empty()).then(|| {
        format!(
            "MCP server {server}: {}; enabled_tools or disabled_tools in its entry choose what is offered",
            said.join("; ")
        )
    });
    (tools, warning)
}

/// The tools a session is offered: `enabled_tools` (when set), minus `disabled_tools`.
pub(super) fn filter_tools(config: &McpServerConfig, tools: Vec<McpToolInfo>) -> Vec<McpToolInfo> {
    tools
        .into_iter()
        .filter(|tool| {
            config
                .enabled_tools
                .as_ref()
                .is_none_or(|enabled| enabled.contains(&tool.name))
                && !config.disabled_tools.contains(&tool.name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::{McpSource, McpTransport};

    fn tool(name: &str) -> McpToolInfo {
        McpToolInfo {
            name: name.to_owned(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
            read_only: false,
        }
    }

    #[test]
    fn tools_past_the_caps_are_left_out_or_cut_with_a_warning() {
        let limits = McpLimits {
            max_tools: 2,
            max_description_chars: 5,
            ..McpLimits::default()
        };
        let (tools, warning) = cap_tools("s", vec![tool("a"), tool("b")], &limits);
        assert_eq!((tools.len(), warning), (2, None));
        let mut long = tool("long");
        long.description = "é".repeat(8);
        let (tools, warning) = cap_tools("s", vec![long, tool("b"), tool("c")], &limits);
        assert_eq!(tools.len(), 2);
        assert_eq!(tools[0].description, "ééééé […]");
        let warning = warning.unwrap();
        assert!(
            warning.contains("it offers 3 tools; only the first 2"),
            "{warning}"
        );
        assert!(
            warning.contains("long (8 characters) is cut to 5"),
            "{warning}"
        );
    }

    fn names(config: &McpServerConfig) -> Vec<String> {
        filter_tools(config, vec![tool("a"), tool("b"), tool("c")])
            .into_iter()
            .map(|tool| tool.name)
            .collect()
    }

    #[test]
    fn enabled_tools_then_disabled_tools_choose_what_is_offered() {
        let mut config = McpServerConfig {
            name: "s".into(),
            transport: McpTransport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: Default::default(),
                oauth: Default::default(),
            },
            enabled: true,
            startup_timeout: Duration::from_secs(1),
            tool_timeout: Duration::from_secs(1),
            enabled_tools: None,
            disabled_tools: Vec::new(),
            sampling: false,
            source: McpSource::Session,
        };
        assert_eq!(names(&config), ["a", "b", "c"]);
        config.disabled_tools = vec!["b".into()];
        assert_eq!(names(&config), ["a", "c"]);
        config.enabled_tools = Some(vec!["b".into(), "c".into(), "unknown".into()]);
        assert_eq!(names(&config), ["c"]);
    }
}
