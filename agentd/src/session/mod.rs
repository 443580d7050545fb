//! Sessions: the manager that creates, finds, loads and deletes them. The state a session
//! shares between its actor, its run and the RPC layer (`SessionShared`) is defined by the run,
//! in `agent::sink`, and re-exported here.

pub mod actor;
mod change_forward;
mod child_log;
pub mod config_reload;
mod error;
pub mod events;
mod evict;
mod fork;
pub mod hooks;
mod index;
mod mcp;
pub mod mcp_status;
mod new_session;
mod notification_chain;
mod recovery;
pub mod replay;
mod resume;
mod rewind;
mod run_permissions;
mod scan;
mod status;
pub mod subagent;
mod system_prompt;
pub mod task_events;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use anyhow::Context;
use protocol::error::echo;
use tokio::sync::broadcast;
use tokio_util::task::TaskTracker;

use crate::config::Config;
use crate::store::{self, SessionHeader};
use actor::Session;
use agentd_core::paths::Paths;
use agentd_work::tools::{ToolLimits, ToolRegistry};
use events::Published;
use protocol::event::Event;
use protocol::session::{SessionInfo, SessionStatus};

pub use actor::{RunOptions, SessionError};
pub use agentd_agent::sink::SessionShared;

/// Lifecycle events of all sessions buffered for `daemon/subscribe` before a subscriber lags.
const DAEMON_EVENT_BUFFER: usize = 1024;
/// Largest page of `session/list`.
pub const MAX_LIST_LIMIT: usize = 1000;
/// Page size of `session/list` when the client gives none.
pub const DEFAULT_LIST_LIMIT: usize = 100;

/// What sessions need from the daemon.
pub struct SessionDeps {
    pub paths: Paths,
    /// The configuration in use (a snapshot per reader; `daemon/reload` and the file watch
    /// swap it), or why none is usable (file, line, reason).
    pub config: Arc<crate::config::live::LiveConfig>,
    /// The LLM providers' HTTP client.
    pub http: agentd_llm::HttpClients,
    /// fetch_url's HTTP clients (address checks, no proxy, redirects by hand).
    pub fetch: agentd_work::tools::FetchClients,
    pub tools: Arc<ToolRegistry>,
    pub tool_limits: ToolLimits,
    /// How run_shell is confined, and what `daemon/status` says of it.
    pub sandbox: Arc<agentd_policy::process::sandbox::ShellSandbox>,
    /// Where runs park tool calls that need a person.
    pub approvals: Arc<agentd_policy::approval::ApprovalBroker>,
    /// Where runs paused at a budget wait for `budget/respond`.
    pub budgets: Arc<agentd_agent::budget_pause::BudgetBroker>,
    /// MCP servers' questions waiting for an answer, across sessions (`elicitation/respond`).
    pub elicitations: Arc<agentd_agent::elicitation::ElicitationBroker>,
    /// The project roots whose settings may loosen policy.
    pub trust: Arc<agentd_policy::trust::TrustStore>,
    /// The curated memory stores: a snapshot goes into each new session's system prompt.
    pub memory: Arc<agentd_knowledge::memory::MemoryStores>,
    /// The MCP servers sessions share.
    pub mcp: Arc<agentd_work::mcp::McpManager>,
    /// Background tasks: subagents and background shell commands.
    pub tasks: Arc<crate::task::TaskManager>,
    /// Background run_shell commands: their runners and stop tokens.
    pub shell_tasks: Arc<crate::task::shell::ShellTasks>,
    /// Which sessions use which MCP servers, for their `mcpServerStatus` events.
    pub mcp_status: Arc<mcp_status::McpStatusRegistry>,
    /// The live extensions: their tools and event handlers join the runs in their scope.
    pub extensions: Arc<crate::extension::Extensions>,
    /// The workspaces' checkpoint stores (`session/diff`, `session/rewind`).
    pub checkpoints: Arc<agentd_work::checkpoint::Checkpoints>,
    /// The manager itself, for the `task` tool's child sessions: set once it exists
    /// (`SessionManager::start_task_events`); weak, so the deps never keep it alive.
    pub manager: std::sync::OnceLock<std::sync::Weak<SessionManager>>,
}

impl SessionDeps {
    /// The configuration and the provider `model` names in it (None: the default one), or why
    /// either is unusable, as the error a session method answers.
    pub fn provider(
        &self,
        model: Option<&str>,
    ) -> Result<(Arc<Config>, agentd_llm::ProviderConfig), SessionError> {
        let config = self.config.snapshot().map_err(SessionError::Config)?;
        let provider = config
            .resolve_provider(model)
            .map_err(|err| SessionError::Config(err.to_string()))?;
        Ok((config, provider))
    }
}

/// One known session: its header (always) and its loaded actor (on first use, until idle).
struct Slot {
    header: SessionHeader,
    file_updated_at: Option<SystemTime>,
    loaded: evict::LoadedCell,
    deleted: AtomicBool,
}

/// Every session of the daemon.
pub struct SessionManager {
    deps: Arc<SessionDeps>,
    slots: RwLock<HashMap<String, Arc<Slot>>>,
    /// Sessions whose files this daemon does not read (a newer format), with the reason
    /// `session/get` gives; found at startup, their files are left alone.
    refused: HashMap<String, String>,
    /// The daemon-wide lifecycle stream and who answers approvals on it.
    daemon: events::DaemonStream,
    /// Owns every session actor and run task, and the evictor.
    tasks: TaskTracker,
    /// Summaries of sessions not loaded, for listing without reading their files.
    summaries: index::SummaryIndex,
    /// The listing order, sorted once per change of the set of sessions.
    listing: index::ListingOrder,
    /// Stops the evictor (shutdown).
    evictor_stop: tokio_util::sync::CancellationToken,
    /// Sessions marked active at startup whose run goes on when they load (`resume`).
    resumable: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl SessionManager {
    /// Index the sessions on disk (headers only; each loads on first use).
    pub async fn open(deps: SessionDeps) -> anyhow::Result<SessionManager> {
        let dir = deps.paths.sessions_dir.clone();
        let ((headers, refused), summaries) = tokio::task::spawn_blocking(move || {
            let (headers, refused) = scan::scan(&dir)?;
            let stamps: Vec<(String, index::FileStamp)> = headers
                .iter()
                .filter_map(|(header, stamp)| Some((header.id.clone(), (*stamp)?)))
                .collect();
            let summaries = index::SummaryIndex::load(&dir, &stamps);
            anyhow::Ok(((headers, refused), summaries))
        })
        .await
        .context("session scan failed")??;
        let daemon = events::DaemonStream::new(DAEMON_EVENT_BUFFER);
        let slots = headers
            .into_iter()
            .map(|(header, stamp)| {
                let slot = Slot {
                    header,
                    file_updated_at: stamp.map(|stamp| stamp.modified()),
                    loaded: evict::LoadedCell::new(),
                    deleted: AtomicBool::new(false),
                };
                (slot.header.id.clone(), Arc::new(slot))
            })
            .collect();
        Ok(SessionManager {
            deps: Arc::new(deps),
            slots: RwLock::new(slots),
            refused,
            daemon,
            tasks: TaskTracker::new(),
            summaries,
            listing: index::ListingOrder::default(),
            evictor_stop: tokio_util::sync::CancellationToken::new(),
            resumable: Default::default(),
        })
    }

    pub fn approvals(&self) -> Arc<agentd_policy::approval::ApprovalBroker> {
        self.deps.approvals.clone()
    }

    /// Runs paused at a budget, across sessions (`budget/respond`).
    pub fn budgets(&self) -> Arc<agentd_agent::budget_pause::BudgetBroker> {
        self.deps.budgets.clone()
    }

    /// MCP servers' questions waiting for an answer, across sessions (`elicitation/respond`).
    pub fn elicitations(&self) -> Arc<agentd_agent::elicitation::ElicitationBroker> {
        self.deps.elicitations.clone()
    }

    pub fn trust(&self) -> Arc<agentd_policy::trust::TrustStore> {
        self.deps.trust.clone()
    }

    pub fn memory(&self) -> Arc<agentd_knowledge::memory::MemoryStores> {
        self.deps.memory.clone()
    }

    pub fn mcp(&self) -> Arc<agentd_work::mcp::McpManager> {
        self.deps.mcp.clone()
    }

    pub fn tasks(&self) -> Arc<crate::task::TaskManager> {
        self.deps.tasks.clone()
    }

    /// The live extensions (`extension/register`; the commands dispatcher lists and runs
    /// their commands through it).
    pub fn extensions(&self) -> Arc<crate::extension::Extensions> {
        self.deps.extensions.clone()
    }

    /// Runs the SessionEnd hooks of `session` (`reason`: why it ends, e.g. "clear") and waits
    /// for them (each bounded by its timeout); the session itself stays.
    pub async fn session_ended(&self, session: &Session, reason: &str) {
        hooks::at_session_point(
            &session.header,
            &self.deps,
            &*session.log,
            agentd_agent::intercept::Point::SessionEnd { reason },
        )
        .await;
    }

    /// What hooks a session in `cwd` would load, from where, and whether each runs (`/hooks`).
    pub async fn hooks_for(&self, cwd: &std::path::Path) -> Vec<agentd_agent::hooks::HookListing> {
        crate::session::hooks::describe(&self.deps, cwd).await
    }

    /// The daemon's background shell commands.
    pub fn shell_tasks(&self) -> Arc<crate::task::shell::ShellTasks> {
        self.deps.shell_tasks.clone()
    }

    /// The MCP servers of a session in `cwd` (canonical) given `session` entries (its
    /// header's, `SessionHeader::mcp_servers`; none for `mcp/list` of a directory): the user's
    /// `[mcp_servers.*]` (none while the config is unusable), the project's `.mcp.json` as its
    /// trust allows, `${VAR}` expanded from the daemon's environment. Reads files off the
    /// runtime.
    pub async fn mcp_servers(
        &self,
        cwd: PathBuf,
        session: agentd_work::mcp::config::McpEntries,
    ) -> Result<agentd_work::mcp::config::McpResolution, SessionError> {
        let deps = self.deps.clone();
        tokio::task::spawn_blocking(move || {
            let (user, expand_env) = match &deps.config.snapshot() {
                Ok(config) => (config.mcp.servers.clone(), config.mcp.expand_env.clone()),
                Err(_) => (agentd_work::mcp::config::McpEntries::default(), Vec::new()),
            };
            let env = |name: &str| std::env::var(name).ok();
            agentd_work::mcp::config::resolve_for(
                &cwd,
                &user,
                &session,
                &deps.trust,
                &expand_env,
                &env,
            )
        })
        .await
        .map_err(|err| SessionError::Internal(err.to_string()))
    }

    /// Why `model` (as `session/update` names one) does not resolve to a configured
    /// provider, if it does not.
    /// The user's `[mcp_servers.*]` resolved (disabled ones included; none while the config
    /// is unusable). Reads the environment off the runtime.
    pub async fn user_mcp_servers(&self) -> Vec<agentd_work::mcp::McpServerConfig> {
        let deps = self.deps.clone();
        tokio::task::spawn_blocking(move || {
            let Ok(config) = deps.config.snapshot() else {
                return Vec::new();
            };
            let env = |name: &str| std::env::var(name).ok();
            agentd_work::mcp::config::resolve_user(&config.mcp.servers, &env)
        })
        .await
        .unwrap_or_default()
    }

    pub fn model_problem(&self, model: &str) -> Option<String> {
        self.deps
            .provider(Some(model))
            .err()
            .map(|err| err.to_string())
    }

    pub fn config_error(&self) -> Option<String> {
        self.deps.config.state().error.clone()
    }

    /// What confines run_shell (`daemon/status`'s `sandbox`).
    pub fn sandbox_status(&self) -> String {
        self.deps.sandbox.status()
    }

    /// What `daemon/status` says of checkpoints: `on`, or `off: <why>`.
    pub async fn checkpoints_status(&self) -> String {
        match self.deps.checkpoints.status().await.reason {
            None => "on".to_owned(),
            Some(reason) => format!("off: {reason}"),
        }
    }

    pub fn count(&self) -> usize {
        self.read_slots().len()
    }

    pub fn active_runs(&self) -> usize {
        self.read_slots()
            .values()
            .filter_map(|slot| slot.loaded.get())
            .filter(|session| session.shared.lock().run_id.is_some())
            .count()
    }

    /// The daemon-wide lifecycle stream.
    pub fn subscribe_daemon_events(&self) -> broadcast::Receiver<Arc<Published>> {
        self.daemon.events.subscribe()
    }

    /// The count of `daemon/subscribe` subscriptions whose client answers approvals (each
    /// holds a guard of it while it lasts); they count for the approvals of every session.
    pub fn daemon_answerers(&self) -> &agentd_core::answerers::Answerers {
        &self.daemon.answerers
    }

    /// Change a session's mode, model or title from its next run on; the session as it now
    /// reads.
    pub async fn update(
        &self,
        params: protocol::session::SessionUpdateParams,
    ) -> Result<SessionInfo, SessionError> {
        let session = self.get(&params.session_id).await?;
        session.update(params).await?;
        Ok(session.info())
    }

    /// The session `id`, loaded.
    pub async fn get(&self, id: &str) -> Result<Arc<Session>, SessionError> {
        check_session_id(id)?;
        let slot =
            self.read_slots()
                .get(id)
                .cloned()
                .ok_or_else(|| match self.refused.get(id) {
                    Some(why) => SessionError::NotFound(why.clone()),
                    None => SessionError::not_found(id),
                })?;
        if slot.deleted.load(Ordering::Acquire) {
            return Err(SessionError::not_found(id));
        }
        self.load(&slot).await
    }

    /// Sessions newest first; `cursor` is the id of the last session of the previous page.
    pub async fn list(
        &self,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<SessionInfo>, Option<String>), SessionError> {
        let order = self.listing_order();
        let slots = &order.slots;
        let start = match cursor {
            Some(cursor) => {
                check_session_id(cursor)?;
                order.position(cursor).map(|pos| pos + 1).ok_or_else(|| {
                    SessionError::InvalidParams(format!("unknown cursor {:?}", echo(cursor)))
                })?
            }
            None => 0,
        };
        let page: Vec<Arc<Slot>> = slots.iter().skip(start).take(limit).cloned().collect();
        let next_cursor = (start + page.len() < slots.len())
            .then(|| page.last().map(|slot| slot.header.id.clone()))
            .flatten();
        Ok((self.infos_of(&page).await, next_cursor))
    }

    /// Delete a session: cancel its run, wait for it, remove its file.
    pub async fn delete(&self, id: &str) -> Result<(), SessionError> {
        let session = self.get(id).await?;
        let slot = self.read_slots().get(id).cloned();
        if let Some(slot) = slot
            && slot.deleted.swap(true, Ordering::AcqRel)
        {
            return Err(SessionError::not_found(id));
        }
        // Its tasks end with it (subagents cancelled, background shells killed), before its
        // run is waited for: a foreground subagent's run would otherwise hold it.
        self.deps.tasks.stop_for_session(id).await;
        self.deps.shell_tasks.stop_for_session(id);
        session
            .stop_and_wait(agentd_agent::StopReason::Cancelled)
            .await;
        hooks::at_session_point(
            &session.header,
            &self.deps,
            &*session.log,
            agentd_agent::intercept::Point::SessionEnd { reason: "delete" },
        )
        .await;
        let _ = session.log.append(Event::SessionDeleted {}).await;
        self.write_slots().remove(id);
        self.listing.invalidate();
        self.summaries.remove(id);
        let path = store::session_path(&self.deps.paths.sessions_dir, id);
        tokio::fs::remove_file(&path).await.map_err(|err| {
            SessionError::Internal(format!("cannot remove {}: {err}", path.display()))
        })?;
        session.close();
        Ok(())
    }

    /// Stop every run (they end `interrupted`) and wait for the actors, all within `budget`.
    pub async fn shutdown(&self, budget: std::time::Duration) {
        self.evictor_stop.cancel();
        let deadline = tokio::time::Instant::now() + budget;
        let sessions: Vec<Arc<Session>> = self
            .read_slots()
            .values()
            .filter_map(|slot| slot.loaded.get())
            .collect();
        // Runs first (they record `runFinished{interrupted}` while subscribers still listen),
        // then the actors and subscriptions.
        let stop_runs = futures::future::join_all(
            sessions
                .iter()
                .map(|session| session.stop_and_wait(agentd_agent::StopReason::Shutdown)),
        );
        if tokio::time::timeout_at(deadline, stop_runs).await.is_err() {
            tracing::warn!("some runs did not stop in time");
        }
        // SessionEnd hooks of the top-level sessions, within half of what is left (a hook
        // still running then is killed with its group).
        let hooks_until = tokio::time::Instant::now()
            + deadline.saturating_duration_since(tokio::time::Instant::now()) / 2;
        let session_ends = futures::future::join_all(
            sessions
                .iter()
                .filter(|session| {
                    session.header.parent_session_id.is_none() && session.header.task_id.is_none()
                })
                .map(|session| {
                    hooks::at_session_point(
                        &session.header,
                        &self.deps,
                        &*session.log,
                        agentd_agent::intercept::Point::SessionEnd { reason: "shutdown" },
                    )
                }),
        );
        if tokio::time::timeout_at(hooks_until, session_ends)
            .await
            .is_err()
        {
            tracing::warn!("some SessionEnd hooks did not finish before the daemon stopped");
        }
        for session in &sessions {
            session.close();
        }
        self.tasks.close();
        if tokio::time::timeout_at(deadline, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("some session tasks did not stop in time");
        }
        // The next start lists every session from the index, without reading their files (an
        // entry whose file a late write changed no longer matches, and is re-summarised).
        for session in &sessions {
            self.remember_summary(session).await;
        }
        if let Err(err) = self.summaries.flush().await {
            tracing::warn!("cannot write the session index: {err:#}");
        }
    }

    async fn load(&self, slot: &Arc<Slot>) -> Result<Arc<Session>, SessionError> {
        slot.loaded
            .get_or_load(|| {
                actor::Session::load(
                    slot.header.clone(),
                    self.deps.clone(),
                    self.daemon.clone(),
                    &self.tasks,
                    self.take_resumable(&slot.header.id),
                )
            })
            .await
    }

    fn read_slots(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<Slot>>> {
        self.slots
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write_slots(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Arc<Slot>>> {
        self.slots
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Refuse an id outside the session-id grammar before it names anything (a file, a slot).
pub fn check_session_id(id: &str) -> Result<(), SessionError> {
    if protocol::id::is_session_id(id) {
        return Ok(());
    }
    Err(SessionError::InvalidId(format!(
        "invalid session id {:?}: session ids are `ses_` followed by letters, digits, `_` or `-`; list the sessions to see which exist",
        echo(id)
    )))
}

/// Info from the header alone (for a session that cannot be loaded).
fn header_info(header: &SessionHeader, updated: Option<SystemTime>) -> SessionInfo {
    SessionInfo {
        session_id: header.id.clone(),
        title: header.title.clone(),
        cwd: header.cwd.clone(),
        provider: header.provider.clone(),
        model: header.model.clone(),
        permission_mode: header.permission_mode,
        created_at: header.created_at.clone(),
        updated_at: updated
            .map(|t| humantime::format_rfc3339_seconds(t).to_string())
            .unwrap_or_else(|| header.created_at.clone()),
        status: SessionStatus::Idle,
        run_id: None,
        last_seq: 0,
        usage: Default::default(),
        preview: None,
        parent_session_id: header.parent_session_id.clone(),
        cost_usd: None,
        forked_from: header.forked_from.clone(),
    }
}
