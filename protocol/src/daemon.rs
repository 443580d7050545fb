//! Params and results of the connection and daemon methods: `initialize`, `daemon/status`,
//! `daemon/shutdown`, `daemon/reload`.

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
    /// The client answers the daemon's requests (`extension/callTool`, `extension/runCommand`,
    /// `extension/event`) on this connection: it may call `extension/register`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub extensions: bool,
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
    /// The daemon takes `extension/register` and sends extensions requests on their
    /// connection.
    #[serde(default)]
    pub extensions: bool,
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
    /// Whether the workspace's files are checkpointed before runs and writing tool batches
    /// (`session/diff`, `session/rewind`): `on`, or `off: <why>` (no git, the config). Added
    /// in 1.3.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub checkpoints: String,
    /// Whether `configPath` existed and was read (false: the environment alone configures the
    /// daemon, or `configError` says why the file is unusable).
    #[serde(default)]
    pub config_loaded: bool,
    /// Every configured provider with its model and base URL (never a key), by name.
    #[serde(default)]
    pub providers: Vec<ProviderInfo>,
    /// The provider sessions get when they name none (absent: none, or several without a
    /// default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_provider: Option<String>,
    /// `env_hash` of the daemon's environment: a client compares it with the hash of its own to
    /// tell the user the daemon runs with other `OPENAI_*`/`ANTHROPIC_*`/`AGENTD_*` values
    /// (the values never leave the daemon).
    #[serde(default)]
    pub env_hash: String,
    /// When the configuration in use was loaded (RFC 3339): at start, or at the last reload
    /// that changed it. Added in 1.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_loaded_at: Option<String>,
    /// How `configPath` stands against the configuration in use. Added in 1.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_state: Option<ConfigFileState>,
    /// Settings the file changed that apply only when the daemon restarts (e.g. `sandbox`,
    /// `memory`). Added in 1.3.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs_restart: Vec<String>,
    /// `systemd` when the service manager started the daemon (`INVOCATION_ID` or
    /// `LISTEN_FDS` set at its start, and its cgroup is an `agentd…service` unit):
    /// `agentctl daemon restart` then asks it to restart the daemon. Added in 1.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_manager: Option<String>,
    /// The unit the service manager runs the daemon as (`agentd.service`). Added in 1.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_unit: Option<String>,
    /// The executable the daemon runs from, as it was at its start. Added in 1.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable: Option<String>,
    /// When the daemon makes room in a model's context window (`[context]`). Added in 1.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_limits: Option<ContextLimits>,
}

/// The `[context]` limits, in percent of the model's context window, checked before each model
/// call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextLimits {
    /// Over this, old tool results are cleared.
    pub soft_limit_percent: u8,
    /// Over this, the older history is summarised (compaction).
    pub hard_limit_percent: u8,
}

/// How config.toml stands against the configuration in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ConfigFileState {
    /// The file is what is loaded.
    Current,
    /// The file differs from what is loaded: not read yet (the watch reads it within about
    /// two seconds), or it changes settings that apply only at a restart (`needsRestart`).
    Changed,
    /// The file does not load (`configError` says where and why); the last valid
    /// configuration stays in use.
    Invalid,
}

/// `daemon/reload` takes no params: it reads config.toml again now.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DaemonReloadParams {}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonReloadResult {
    pub outcome: ConfigReloadOutcome,
    /// Why the file does not load (`invalid`): file:line:col and the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Settings the file changed that apply only when the daemon restarts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs_restart: Vec<String>,
    /// When the configuration in use now was loaded (RFC 3339).
    pub config_loaded_at: String,
}

/// What a reload did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ConfigReloadOutcome {
    /// A new configuration is in use: new runs and new MCP starts see it.
    Reloaded,
    /// The file holds what is already in use.
    Unchanged,
    /// The file does not load; the previous configuration stays in use.
    Invalid,
}

/// A configured LLM provider as `daemon/status` shows it: never its key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderInfo {
    pub name: String,
    /// `openai` (chat completions, OpenAI-compatible) or `anthropic` (messages).
    pub kind: String,
    /// The model sessions of this provider use unless they name another.
    pub model: String,
    pub base_url: String,
    /// The variable the key is read from, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Whether a key is there (false with `apiKeyEnv`: sessions of it are refused).
    pub has_key: bool,
}

/// Whether an environment variable shapes what the daemon does, so that a daemon started with
/// another value behaves differently: `OPENAI_*`, `ANTHROPIC_*` and `AGENTD_*`, except the ones
/// only clients or tests read (`AGENTD_BIN`, `AGENTD_SOCKET`, the tool-process marker
/// `AGENTD_PROCESS`, `AGENTD_TEST_*`).
pub fn is_daemon_env_var(name: &str) -> bool {
    let relevant = ["OPENAI_", "ANTHROPIC_", "AGENTD_"]
        .iter()
        .any(|prefix| name.starts_with(prefix));
    let client_only = matches!(name, "AGENTD_BIN" | "AGENTD_SOCKET" | "AGENTD_PROCESS")
        || name.starts_with("AGENTD_TEST_");
    relevant && !client_only
}

/// A hash of the variables of `vars` that `is_daemon_env_var` keeps (order does not matter):
/// 16 hex digits of FNV-1a over the sorted `name=value` pairs. Only this hash is sent, never a
/// value; empty values count as unset.
pub fn env_hash<N: AsRef<str>, V: AsRef<str>>(vars: impl IntoIterator<Item = (N, V)>) -> String {
    let mut pairs: Vec<(String, String)> = vars
        .into_iter()
        .filter(|(name, value)| is_daemon_env_var(name.as_ref()) && !value.as_ref().is_empty())
        .map(|(name, value)| (name.as_ref().to_owned(), value.as_ref().to_owned()))
        .collect();
    pairs.sort();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, value) in &pairs {
        for byte in name.bytes().chain([b'=']).chain(value.bytes()).chain([0]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
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
    fn the_env_hash_sees_only_daemon_variables_in_any_order() {
        let base = [
            ("OPENAI_API_KEY", "sk-1"),
            ("AGENTD_MODEL", "m"),
            ("HOME", "/h"),
        ];
        let hash = env_hash(base);
        assert_eq!(hash.len(), 16);
        let reordered = [
            ("HOME", "/other"),
            ("AGENTD_MODEL", "m"),
            ("OPENAI_API_KEY", "sk-1"),
        ];
        assert_eq!(
            env_hash(reordered),
            hash,
            "order and other variables do not count"
        );
        let with_client_only = [
            ("OPENAI_API_KEY", "sk-1"),
            ("AGENTD_MODEL", "m"),
            ("AGENTD_BIN", "/x/agentd"),
            ("AGENTD_SOCKET", "/s"),
            ("AGENTD_TEST_PANIC_TOOL", "t"),
            ("AGENTD_LOG", ""),
        ];
        assert_eq!(env_hash(with_client_only), hash);
        assert_ne!(
            env_hash([("OPENAI_API_KEY", "sk-2"), ("AGENTD_MODEL", "m")]),
            hash
        );
        assert_ne!(env_hash([("OPENAI_API_KEY", "sk-1")]), hash);
        assert!(!hash.contains("sk-1"));
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
