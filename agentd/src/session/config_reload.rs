//! config.toml reloaded under a running daemon: the file watch (a poll, see `config::live`),
//! and what a reload does beyond swapping the configuration: the user's MCP servers whose
//! definition changed or went are restarted or stopped once unused
//! (`McpManager::apply_user_servers`), and the outcome goes out on the daemon stream
//! (`configReloaded`, `configInvalid`). Runs in progress keep the snapshot they started with.

use std::sync::Arc;

use protocol::event::Event;

use super::SessionManager;
use crate::config::live::{POLL_INTERVAL, Reload, ReloadOutcome};

/// What asked for a reload (the events' `trigger`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReloadTrigger {
    /// The file watch saw the file change.
    Watch,
    /// SIGHUP.
    Signal,
    /// `daemon/reload` (or `mcp/restart`, which reads a changed file first).
    Request,
}

impl ReloadTrigger {
    fn as_str(self) -> &'static str {
        match self {
            ReloadTrigger::Watch => "watch",
            ReloadTrigger::Signal => "signal",
            ReloadTrigger::Request => "request",
        }
    }
}

impl SessionManager {
    /// Reads config.toml again, applies a new configuration to the MCP servers, and says what
    /// happened on the daemon stream and in the daemon log.
    pub async fn reload_config(&self, trigger: ReloadTrigger) -> Reload {
        let reload = self.deps.config.reload().await;
        let path = self.deps.config.path().display().to_string();
        let trigger = trigger.as_str();
        let event = match reload.outcome {
            ReloadOutcome::Reloaded => {
                tracing::info!(
                    trigger,
                    needs_restart = ?reload.needs_restart,
                    "configuration reloaded from {path}"
                );
                if let Some(current) = &reload.current {
                    self.apply_mcp_servers(current).await;
                }
                Some(Event::ConfigReloaded {
                    path,
                    trigger: trigger.to_owned(),
                    needs_restart: reload.needs_restart.clone(),
                })
            }
            ReloadOutcome::Unchanged if reload.recovered => {
                tracing::info!(trigger, "{path} is back to the configuration in use");
                Some(Event::ConfigReloaded {
                    path,
                    trigger: trigger.to_owned(),
                    needs_restart: reload.needs_restart.clone(),
                })
            }
            ReloadOutcome::Unchanged => None,
            ReloadOutcome::Invalid => {
                let error = reload.error.clone().unwrap_or_default();
                tracing::error!(
                    trigger,
                    "configuration not reloaded, the previous one stays in use: {error}"
                );
                Some(Event::ConfigInvalid {
                    path,
                    trigger: trigger.to_owned(),
                    error,
                })
            }
        };
        if let Some(event) = event {
            match super::change_forward::daemon_event(event) {
                Ok(published) => {
                    let _ = self.daemon.events.send(Arc::new(published));
                }
                Err(err) => tracing::warn!("cannot encode a configuration event: {err:#}"),
            }
        }
        reload
    }

    /// Starts the watch of config.toml: owned by the manager's tracker, stopped with it.
    pub fn start_config_watch(self: &Arc<Self>) {
        let manager = Arc::downgrade(self);
        let stop = self.evictor_stop.clone();
        self.tasks.spawn(async move {
            let mut ticks = tokio::time::interval(POLL_INTERVAL);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut previous = None;
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = ticks.tick() => {}
                }
                let Some(manager) = manager.upgrade() else {
                    return;
                };
                if manager.deps.config.poll(&mut previous).await {
                    manager.reload_config(ReloadTrigger::Watch).await;
                }
            }
        });
    }

    /// The user's servers of `config`, resolved off the runtime, to the MCP manager.
    async fn apply_mcp_servers(&self, config: &crate::config::Config) {
        let user = config.mcp.servers.clone();
        let resolved = tokio::task::spawn_blocking(move || {
            let env = |name: &str| std::env::var(name).ok();
            agentd_work::mcp::config::resolve_user(&user, &env)
        })
        .await;
        match resolved {
            Ok(servers) => self.deps.mcp.apply_user_servers(&servers),
            Err(err) => tracing::error!("cannot resolve the reloaded MCP servers: {err}"),
        }
    }
}
