//! The tools of each model call: the built-ins plus the tools of every ready MCP server the
//! session holds and of its live extensions (`ToolSource`), sorted by name, decided once per
//! step so the model, the gate and the executor see the same set. When the set differs from the session's previous model call,
//! the step records `toolsChanged` first, so a break of the request's cached prefix is
//! explicit in the log. A server that said its tools changed (during a tool batch, say) is
//! waited for, briefly, so the next model call already has its new tools. Past the
//! thresholds of `[tools]` the MCP tools are searched, not listed
//! (`agentd_work::tools::tool_search`): a step lists the ones the session loaded and
//! `search_tools`, and a load shows in the next step's `toolsChanged` (`loaded`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;

use super::Run;
use agentd_core::conversation::ToolSpec;
use agentd_work::mcp::{McpHandle, McpStatus};
use agentd_work::tools::tool_search::{self, LoadedTools, SearchCatalogue, ToolSearchSettings};
use agentd_work::tools::{Tool, ToolRegistry};
use protocol::event::Event;

/// How long a step waits for a server that said its tools changed to list them again: a
/// `tools/list` answers in milliseconds; a server that hangs costs one step this much, and
/// its tools join a step later.
const TOOLS_REFRESH_WAIT: Duration = Duration::from_secs(5);

/// The tools of one step: what the model is offered and what the gate and executor look up.
pub(crate) struct ToolSet {
    pub(crate) registry: Arc<ToolRegistry>,
    /// `registry`'s specs, sorted by name.
    pub(crate) specs: Arc<[ToolSpec]>,
    /// Every MCP tool of the step when they are searched, not listed (None: all listed).
    pub(crate) catalogue: Option<Arc<SearchCatalogue>>,
}

impl ToolSet {
    pub(crate) fn new(registry: ToolRegistry) -> Self {
        let specs = registry.specs().into();
        Self {
            registry: Arc::new(registry),
            specs,
            catalogue: None,
        }
    }
}

/// Tools that come and go while a session lives (the tools of the extensions in its scope),
/// asked again at every step.
pub trait ToolSource: Send + Sync {
    /// The tools offered now; their names never collide with built-in or MCP ones.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
}

/// Where a run's tools come from.
pub struct RunTools {
    builtins: Arc<ToolRegistry>,
    /// The MCP servers of the session (ready or not: only ready ones offer tools).
    mcp_servers: Vec<Arc<McpHandle>>,
    /// How long the run waits before its first model call for servers still starting.
    startup_grace: Duration,
    /// The set of the current step.
    current: Mutex<Arc<ToolSet>>,
    /// A session run as a subagent keeps only the tools its definition allows (MCP tools
    /// included, as they come and go).
    filter: Option<agentd_work::agents::ToolFilter>,
    /// Tools that come and go (extensions'), asked at every step.
    sources: Vec<Arc<dyn ToolSource>>,
    /// A command's `allowed-tools`: only these, after `filter` (it takes tools away, never
    /// adds one).
    narrowing: Option<agentd_work::commands::ToolNarrowing>,
    /// When the MCP tools are searched rather than listed (`[tools]`), after `filter` and
    /// `narrowing`: a subagent or a command searches among the tools it may use.
    search: ToolSearchSettings,
    /// The model's window in tokens, which the share threshold of `search` is of.
    window_tokens: u64,
    /// The session's loaded MCP tools (its `SessionShared::loaded_tools`).
    loaded: Arc<LoadedTools>,
}

impl RunTools {
    pub fn new(
        builtins: Arc<ToolRegistry>,
        mcp_servers: Vec<Arc<McpHandle>>,
        startup_grace: Duration,
    ) -> Self {
        let current = Mutex::new(Arc::new(ToolSet::new((*builtins).clone())));
        Self {
            builtins,
            mcp_servers,
            startup_grace,
            current,
            filter: None,
            sources: Vec::new(),
            narrowing: None,
            search: ToolSearchSettings::default(),
            window_tokens: agentd_knowledge::context::DEFAULT_CONTEXT_WINDOW,
            loaded: Arc::default(),
        }
    }

    /// MCP tools searched past the thresholds of `settings` for a model of `window_tokens`,
    /// those `loaded` holds listed.
    pub fn with_search(
        mut self,
        settings: ToolSearchSettings,
        window_tokens: u64,
        loaded: Arc<LoadedTools>,
    ) -> Self {
        self.search = settings;
        self.window_tokens = window_tokens;
        self.loaded = loaded;
        self
    }

    /// Also the tools `source` offers at each step (an extension's, from the next step after
    /// it registered until its connection drops).
    pub fn with_source(mut self, source: Option<Arc<dyn ToolSource>>) -> Self {
        self.sources.extend(source);
        self
    }

    /// Only the tools `filter` allows, from the first step on (a session run as a subagent).
    pub fn with_filter(mut self, filter: Option<agentd_work::agents::ToolFilter>) -> Self {
        if let Some(filter) = &filter {
            self.builtins = Arc::new(filter.apply(&self.builtins));
            self.current = Mutex::new(Arc::new(ToolSet::new((*self.builtins).clone())));
        }
        self.filter = filter;
        self
    }

    /// Only the tools `narrowing` names, from the first step on (a command's run).
    pub fn with_narrowing(
        mut self,
        narrowing: Option<agentd_work::commands::ToolNarrowing>,
    ) -> Self {
        if let Some(narrowing) = &narrowing {
            self.builtins = Arc::new(narrowing.apply(&self.builtins));
            self.current = Mutex::new(Arc::new(ToolSet::new((*self.builtins).clone())));
        }
        self.narrowing = narrowing;
        self
    }

    /// The set of the current step.
    pub(crate) fn current(&self) -> Arc<ToolSet> {
        match self.current.lock() {
            Ok(current) => Arc::clone(&current),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Builds the set from what the servers offer now and makes it the current one.
    fn refresh(&self) -> Arc<ToolSet> {
        let mut registry =
            agentd_work::mcp::tools::session_tools(&self.builtins, &self.mcp_servers);
        for source in &self.sources {
            for tool in source.tools() {
                registry.register(tool);
            }
        }
        if let Some(filter) = &self.filter {
            registry = filter.apply(&registry);
        }
        if let Some(narrowing) = &self.narrowing {
            registry = narrowing.apply(&registry);
        }
        let offered = tool_search::offer(registry, &self.search, self.window_tokens, &self.loaded);
        let mut set = ToolSet::new(offered.registry);
        set.catalogue = offered.catalogue;
        let set = Arc::new(set);
        match self.current.lock() {
            Ok(mut current) => *current = Arc::clone(&set),
            Err(poisoned) => *poisoned.into_inner() = Arc::clone(&set),
        }
        set
    }

    fn builtin_specs(&self) -> Arc<[ToolSpec]> {
        self.builtins.specs().into()
    }

    /// Loads the MCP tools among `names` that the step searches and does not offer (a call to
    /// a tool no search loaded) and makes them part of the current set, so the call runs like
    /// any other, through the gate; the next step lists them.
    pub(crate) fn load_called<'a>(&self, names: impl IntoIterator<Item = &'a str>) {
        let current = self.current();
        let Some(catalogue) = &current.catalogue else {
            return;
        };
        let unoffered = names
            .into_iter()
            .filter(|name| current.registry.get(name).is_none());
        if tool_search::load_called(catalogue, &self.loaded, unoffered) {
            self.refresh();
        }
    }
}

/// The names added, removed and changed (description or schema) from `before` to `after`,
/// each sorted (specs are sorted by name).
pub(crate) fn tool_changes(
    before: &[ToolSpec],
    after: &[ToolSpec],
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let find = |specs: &[ToolSpec], name: &str| -> Option<ToolSpec> {
        specs.iter().find(|spec| spec.name == name).cloned()
    };
    let added = after
        .iter()
        .filter(|spec| find(before, &spec.name).is_none())
        .map(|spec| spec.name.clone())
        .collect();
    let removed = before
        .iter()
        .filter(|spec| find(after, &spec.name).is_none())
        .map(|spec| spec.name.clone())
        .collect();
    let changed = after
        .iter()
        .filter(|spec| find(before, &spec.name).is_some_and(|old| old != **spec))
        .map(|spec| spec.name.clone())
        .collect();
    (added, removed, changed)
}

impl Run {
    /// Waits at most the startup grace for the session's servers that are still starting
    /// (all at once; a cancel ends the wait), then warns about those that failed or are not
    /// ready yet: the run goes on without their tools, which join once they are ready.
    pub(super) async fn await_mcp_servers(&self) -> Result<()> {
        let servers = &self.tools.mcp_servers;
        if servers.is_empty() {
            return Ok(());
        }
        let grace = self.tools.startup_grace;
        // A remote server that failed gets one more attempt now that a run needs it.
        let waits =
            futures::future::join_all(servers.iter().map(|h| h.retry_and_wait_ready(grace)));
        let statuses = tokio::select! {
            statuses = waits => statuses,
            () = self.cancel.cancelled() => return Ok(()),
        };
        for (handle, status) in servers.iter().zip(statuses) {
            let name = &handle.key().name;
            let message = match status {
                McpStatus::Ready { .. } => match handle.warning() {
                    Some(warning) => warning,
                    None => continue,
                },
                McpStatus::Failed { error, stderr_tail } if stderr_tail.trim().is_empty() => {
                    format!("MCP server {name} failed: {error}; its tools are not available")
                }
                McpStatus::Failed { error, stderr_tail } => format!(
                    "MCP server {name} failed: {error}; its tools are not available; its stderr ends with:\n{}",
                    stderr_tail.trim_end()
                ),
                McpStatus::Starting => format!(
                    "MCP server {name} is still starting after {} s; its tools join once it is ready",
                    grace.as_secs_f64()
                ),
                McpStatus::Restarting { attempt, error } => format!(
                    "MCP server {name} is not ready after {} s: {error}; it is being restarted (attempt {attempt}) and its tools join once it is ready",
                    grace.as_secs_f64()
                ),
                McpStatus::Stopped => {
                    format!("MCP server {name} is stopped; its tools are not available")
                }
                McpStatus::NeedsLogin { message } => format!(
                    "MCP server {name} needs a login: {message}; its tools are not available until then"
                ),
            };
            self.log.append(Event::Warning { message }).await?;
        }
        Ok(())
    }

    /// Decides this step's tools; records `toolsChanged` when they differ from the session's
    /// previous model call (the built-ins, for the first call since the session was loaded:
    /// then marked `initial`, the tools the session starts with).
    pub(super) async fn offer_tools(&self) -> Result<()> {
        let stale = self
            .tools
            .mcp_servers
            .iter()
            .filter(|handle| handle.tools_stale());
        let settled = futures::future::join_all(stale.map(|h| h.tools_settled(TOOLS_REFRESH_WAIT)));
        tokio::select! {
            _ = settled => {}
            () = self.cancel.cancelled() => {}
        }
        let set = self.tools.refresh();
        let previous = self
            .shared
            .lock()
            .offered_tools
            .replace(Arc::clone(&set.specs));
        let initial = previous.is_none();
        let previous = previous.unwrap_or_else(|| self.tools.builtin_specs());
        let loaded = self.tools.loaded.take_unrecorded();
        if previous[..] == set.specs[..] && loaded.is_empty() {
            return Ok(());
        }
        let (added, removed, changed) = tool_changes(&previous, &set.specs);
        self.log
            .append(Event::ToolsChanged {
                run_id: self.run_id.clone(),
                added,
                removed,
                changed,
                initial,
                loaded,
            })
            .await?;
        Ok(())
    }

    /// Loads that no later model call of the run recorded (its last batch loaded a tool, then
    /// it ended): a `toolsChanged` with only `loaded`, so the session keeps them across a
    /// restart.
    pub(super) async fn record_last_loads(&self) {
        let loaded = self.tools.loaded.take_unrecorded();
        if loaded.is_empty() {
            return;
        }
        let event = Event::ToolsChanged {
            run_id: self.run_id.clone(),
            added: Vec::new(),
            removed: Vec::new(),
            changed: Vec::new(),
            initial: false,
            loaded,
        };
        if let Err(error) = self.log.append(event).await {
            tracing::warn!(run_id = %self.run_id, "the run's last tool loads were not recorded: {error:#}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str, description: &str) -> ToolSpec {
        ToolSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema: json!({"type": "object"}),
        }
    }

    #[test]
    fn changes_between_two_sets() {
        let before = [spec("a", "x"), spec("b", "x"), spec("c", "x")];
        let after = [spec("a", "x"), spec("c", "y"), spec("d", "x")];
        assert_eq!(
            tool_changes(&before, &after),
            (
                vec!["d".to_owned()],
                vec!["b".to_owned()],
                vec!["c".to_owned()]
            )
        );
        assert_eq!(
            tool_changes(&before, &before),
            (Vec::new(), Vec::new(), Vec::new())
        );
    }
}
