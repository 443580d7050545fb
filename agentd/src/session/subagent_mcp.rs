//! The MCP servers of a child whose definition lists `mcpServers`: those servers instead of
//! its parent's. Named ones are looked up among what the session would have (the user's
//! config.toml, the project's trusted `.mcp.json`, the parent's `session/create` servers);
//! inline ones are resolved as the session's own. An inline server of a project definition
//! starts only while trust pins the content it was read from, expands only the variables
//! `[mcp] expand_env` lists, and runs confined as a project's `.mcp.json` server does: a
//! repository cannot start through a definition what it could not start through `.mcp.json`.
//! Frozen in the child's header at creation, checked against trust at each run.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use agentd_work::agents::{AgentDefinition, AgentSource};
use agentd_work::mcp::McpSource;
use agentd_work::mcp::config::{McpEntries, McpResolution};

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

    /// Narrows `resolution` (what the session would have in `cwd`) to these servers, the
    /// inline ones added (resolved with `trust` and `expand_env`); the warnings say what does
    /// not start and why. Blocking: may read the project's files.
    pub(crate) fn apply(
        &self,
        resolution: &mut McpResolution,
        cwd: &Path,
        trust: &agentd_policy::trust::TrustStore,
        expand_env: &[String],
    ) -> Vec<String> {
        let mut warnings = Vec::new();
        let set = &mut resolution.set;
        for name in &self.names {
            let known = set
                .servers
                .iter()
                .chain(&set.untrusted)
                .chain(&set.disabled)
                .any(|config| &config.name == name);
            if !known && !self.inline.contains_key(name) {
                warnings.push(format!(
                    "agent `{}` names the MCP server `{name}`, which is not configured here \
                     (config.toml's [mcp_servers], the project's .mcp.json or the session's \
                     mcpServers), so it does not start",
                    self.agent
                ));
            }
        }
        let named = |config: &agentd_work::mcp::McpServerConfig| self.names.contains(&config.name);
        set.servers.retain(named);
        set.untrusted.retain(named);
        set.disabled.retain(named);
        if self.inline.is_empty() {
            return warnings;
        }
        if let Err(why) = self.inline_allowed(&resolution.project) {
            let names: Vec<&str> = self.inline.keys().map(String::as_str).collect();
            warnings.push(format!(
                "the MCP servers agent `{}` defines ({}) do not start: {why}",
                self.agent,
                names.join(", ")
            ));
            return warnings;
        }
        let entries = McpEntries::from_session(&serde_json::Value::Object(self.inline.clone()));
        let from_project = self.project_file.is_some();
        // A project's definition expands only what a project's `.mcp.json` may.
        let env = |name: &str| {
            if from_project && !expand_env.iter().any(|allowed| allowed == name) {
                return None;
            }
            std::env::var(name).ok()
        };
        let inline = agentd_work::mcp::config::resolve_for(
            cwd,
            &McpEntries::default(),
            &entries,
            trust,
            expand_env,
            &env,
        );
        for problem in inline.set.problems.iter().filter(|p| p.file.is_none()) {
            warnings.push(format!(
                "agent `{}`'s mcpServers: {}{}",
                self.agent,
                problem
                    .server
                    .as_ref()
                    .map(|server| format!("server {server}: "))
                    .unwrap_or_default(),
                problem.reason
            ));
        }
        let defined = |config: &agentd_work::mcp::McpServerConfig| {
            config.source == McpSource::Session && self.inline.contains_key(&config.name)
        };
        for (mut config, enabled) in inline
            .set
            .servers
            .into_iter()
            .map(|config| (config, true))
            .chain(
                inline
                    .set
                    .disabled
                    .into_iter()
                    .map(|config| (config, false)),
            )
            .filter(|(config, _)| defined(config))
        {
            if let Some(file) = &self.project_file {
                // Confined and listed as the project's, as a `.mcp.json` server is.
                config.source = McpSource::Project { file: file.clone() };
            }
            set.servers.retain(|other| other.name != config.name);
            set.disabled.retain(|other| other.name != config.name);
            if enabled {
                set.servers.push(config);
            } else {
                set.disabled.push(config);
            }
        }
        set.servers.sort_by(|a, b| a.name.cmp(&b.name));
        warnings
    }

    /// Whether the inline servers may start: a user's always; a project's only while trust
    /// pins the content they were read from (Err: why not and how to trust it).
    fn inline_allowed(&self, project: &agentd_policy::trust::ProjectTrust) -> Result<(), String> {
        let Some(file) = &self.project_file else {
            return Ok(());
        };
        let verdict = match &self.digest {
            Some(digest) => project.verdict_of_digest(file, digest),
            None => agentd_policy::trust::FileTrust::New,
        };
        if verdict == agentd_policy::trust::FileTrust::Pinned {
            return Ok(());
        }
        Err(format!(
            "{}; {}",
            project.why_withheld(file, verdict),
            project.how_to_trust()
        ))
    }
}
