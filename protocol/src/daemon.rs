//! Params and results of the connection and daemon methods: `initialize`, `daemon/status`,
//! `daemon/shutdown`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Who is talking: a client names itself in `initialize`, the daemon in its answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    pub name: String,
    pub version: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    pub client_info: Implementation,
    /// The protocol version the client speaks, e.g. "1.0".
    pub protocol_version: String,
    /// What the client does beyond reading; absent (older clients) means nothing.
    #[serde(default)]
    pub capabilities: ClientCapabilities,
}

/// What a client declares it does in `initialize`. Unknown fields are accepted (a newer client
/// may declare more than this daemon knows).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    /// The client answers approvals (`approval/respond`) of what it subscribes to. Only
    /// subscriptions of such clients count as someone who may answer: without any, a run
    /// decides an approval at once by its mode instead of waiting for the timeout.
    #[serde(default)]
    pub approvals: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    pub server_info: Implementation,
    pub protocol_version: String,
    pub capabilities: Capabilities,
}

/// What this daemon offers; clients check these instead of guessing from the version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// Method names the daemon serves.
    pub methods: Vec<String>,
    /// Notification method names the daemon may send.
    pub notifications: Vec<String>,
    /// Largest accepted line (one JSON-RPC message), in bytes.
    pub max_line_bytes: u64,
}

/// `daemon/status` takes no params; an empty object or array is accepted, and so are fields it
/// does not know (like every params type).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DaemonStatusParams {}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonStatusResult {
    pub version: String,
    pub protocol_version: String,
    pub pid: u32,
    /// When the daemon started (RFC 3339).
    pub started_at: String,
    pub uptime_secs: u64,
    pub socket_path: String,
    pub state_dir: String,
    pub config_path: String,
    /// The configuration problem, if the config file is unusable (file, line and reason).
    /// The daemon keeps serving; methods that need the configuration fail with this message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_error: Option<String>,
    pub counts: StatusCounts,
    /// Open client connections, this one included.
    pub connected_clients: u64,
    /// Panics since the daemon started. Each one became an error answer or a failed run and
    /// is logged with a backtrace in the daily log file; anything above 0 is a bug to report.
    #[serde(default)]
    pub panics: u64,
    /// What confines `run_shell`: `landlock abi N` and what is enforced (`, read-only
    /// .agents/.claude/skills`, `, network denied`), or `none: <why>`.
    #[serde(default)]
    pub sandbox: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusCounts {
    /// Sessions known to the daemon (persisted ones included).
    pub sessions: u64,
    /// Sessions loaded in memory now; idle ones are unloaded after `[sessions]
    /// idle_unload_secs` and load again on their next request.
    #[serde(default)]
    pub loaded_sessions: u64,
    /// Sessions with a run in progress.
    pub active_runs: u64,
    pub tasks: u64,
    /// MCP servers running and connected now (`ready`), each shared by the sessions that use
    /// it.
    pub mcp_servers: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DaemonShutdownParams {}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonShutdownResult {
    /// Always true: the daemon stops accepting, drains in-flight requests and exits.
    pub shutting_down: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn initialize(json: &str) -> InitializeParams {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn an_older_client_without_capabilities_declares_nothing() {
        let params = initialize(
            r#"{"clientInfo": {"name": "old", "version": "0"}, "protocolVersion": "1.0"}"#,
        );
        assert_eq!(params.capabilities, ClientCapabilities::default());
        assert!(!params.capabilities.approvals);
    }

    #[test]
    fn a_newer_client_may_declare_capabilities_this_daemon_does_not_know() {
        let params = initialize(
            r#"{"clientInfo": {"name": "new", "version": "9"}, "protocolVersion": "1.0",
                "capabilities": {"approvals": true, "somethingLater": {"x": 1}}}"#,
        );
        assert!(params.capabilities.approvals);
        let empty = initialize(
            r#"{"clientInfo": {"name": "new", "version": "9"}, "protocolVersion": "1.0",
                "capabilities": {}}"#,
        );
        assert!(!empty.capabilities.approvals);
    }
}
