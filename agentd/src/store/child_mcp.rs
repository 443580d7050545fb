//! A session run as an agent whose definition lists `mcpServers`: those servers, as the
//! definition said when the session was created (frozen in its header, like its tool filter).
//! `session::subagent_mcp` narrows a run's servers to them.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use agentd_work::agents::{AgentDefinition, AgentSource};

/// A child's `mcpServers`, as its definition said when the child was created.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildMcpServers {
    /// The definition's name, for warnings.
    pub agent: String,
    /// Servers named, among the session's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// Servers defined in the definition (the `.mcp.json` entry shape, by name).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub inline: serde_json::Map<String, serde_json::Value>,
    /// A project's definition: its file and the trust digest of the content read; its inline
    /// servers start only while trust pins that content. None: the user's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_file: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

impl ChildMcpServers {
    /// What a child run as `definition` keeps (None: it lists no `mcpServers`, so the child
    /// has its parent's servers).
    pub fn of(definition: &AgentDefinition) -> Option<Self> {
        let servers = definition.mcp_servers.as_ref()?;
        let project_file = match &definition.source {
            AgentSource::Project(path) => Some(path.clone()),
            AgentSource::BuiltIn | AgentSource::User(_) => None,
        };
        Some(Self {
            agent: definition.name.clone(),
            names: servers.names.clone(),
            inline: servers.inline.clone(),
            project_file,
            digest: definition.hooks_digest.clone(),
        })
    }
}
