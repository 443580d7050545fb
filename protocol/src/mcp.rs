//! Params and results of the MCP server methods: `mcp/list` (the servers the daemon runs, and
//! with a `cwd` the ones configured there that do not run, with the configuration's problems)
//! and `mcp/restart`; the OAuth login of HTTP servers (`mcp/login`, `mcp/loginStatus`,
//! `mcp/logout`); and the `mcpServerStatus` event's status words.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `mcp/list`: every server the daemon runs; with `cwd`, also what is configured for a session
/// there (untrusted, disabled, not started yet) and the problems of that configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpListParams {
    /// A workspace directory, absolute (as for `session/create`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpListResult {
    /// Sorted by name, then project root.
    pub servers: Vec<McpServerListing>,
    /// Entries of the configuration for `cwd` that cannot be used (empty without `cwd`).
    pub problems: Vec<McpConfigProblem>,
}

/// One server of `mcp/list`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerListing {
    pub name: String,
    pub source: McpServerSource,
    /// The file of its entry (config.toml or `.mcp.json`); absent for a session's server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    pub transport: McpTransportKind,
    pub status: McpServerState,
    /// The project root it runs for; absent for a configured server that does not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_root: Option<String>,
    /// The process id of a running stdio server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Its tools' names (the server's own names), empty unless ready.
    pub tools: Vec<String>,
    /// Restarts since it started (or since the last `mcp/restart`).
    pub restarts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Its log file: a stdio server's stderr, and any server's log messages
    /// (`notifications/message`, since 1.3; HTTP servers have one since 1.3). It may not exist
    /// yet when the server has written nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_file: Option<String>,
    /// Sessions using it now.
    #[serde(default)]
    pub users: u32,
    /// config.toml was reloaded with another definition of it (or without it): it restarts
    /// with the new one (or stops) once no session uses it; a session takes the new one at its
    /// next run. Added in 1.3.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restart_pending: bool,
    /// Why not all its tools are offered to the model as it described them: more than the
    /// daemon's cap on tools per server, or descriptions cut to the cap on their length.
    /// Added in 1.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// Where a server entry came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpServerSource {
    /// `[mcp_servers.<name>]` in the user's config.toml.
    User,
    /// A project's `.mcp.json`.
    Project,
    /// Handed to `session/create {mcpServers}`.
    Session,
}

/// How the daemon reaches a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpTransportKind {
    Stdio,
    Http,
}

/// Where a server is: the five states of a server the daemon runs (also the `status` of
/// `mcpServerStatus` events), and two of configured servers that never start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpServerState {
    Starting,
    Ready,
    /// Start or restarts failed; stays so until `mcp/restart`.
    Failed,
    /// Exited or lost; a restart is scheduled.
    Restarting,
    Stopped,
    /// A project's server whose project is not trusted (`project/trust` starts it).
    Untrusted,
    /// `enabled = false` in its entry.
    Disabled,
    /// Configured for the `cwd`, not running (no session there uses it yet).
    Configured,
    /// An HTTP server that asks for an OAuth login (none yet, or its token was revoked or
    /// expired and cannot be refreshed): `agentctl mcp login NAME` (`mcp/login`). The
    /// `error` / `lastError` says so. Added in 1.3.
    NeedsLogin,
}

/// An entry of the configuration that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpConfigProblem {
    /// The file of the entry; absent for `session/create` params.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The server's name, when the entry got that far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    pub reason: String,
}

/// `mcp/restart`: restart a server now (also a `failed` one), resetting its restart count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpRestartParams {
    pub name: String,
    /// A directory of the project the server runs for; needed only when servers of that name
    /// run for several projects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpRestartResult {
    /// Always true: the server is starting again (`mcpServerStatus` events follow).
    pub restarted: bool,
}

/// `mcp/login`: start an OAuth login to an HTTP server. The daemon discovers its
/// authorization server, registers a client if it offers that (else the entry's
/// `oauth.client_id`), listens on a loopback port and answers with the URL the user opens; it
/// then waits (bounded) for the browser's redirect, stores the token and restarts the server's
/// connections. Added in 1.3.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpLoginParams {
    pub name: String,
    /// A directory of a project whose configuration names the server; without it, a server
    /// the daemon runs, else the user's config.toml.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpLoginResult {
    /// Names the login for `mcp/loginStatus`.
    pub login_id: String,
    /// The URL to open in a browser.
    pub authorization_url: String,
    /// Where the browser is sent back: a loopback port of the daemon.
    pub redirect_uri: String,
    /// How long the daemon waits for the redirect.
    pub timeout_secs: u64,
}

/// `mcp/loginStatus`: where a login is; while it is pending, the answer waits up to
/// `waitSecs` (at most 30) for it to finish. Added in 1.3.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpLoginStatusParams {
    pub login_id: String,
    #[serde(default)]
    pub wait_secs: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpLoginStatusResult {
    pub state: McpLoginState,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Where a login is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpLoginState {
    /// Waiting for the browser's redirect.
    Pending,
    /// The token is stored; the server's connections restart with it.
    Done,
    Failed,
}

/// `mcp/logout`: delete an HTTP server's OAuth token. Added in 1.3.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpLogoutParams {
    pub name: String,
    /// As for `mcp/login`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpLogoutResult {
    /// Whether there was a token to delete.
    pub deleted: bool,
}
