//! The MCP servers a loaded session holds: resolved at each run's start (the user's
//! `[mcp_servers.*]`, the project's `.mcp.json` once trusted, the servers given to
//! `session/create`; for a child whose definition lists `mcpServers`, those instead,
//! `subagent_mcp`), one [`McpHandle`] per server kept while the session is loaded (so
//! servers stay shared and warm between runs), released when the session unloads or is
//! deleted (the actor, which owns this, ends), or when the server is no longer configured.

use std::path::PathBuf;
use std::sync::Arc;

use super::SessionDeps;
use crate::store::SessionHeader;
use agentd_work::mcp::config::resolve_for;
use agentd_work::mcp::{McpHandle, McpServerConfig};

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
        let user = config.mcp.servers.clone();
        let expand_env = config.mcp.expand_env.clone();
        let session = header.mcp_servers();
        let child = header.child_mcp.clone();
        let trust = Arc::clone(&deps.trust);
        let (resolution, warnings) = tokio::task::spawn_blocking(move || {
            let env = |name: &str| std::env::var(name).ok();
            let mut resolution = resolve_for(&cwd, &user, &session, &trust, &expand_env, &env);
            let mut warnings = resolution.warnings();
            // A child whose definition lists `mcpServers` has those instead.
            if let Some(child) = &child {
                warnings.extend(super::subagent::narrow_mcp_servers(
                    child,
                    &mut resolution,
                    &cwd,
                    &trust,
                    &expand_env,
                ));
            }
            (resolution, warnings)
        })
        .await?;
        let project_root = resolution.project.root;
        let set = resolution.set;
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
