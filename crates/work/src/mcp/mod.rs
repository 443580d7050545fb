//! MCP servers the daemon owns: what a session is configured with (`config`: `.mcp.json`,
//! `[mcp_servers.*]` in config.toml, servers a client hands to `session/create`), the running
//! servers shared by every session that uses them (`manager`: one per [`ServerKey`], started in
//! the background, restarted after a crash, stopped when idle) and the one place that speaks
//! rmcp (`connection`), so rmcp's churn stays here. Sessions see a server through an
//! [`McpHandle`]: its status, its current tools, and calls.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub mod config;
mod connection;
mod limits;
pub mod log;
pub mod manager;
mod oauth;
mod server;
pub mod tools;

pub use manager::{McpHandle, McpLimits, McpManager, ServerConfinement};

/// Default of `startup_timeout_secs`: how long a server may take to answer `initialize`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default of `tool_timeout_secs`: how long one tool call may take.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);
/// Default idle period after which a server no session uses is stopped (`[mcp] idle_stop_secs`).
pub const DEFAULT_IDLE_STOP: Duration = Duration::from_secs(10 * 60);
/// Default grace a run waits for a starting server before its first model call
/// (`[mcp] startup_grace_secs`); a server ready later joins at the next model call.
pub const DEFAULT_STARTUP_GRACE: Duration = Duration::from_secs(5);

/// One configured server, resolved: `${VAR}` expanded, defaults applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServerConfig {
    /// The key in `mcpServers` / `[mcp_servers.<name>]`.
    pub name: String,
    pub transport: McpTransport,
    /// `enabled = false` keeps the entry listed but never started.
    pub enabled: bool,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// Only these tools are offered (None: all).
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never offered (applied after `enabled_tools`).
    pub disabled_tools: Vec<String>,
    /// `sampling = true` in the user's config.toml entry: the server may ask the session's
    /// model (`sampling/createMessage`, each request approved). Never from a project's
    /// `.mcp.json` or a client's entry.
    pub sampling: bool,
    /// Where the entry came from.
    pub source: McpSource,
}

/// How the daemon reaches a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Added to the safe base environment (never the daemon's API keys).
        env: BTreeMap<String, String>,
        /// Working directory; None: the project root.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        /// How `agentctl mcp login` logs in when the server asks for OAuth.
        oauth: McpOAuth,
    },
}

/// The `oauth` table of an HTTP server's entry: what the login cannot discover.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McpOAuth {
    /// A client registered with the authorization server for `http://127.0.0.1` redirects;
    /// None: dynamic client registration (RFC 7591), when the server offers it.
    pub client_id: Option<String>,
    /// The scopes to ask for; empty: the server's challenge or its metadata's.
    pub scopes: Vec<String>,
}

/// Where a server entry came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpSource {
    /// `[mcp_servers.<name>]` in the user's config.toml: always starts.
    User { file: PathBuf },
    /// A project's `.mcp.json`: starts only once the project is trusted.
    Project { file: PathBuf },
    /// Handed to `session/create {mcpServers}` by a client (an editor).
    Session,
}

/// An entry that could not be used: reported by `mcp/list` and a `warning` event, never fatal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpConfigProblem {
    /// The file of the entry (None: `session/create` params).
    pub file: Option<PathBuf>,
    /// The server's name, when the entry got that far.
    pub server: Option<String>,
    pub reason: String,
}

/// A project's `.mcp.json` whose servers do not start: its content is not the one trusted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WithheldMcpFile {
    pub(crate) file: PathBuf,
    pub(crate) verdict: agentd_policy::trust::FileTrust,
    /// The names of its entries.
    pub(crate) servers: Vec<String>,
}

/// The servers configured for a session's cwd.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McpServerSet {
    /// Servers to start (enabled ones of the user, the session, and a trusted project; the
    /// project wins a name clash with the user, the session wins over both), sorted by name.
    pub servers: Vec<McpServerConfig>,
    /// Entries of a project's `.mcp.json` whose content is not trusted: listed as `untrusted`,
    /// never started.
    pub untrusted: Vec<McpServerConfig>,
    /// The `.mcp.json` files those come from, with why.
    pub(crate) withheld: Vec<WithheldMcpFile>,
    /// Disabled entries (`enabled = false`): listed as `disabled`.
    pub disabled: Vec<McpServerConfig>,
    pub problems: Vec<McpConfigProblem>,
}

/// What identifies one running server: sessions whose key is equal share the process.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServerKey {
    pub name: String,
    /// The project root the server runs for (its default cwd).
    pub project_root: PathBuf,
    /// A digest of the resolved settings (the transport: command, args, env, cwd or url,
    /// headers; the tool filters and timeouts), so a changed configuration is a different
    /// server.
    pub config_digest: String,
}

/// Where a server is in its life; announced as `mcpServerStatus` events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpStatus {
    Starting,
    Ready {
        tools: usize,
    },
    /// Start or restarts failed; stays so until `mcp/restart`.
    Failed {
        error: String,
        /// The last lines the server wrote on stderr.
        stderr_tail: String,
    },
    /// Exited or lost; a restart is scheduled (attempt counts from 1).
    Restarting {
        attempt: u32,
        error: String,
    },
    Stopped,
    /// An HTTP server that asks for an OAuth login (none yet, or its token was refused and
    /// cannot be refreshed); stays so until `agentctl mcp login` (or `mcp/restart`).
    NeedsLogin {
        /// Why, saying to run `agentctl mcp login NAME`.
        message: String,
    },
}

/// One tool a server offers, as it described it.
#[derive(Clone, Debug, PartialEq)]
pub struct McpToolInfo {
    /// The server's own name for the tool.
    pub name: String,
    pub(crate) description: String,
    /// The input JSON schema, passed through.
    pub input_schema: serde_json::Value,
    /// The server's `readOnlyHint` annotation (false when absent).
    pub read_only: bool,
}

/// One prompt a server offers (`prompts/list`), run as the slash command
/// `mcp__<server>__<prompt>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpPromptInfo {
    pub name: String,
    pub description: String,
    /// Its arguments, in the server's order.
    pub arguments: Vec<McpPromptArgument>,
}

/// One argument of a prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpPromptArgument {
    pub name: String,
    pub required: bool,
}

/// The result of one tool call, in the server's terms.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpCallResult {
    pub content: Vec<McpContent>,
    /// `structuredContent`, when the server sent it.
    pub(crate) structured: Option<serde_json::Value>,
    /// The server's `isError`.
    pub is_error: bool,
}

/// One content block of a tool result.
#[derive(Clone, Debug, PartialEq)]
pub enum McpContent {
    Text(String),
    /// Base64 data as the server sent it.
    Image {
        mime_type: String,
        data: String,
    },
    /// A link to a resource (`resource_link`).
    ResourceLink {
        uri: String,
        name: Option<String>,
    },
    /// An embedded resource: its text, or a note for a binary one.
    Resource {
        uri: String,
        text: Option<String>,
    },
    /// Anything else (audio, a newer block type), described in words.
    Other(String),
}

/// A `notifications/progress` of a running call.
#[derive(Clone, Debug, PartialEq)]
pub struct McpProgress {
    pub progress: f64,
    pub total: Option<f64>,
    pub(crate) message: Option<String>,
}

/// Why a call did not produce a result.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum McpCallError {
    /// The server is not ready (starting, restarting, failed, stopped).
    #[error("MCP server {server} is not ready: {status}")]
    NotReady { server: String, status: String },
    /// The server exited or the connection broke during the call.
    #[error("MCP server {server} exited: {reason}")]
    Exited { server: String, reason: String },
    /// The call took longer than `tool_timeout_secs`; it was cancelled on the server.
    #[error("MCP tool {tool} of {server} timed out after {secs} s and was cancelled")]
    Timeout {
        server: String,
        tool: String,
        secs: u64,
    },
    /// The run was cancelled; the call was cancelled on the server.
    #[error("cancelled")]
    Cancelled,
    /// The server answered the call with a JSON-RPC error.
    #[error("MCP server {server} refused the call: {message}")]
    Refused { server: String, message: String },
    /// The result weighed more than `max_result_bytes`: it was dropped unread.
    #[error(
        "the result of MCP tool {tool} of {server} is {}over the limit of {limit} bytes per result and was dropped; ask for less (a narrower query, a range, a page)",
        bytes.map(|bytes| format!("{bytes} bytes, ")).unwrap_or_default()
    )]
    TooLarge {
        server: String,
        tool: String,
        /// Its size, when it was read to its end (stdio).
        bytes: Option<u64>,
        limit: u64,
    },
}

/// A change of one server's status, for the daemon stream and the sessions using it.
#[derive(Clone, Debug, PartialEq)]
pub struct McpStatusChange {
    pub key: ServerKey,
    pub status: McpStatus,
}
