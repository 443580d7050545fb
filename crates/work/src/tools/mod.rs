//! Tools: the tool trait, the registry, the context a tool runs in, and the built-in tools.
//!
//! A tool never throws at the model: every failure (bad arguments, denied path, failed command)
//! becomes a [`ToolOutput`] with `is_error` set, which the model reads and corrects. The batch
//! executor ([`execute_batch`]) validates calls, decides between parallel and sequential
//! execution, truncates output and pairs every call with exactly one result.

mod background;
mod executor;
mod fetch;
mod fetch_access;
mod files;
mod load_skill;
mod memory;
mod read_filter;
mod schema_tidy;
mod search;
pub mod server_requests;
mod shell;
mod task;
mod task_tools;
mod text_file;
mod todo;
pub mod tool_search;
mod typed;
mod write_limits;
#[cfg(unix)]
mod write_target;
#[cfg(windows)]
#[path = "write_target_windows.rs"]
mod write_target;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use agentd_core::conversation::ToolSpec;

pub use background::{BackgroundShells, OutputTail, SessionTasks, ShellStarter, TaskSummary};
pub use executor::{BatchObserver, CANCELLED, NoopObserver, ToolResult, execute_batch};
pub(crate) use fetch::FetchUrl;
pub use fetch_access::{FetchClients, FetchDecision, FetchRules, NoFetchRules};
pub(crate) use files::{EditFile, ListDir, ReadFile, WriteFile};
pub use load_skill::LoadSkill;
pub use memory::MemoryTool;
pub use read_filter::ReadFilter;
pub(crate) use search::{Glob, Grep};
pub(crate) use shell::RunShell;
pub use task::{DEFAULT_AGENT_TYPE, SubagentLauncher, TaskParams, TaskTool};
pub use task_tools::{TaskGet, TaskList, TaskOutputTool, TaskStop};
pub use todo::{TodoItem, TodoSink, TodoStatus, TodoWrite, wire_items as todo_wire_items};
pub(crate) use typed::TypedTool;

/// A tool the model can call.
///
/// Implementations parse their input with [`parse_input`] into a params struct that derives
/// `JsonSchema` and `Deserialize`, so the schema offered to the model and the validation agree.
pub trait Tool: Send + Sync + 'static {
    /// The name the model calls it by: a built-in's constant, or an MCP tool's
    /// `mcp__server__tool` made at runtime.
    fn name(&self) -> &str;
    /// Written for the model: when to use the tool, what it returns, its limits.
    fn description(&self) -> &str;
    /// JSON schema of the input object, generated with [`schema_of`] from the params struct.
    fn input_schema(&self) -> serde_json::Value;
    /// Whether the tool only observes (files, network) and never changes anything.
    fn read_only(&self) -> bool;
    /// The MCP server the tool is of (None: not an MCP tool), so a subagent definition that
    /// lists the server keeps its tools.
    fn mcp_server(&self) -> Option<&str> {
        None
    }
    /// Whether the tool may run concurrently with other calls of the same batch.
    fn parallel_safe(&self) -> bool {
        self.read_only()
    }
    /// Checks the input against the params struct before anything runs; the error is the text
    /// the model reads (see [`parse_input`]). The default accepts everything (e.g. MCP tools,
    /// whose servers validate).
    fn validate(&self, input: &serde_json::Value) -> Result<(), String> {
        let _ = input;
        Ok(())
    }
    /// Whether a call, once the run is cancelled, is still polled for at most
    /// [`ToolLimits::cancel_wind_down`] so it can tell the other side (an MCP call sends
    /// `notifications/cancelled` to its server); its result is `cancelled` all the same.
    fn winds_down_on_cancel(&self) -> bool {
        false
    }
    /// Whether the executor may cut this tool's output to the output cap (`[skill]` results of
    /// `load_skill` are never cut).
    fn truncate_output(&self) -> bool {
        true
    }
    /// One line for UIs, e.g. "ls -la" or "src/main.rs".
    fn summary(&self, input: &serde_json::Value) -> String;
    fn call<'a>(
        &'a self,
        input: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutput>;
}

/// What a tool call produced: text for the model, whether it is an error, and the images it
/// returned (MCP tools; the output cap applies to the text only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
    pub images: Vec<agentd_core::conversation::ToolImage>,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
            images: Vec::new(),
        }
    }

    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
            images: Vec::new(),
        }
    }
}

/// Everything a tool call may use besides its input.
#[derive(Clone)]
pub struct ToolContext {
    /// Canonical session cwd, which is the workspace root: file tools stay under it.
    pub workspace: PathBuf,
    /// Fired when the run is cancelled: tools stop (run_shell kills its process group).
    pub cancel: tokio_util::sync::CancellationToken,
    /// Where a long-running tool reports progress (run_shell: output lines and byte counts).
    /// [`execute_batch`] replaces it per call to route progress to its observer.
    pub progress: ProgressSink,
    /// Shared HTTP clients (connection pools) of fetch_url, which check every address.
    pub fetch: FetchClients,
    /// The session's rules as fetch_url needs them (hosts an allow rule names, redirects to
    /// another host); the run sets them per batch.
    pub fetch_rules: Arc<dyn FetchRules>,
    /// The run's Read deny rules, which grep, glob and list_dir apply to every path they
    /// would return (the gate only sees the path a call names).
    pub read_filter: ReadFilter,
    /// Where todo_write's list goes (the run announces it as `todoUpdated`).
    pub todo: TodoSink,
    /// How run_shell confines its command (the daemon's `[sandbox]` and what the kernel
    /// offers).
    pub sandbox: Arc<agentd_policy::process::sandbox::ShellSandbox>,
    /// Where the `task` tool starts subagents (None: not in this context).
    pub subagents: Option<Arc<dyn SubagentLauncher>>,
    /// Where `run_shell {runInBackground: true}` starts its task; None where background
    /// commands are not offered (the call says so).
    pub background: Option<BackgroundShells>,
    pub limits: ToolLimits,
    /// The session whose run makes the call (None outside a session): the `task_*` tools
    /// show and stop only its tasks.
    pub session_id: Option<String>,
    /// The id of the call being run (set per call by [`execute_batch`]; None outside one):
    /// an extension's tool names it in `extension/callTool`.
    pub tool_call_id: Option<String>,
    /// Where an MCP server's questions and sampling requests during a call go (the run sets
    /// it per batch; None: declined and refused, saying why).
    pub server_requests: Option<Arc<dyn crate::tools::server_requests::McpServerRequests>>,
}

impl ToolContext {
    /// A context with default limits, no progress sink, no read rules, a fresh cancellation
    /// token and fetch rules that name no host.
    pub fn new(workspace: PathBuf, fetch: FetchClients) -> Self {
        Self {
            workspace,
            cancel: tokio_util::sync::CancellationToken::new(),
            progress: ProgressSink::none(),
            fetch,
            fetch_rules: Arc::new(NoFetchRules),
            read_filter: ReadFilter::none(),
            todo: TodoSink::default(),
            sandbox: Arc::new(agentd_policy::process::sandbox::ShellSandbox::none(
                "not configured for this context",
            )),
            subagents: None,
            background: None,
            limits: ToolLimits::default(),
            session_id: None,
            tool_call_id: None,
            server_requests: None,
        }
    }
}

/// A callback receiving progress lines from a running tool. Cheap to clone.
#[derive(Clone, Default)]
pub struct ProgressSink(Option<Arc<dyn Fn(String) + Send + Sync>>);

impl ProgressSink {
    pub(crate) fn new(report: impl Fn(String) + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(report)))
    }

    /// A sink that drops everything.
    pub fn none() -> Self {
        Self(None)
    }

    pub(crate) fn report(&self, message: impl Into<String>) {
        if let Some(report) = &self.0 {
            report(message.into());
        }
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "ProgressSink(..)"
        } else {
            "ProgressSink(none)"
        })
    }
}

/// Caps on what tools do and return. Limits are data: each one says why it exists.
#[derive(Clone, Debug)]
pub struct ToolLimits {
    /// Tool output longer than this (in chars) is cut keeping head and tail, so one noisy
    /// command cannot flood the model's context window.
    pub output_max_chars: usize,
    /// How many calls of a parallel batch run at once, so a model asking for 50 greps does not
    /// open 50 directory walks on a small machine.
    pub(crate) parallel_max: usize,
    /// run_shell timeout when the model gives none: long enough for builds and test suites,
    /// short enough that a hung command does not stall the run for long.
    pub(crate) shell_default_timeout: Duration,
    /// Upper bound on the timeout the model may ask for; a run must come back eventually.
    pub(crate) shell_max_timeout: Duration,
    /// How long a cancelled call of a tool that winds down (MCP: telling the server) may
    /// still take, so a cancel reaches the server without a stuck server holding the run.
    pub(crate) cancel_wind_down: Duration,
    /// Bytes of stdout (and, separately, stderr) kept in memory while a command runs (head and
    /// tail halves), so `yes` or a huge build log cannot exhaust the daemon's memory.
    pub(crate) shell_capture_max_bytes: usize,
    /// How long run_shell still reads the output pipes once the command and everything it
    /// started were killed or exited: a process that escaped (and holds a pipe) cannot make
    /// the call outlive its timeout by more than this.
    pub(crate) shell_drain_after_exit: Duration,
    /// Minimum time between two progress reports of run_shell, so chatty commands do not flood
    /// clients with events.
    pub(crate) shell_progress_interval: Duration,
    /// Minimum time between two progress reports of one MCP call (a server may notify
    /// hundreds of times a second; each report is a persisted event).
    pub(crate) mcp_progress_interval: Duration,
    /// Bytes of a fetched body that are read at most; the rest is not downloaded.
    pub(crate) fetch_max_bytes: usize,
    /// Whole-call timeout of fetch_url (every redirect hop and the body together), so a slow
    /// server cannot hold the run.
    pub(crate) fetch_timeout: Duration,
    /// Redirects fetch_url follows at most (each hop checked), so a redirect loop ends.
    pub(crate) fetch_max_redirects: usize,
    /// Lines read_file returns when the model gives no limit; the model pages with offset.
    pub(crate) read_file_default_lines: usize,
    /// Longer lines are cut by read_file (minified files would otherwise fill the context).
    pub(crate) read_file_max_line_chars: usize,
    /// Bytes of numbered text one read_file call returns at most (the model reads on with
    /// `offset`), so its memory stays small whatever the line count and lengths.
    pub(crate) read_file_max_bytes: usize,
    /// Bytes of one line grep searches and keeps; a longer line (minified code, a 300 MB
    /// one-line file) is searched in its first bytes only, so memory stays bounded.
    pub(crate) grep_max_line_bytes: usize,
    /// Largest file edit_file loads: it edits in memory, so a huge file is refused (the model
    /// can use run_shell tools like `sed` instead).
    pub(crate) edit_file_max_bytes: u64,
    /// Entries returned by list_dir and glob; the model narrows the pattern for more.
    pub(crate) listing_max_entries: usize,
    /// Matching lines returned by grep; the model narrows the pattern or path for more.
    pub(crate) grep_max_matches: usize,
}

impl Default for ToolLimits {
    fn default() -> Self {
        Self {
            output_max_chars: 30_000,
            parallel_max: 8,
            shell_default_timeout: Duration::from_secs(120),
            shell_max_timeout: Duration::from_secs(600),
            cancel_wind_down: Duration::from_secs(3),
            shell_capture_max_bytes: 1024 * 1024,
            shell_drain_after_exit: Duration::from_secs(2),
            shell_progress_interval: Duration::from_millis(500),
            mcp_progress_interval: Duration::from_millis(250),
            fetch_max_bytes: 1024 * 1024,
            fetch_timeout: Duration::from_secs(30),
            fetch_max_redirects: 10,
            read_file_default_lines: 2000,
            read_file_max_line_chars: 2000,
            read_file_max_bytes: 256 * 1024,
            grep_max_line_bytes: 64 * 1024,
            edit_file_max_bytes: 16 * 1024 * 1024,
            listing_max_entries: 1000,
            grep_max_matches: 500,
        }
    }
}

/// The tools offered to a session, by name. A `BTreeMap` keeps the order deterministic, which
/// keeps the request prefix byte-stable for provider caches.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Registered>,
}

/// A tool and its spec, made once when it is registered: a step's tool set is built from the
/// registry every model call, and generating each schema again would cost more than the call's
/// own work.
#[derive(Clone)]
struct Registered {
    tool: Arc<dyn Tool>,
    spec: Arc<ToolSpec>,
}

impl ToolRegistry {
    /// An empty registry.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The built-in file, search, shell and web tools.
    pub fn builtin() -> Self {
        let mut registry = Self::new();
        registry.register(Arc::new(ReadFile));
        registry.register(Arc::new(WriteFile));
        registry.register(Arc::new(EditFile));
        registry.register(Arc::new(ListDir));
        registry.register(Arc::new(Glob));
        registry.register(Arc::new(Grep));
        registry.register(Arc::new(RunShell));
        registry.register(Arc::new(FetchUrl));
        registry.register(Arc::new(TodoWrite));
        registry
    }

    /// Specs for the model's `tools` field, sorted by name.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .values()
            .map(|registered| ToolSpec::clone(&registered.spec))
            .collect()
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools
            .get(name)
            .map(|registered| Arc::clone(&registered.tool))
    }

    /// Adds a tool, replacing one of the same name.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        let spec = Arc::new(ToolSpec {
            name: tool.name().to_owned(),
            description: tool.description().to_owned(),
            input_schema: tool.input_schema(),
        });
        self.tools
            .insert(tool.name().to_owned(), Registered { tool, spec });
    }

    /// The tools whose names `keep` accepts (subagent allow/deny lists, read-only agents).
    #[cfg(test)]
    pub(crate) fn filtered(&self, keep: impl Fn(&str) -> bool) -> Self {
        Self {
            tools: self
                .tools
                .iter()
                .filter(|(name, _)| keep(name))
                .map(|(name, registered)| (name.clone(), registered.clone()))
                .collect(),
        }
    }

    /// The tools `keep` accepts, looking at the tool itself (read-only agents keep only the
    /// tools that declare themselves read-only).
    pub(crate) fn filtered_tools(&self, keep: impl Fn(&dyn Tool) -> bool) -> Self {
        Self {
            tools: self
                .tools
                .iter()
                .filter(|(_, registered)| keep(registered.tool.as_ref()))
                .map(|(name, registered)| (name.clone(), registered.clone()))
                .collect(),
        }
    }

    /// Tool names in order.
    pub(crate) fn names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }
}

impl fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

/// The input schema of a params struct, without the `$schema` and `title` keys that providers
/// do not need, tidied (`schema_tidy`).
pub(crate) fn schema_of<P: JsonSchema>() -> serde_json::Value {
    let mut schema = schemars::schema_for!(P);
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    schema_tidy::tidy(schema.to_value())
}

/// Deserialises a tool's input into its params struct; the error is written for the model,
/// e.g. "invalid arguments for read_file: missing field `path`".
pub(crate) fn parse_input<P: DeserializeOwned>(
    tool_name: &str,
    input: &serde_json::Value,
) -> Result<P, String> {
    P::deserialize(input).map_err(|error| format!("invalid arguments for {tool_name}: {error}"))
}

/// Shortens a one-line summary for UIs to at most `max_chars` chars (first line only).
pub fn one_line(text: &str, max_chars: usize) -> String {
    let first = text.lines().next().unwrap_or("");
    let mut out: String = first.chars().take(max_chars).collect();
    if out.len() < first.len() || text.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

/// The string field `key` of an input object, or "" (for summaries of possibly bad input).
pub(crate) fn str_field<'a>(input: &'a serde_json::Value, key: &str) -> &'a str {
    input
        .get(key)
        .and_then(serde_json::Value::as_str)
        .unwrap_or("")
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Helpers for the tool tests: a context on a temp workspace, a validated call and read
    //! rules that deny one directory's contents.

    use super::{Tool, ToolContext, ToolOutput};

    /// A temp workspace and a context on it (canonical path, default limits).
    pub(crate) fn workspace() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let fetch = super::FetchClients::new().unwrap();
        let ctx = ToolContext::new(dir.path().canonicalize().unwrap(), fetch);
        (dir, ctx)
    }

    /// Read rules that deny everything under one directory of the workspace (not the
    /// directory itself) and remember every path they were asked about.
    pub(crate) struct DenyUnder {
        pub(crate) dir: std::path::PathBuf,
        pub(crate) asked: std::sync::Mutex<Vec<std::path::PathBuf>>,
    }

    impl DenyUnder {
        /// A context's read filter denying what is under `dir` (relative to the workspace),
        /// and the rules, to look at what they were asked.
        pub(crate) fn install(ctx: &mut ToolContext, dir: &str) -> std::sync::Arc<DenyUnder> {
            let rules = std::sync::Arc::new(DenyUnder {
                dir: ctx.workspace.join(dir),
                asked: std::sync::Mutex::new(Vec::new()),
            });
            ctx.read_filter = super::ReadFilter::new(rules.clone());
            rules
        }

        /// Whether any path under the denied directory was looked at.
        pub(crate) fn looked_inside(&self) -> bool {
            self.asked
                .lock()
                .unwrap()
                .iter()
                .any(|path| path.starts_with(&self.dir) && *path != self.dir)
        }
    }

    impl agentd_policy::permission::ReadRules for DenyUnder {
        fn denies(&self, _tool: &str, path: &std::path::Path) -> bool {
            self.asked.lock().unwrap().push(path.to_path_buf());
            path.starts_with(&self.dir) && path != self.dir
        }

        fn denies_everything_under(&self, _tool: &str, dir: &std::path::Path) -> bool {
            self.asked.lock().unwrap().push(dir.to_path_buf());
            dir.starts_with(&self.dir)
        }
    }

    /// Validates `input` like the executor does, then calls the tool.
    pub(crate) async fn call(
        tool: &dyn Tool,
        input: serde_json::Value,
        ctx: &ToolContext,
    ) -> ToolOutput {
        if let Err(message) = tool.validate(&input) {
            return ToolOutput::error(message);
        }
        tool.call(input, ctx).await
    }
}
