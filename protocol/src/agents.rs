//! Params and result of `agents/list`: the subagents a session in a directory can delegate to,
//! and the definition files that could not be used.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `agents/list`: the agents of a workspace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentsListParams {
    /// The workspace directory, absolute (as for `session/create`).
    pub cwd: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentsListResult {
    /// Built-ins first (a file of a built-in's name replaces it), then the others by name.
    pub agents: Vec<AgentInfo>,
    /// Definition files not used and why (bad frontmatter, no description, a name taken by a
    /// nearer file, another user's file, too big, too many).
    pub problems: Vec<AgentProblemInfo>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentInfo {
    pub name: String,
    pub description: String,
    pub source: AgentSource,
    /// The definition file (none for a built-in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Only these tools (absent: the parent's, minus the ones no subagent gets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// The model (absent: the parent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Only read-only tools.
    pub read_only: bool,
    /// Runs in the background unless the call says otherwise.
    pub background: bool,
    /// What of the file is not used (a key agentd does not read, such as `color` or a typo;
    /// a bad `mcpServers` item): the definition is used without it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Where an agent is defined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AgentSource {
    /// Part of the daemon (`general-purpose`, `explore`).
    BuiltIn,
    /// The workspace or a parent up to the git root (`.agents/agents/`, `.claude/agents/`).
    Project,
    /// The user's `$XDG_CONFIG_HOME/agentd/agents/`.
    User,
}

/// A definition file that could not be used.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentProblemInfo {
    pub path: String,
    pub reason: String,
}
