//! Which MCP servers a session gets: `[mcp_servers.<name>]` of the user's config.toml, the
//! project's `.mcp.json` (from the cwd up to the git root; used only once the project is
//! trusted) and the servers a client hands to `session/create {mcpServers}`, in the Claude Code
//! / Cursor shape, with `${VAR}` and `${VAR:-default}` expanded.
//!
//! SKELETON: filled in by the MCP configuration work.

use std::collections::BTreeMap;
use std::path::Path;

use super::McpServerSet;

/// One entry as written, in `.mcp.json`, in config.toml or in `session/create` params.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct McpServerEntry {
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub cwd: Option<String>,
    pub url: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub enabled: Option<bool>,
    pub startup_timeout_secs: Option<u64>,
    pub tool_timeout_secs: Option<u64>,
    pub enabled_tools: Option<Vec<String>>,
    #[serde(default)]
    pub disabled_tools: Vec<String>,
}

/// The servers for a session in `cwd`: the user's entries (`user`, from config.toml), the
/// project's `.mcp.json` when `project_trusted`, and `session` (from `session/create`).
/// Blocking: reads files.
pub fn servers_for(
    cwd: &Path,
    user: &BTreeMap<String, McpServerEntry>,
    session: &BTreeMap<String, McpServerEntry>,
    project_trusted: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> McpServerSet {
    let _ = (cwd, user, session, project_trusted, env);
    McpServerSet::default()
}
