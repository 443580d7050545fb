//! The MCP servers a loaded session holds: resolved at each run's start (the user's
//! `[mcp_servers.*]`, the project's `.mcp.json` once trusted, the servers given to
//! `session/create`), one [`McpHandle`] per server kept while the session is loaded (so
//! servers stay shared and warm between runs), released when the session unloads or is
//! deleted (the actor, which owns this, ends), or when the server is no longer configured.

use std::path::PathBuf;
use std::sync::Arc;

use super::SessionDeps;
use crate::mcp::config::{McpEntries, servers_for};
use crate::mcp::{McpConfigProblem, McpHandle, McpServerConfig, McpServerSet};
use crate::store::SessionHeader;

/// The handles a session holds, in the order of its configuration (sorted by name).
#[derive(Default)]
pub(super) struct SessionMcp {
    held: Vec<Held>,
    /// Sends the held servers' status changes to the session's log (`mcpServerStatus`).
    status_events: Option<super::mcp_status::McpStatusRegistration>,
}

struct Held {
    config: McpServerConfig,
    project_root: PathBuf,
    handle: Arc<McpHandle>,
}

/// What a run starts with: the session's servers and what to warn about.
pub(super) struct RunServers {
    pub handles: Vec<Arc<McpHandle>>,
    /// Configuration problems and untrusted servers, announced once at the run's start.
    pub warnings: Vec<String>,
}

impl SessionMcp {
    /// Resolves the session's servers now (files read on the blocking pool), keeps the
    /// handles of servers still configured alike, acquires the new ones (they start in the
    /// background; the run waits for them at most the startup grace) and releases the rest.
    pub(super) async fn for_run(
        &mut self,
        header: &SessionHeader,
        deps: &SessionDeps,
        config: &crate::config::Config,
    ) -> anyhow::Result<RunServers> {
        let cwd = PathBuf::from(&header.cwd);
        let user = user_entries(config);
        let session = session_entries(header);
        let trust = Arc::clone(&deps.trust);
        let (set, project_root) = tokio::task::spawn_blocking(move || {
            let root = crate::trust::project_root(&cwd);
            let trusted = trust.is_trusted(&root);
            let env = |name: &str| std::env::var(name).ok();
            (servers_for(&cwd, &user, &session, trusted, &env), root)
        })
        .await?;
        let warnings = warnings_of(&set, &project_root);
        let mut previous = std::mem::take(&mut self.held);
        for config in set.servers {
            let kept = previous
                .iter()
                .position(|held| held.config == config && held.project_root == project_root);
            let held = match kept {
                Some(index) => previous.swap_remove(index),
                None => Held {
                    handle: Arc::new(deps.mcp.acquire(&config, &project_root)),
                    config,
                    project_root: project_root.clone(),
                },
            };
            self.held.push(held);
        }
        // `previous` now holds servers no longer configured: dropping them releases them.
        drop(previous);
        Ok(RunServers {
            handles: self
                .held
                .iter()
                .map(|held| Arc::clone(&held.handle))
                .collect(),
            warnings,
        })
    }
}

impl SessionMcp {
    /// From now on the status changes of the servers held now go to `log`.
    pub(super) fn register_status_events(
        &mut self,
        registry: &Arc<super::mcp_status::McpStatusRegistry>,
        log: &Arc<super::events::EventLog>,
    ) {
        let keys = self.held.iter().map(|held| held.handle.key().clone());
        match &self.status_events {
            Some(registration) => registration.set_keys(keys),
            None => self.status_events = Some(registry.register(log, keys)),
        }
    }
}

/// The user's `[mcp_servers.*]` entries of config.toml.
fn user_entries(config: &crate::config::Config) -> McpEntries {
    config.mcp.servers.clone()
}

/// The servers a client gave to `session/create`.
fn session_entries(header: &SessionHeader) -> McpEntries {
    let _ = header;
    McpEntries::default()
}

/// One warning per configuration problem, and one naming the servers of an untrusted project.
fn warnings_of(set: &McpServerSet, project_root: &std::path::Path) -> Vec<String> {
    let mut warnings: Vec<String> = set.problems.iter().map(problem_warning).collect();
    if !set.untrusted.is_empty() {
        let names: Vec<&str> = set
            .untrusted
            .iter()
            .map(|config| config.name.as_str())
            .collect();
        warnings.push(format!(
            "MCP servers of {root} not started, the project is not trusted: {}. Trust it to start them: `agentctl trust {root}` (method project/trust)",
            names.join(", "),
            root = project_root.display(),
        ));
    }
    warnings
}

fn problem_warning(problem: &McpConfigProblem) -> String {
    let place = match (&problem.file, &problem.server) {
        (Some(file), Some(server)) => format!("{}, server {server}", file.display()),
        (Some(file), None) => file.display().to_string(),
        (None, Some(server)) => format!("session/create mcpServers, server {server}"),
        (None, None) => "session/create mcpServers".to_owned(),
    };
    format!("MCP server entry not used ({place}): {}", problem.reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_name_the_file_the_server_and_how_to_trust() {
        let untrusted = McpServerConfig {
            name: "repo-tool".to_owned(),
            transport: crate::mcp::McpTransport::Stdio {
                command: "repo-tool".to_owned(),
                args: Vec::new(),
                env: std::collections::BTreeMap::new(),
                cwd: None,
            },
            enabled: true,
            startup_timeout: crate::mcp::DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: crate::mcp::DEFAULT_TOOL_TIMEOUT,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            source: crate::mcp::McpSource::Project {
                file: PathBuf::from("/p/.mcp.json"),
            },
        };
        let set = McpServerSet {
            untrusted: vec![untrusted],
            problems: vec![McpConfigProblem {
                file: Some(PathBuf::from("/p/.mcp.json")),
                server: Some("bad".to_owned()),
                reason: "no command and no url".to_owned(),
            }],
            ..McpServerSet::default()
        };
        assert_eq!(
            warnings_of(&set, std::path::Path::new("/p")),
            [
                "MCP server entry not used (/p/.mcp.json, server bad): no command and no url",
                "MCP servers of /p not started, the project is not trusted: repo-tool. Trust it to start them: `agentctl trust /p` (method project/trust)",
            ]
        );
    }
}
