//! A reload of config.toml meets the running servers: a user server whose definition changed
//! or went is superseded (`restartPending`), and restarted with its new definition (or
//! stopped) once no handle holds it.

use std::sync::Arc;

use super::{McpManager, server_key};
use crate::mcp::McpServerConfig;
use crate::mcp::server::{Server, Superseded};

impl McpManager {
    /// After config.toml was reloaded: the user's servers (`[mcp_servers.*]`, resolved, as
    /// `current` lists them) whose running definition changed or went are superseded: each
    /// is restarted with its new definition (or stopped) once no session uses it, and until
    /// then listed `restartPending`. A session takes the new definition at its next run.
    pub fn apply_user_servers(self: &Arc<Self>, current: &[McpServerConfig]) {
        let users_servers: Vec<Arc<Server>> = self
            .servers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .values()
            .filter(|server| matches!(server.config.source, crate::mcp::McpSource::User { .. }))
            .cloned()
            .collect();
        for server in users_servers {
            let now = current
                .iter()
                .find(|config| config.name == server.config.name && config.enabled);
            let superseded = match now {
                Some(config) if server_key(config, &server.key.project_root) == server.key => None,
                Some(config) => Some(Superseded::Changed(Box::new(config.clone()))),
                None => Some(Superseded::Removed),
            };
            let pending = superseded.is_some();
            let was_pending =
                std::mem::replace(&mut server.lock().superseded, superseded).is_some();
            if pending && !was_pending {
                tracing::info!(server = %server.config.name, "MCP server's definition changed in config.toml; it restarts once unused");
                self.retire_when_unused(server);
            }
        }
    }

    /// Watches a superseded `server` and retires it ([`McpManager::retire`]) once no handle
    /// holds it; ends when it is retired, no longer superseded, or stopped.
    fn retire_when_unused(self: &Arc<Self>, server: Arc<Server>) {
        let manager = Arc::downgrade(self);
        let mut users = server.users.subscribe();
        let stop = server.stop.clone();
        self.tasks.spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    unused = users.wait_for(|count| *count == 0) => {
                        if unused.is_err() {
                            return;
                        }
                    }
                }
                let Some(manager) = manager.upgrade() else {
                    return;
                };
                if manager.retire(&server) {
                    return;
                }
                // Acquired again meanwhile: wait until it is released.
                if users.wait_for(|count| *count > 0).await.is_err() {
                    return;
                }
            }
        });
    }

    /// Stops a superseded `server` that no handle holds, and starts its new definition (with
    /// no user: it stops after the idle time unless a session takes it). False: it is used
    /// again; true: done (or no longer superseded).
    fn retire(self: &Arc<Self>, server: &Arc<Server>) -> bool {
        let superseded = {
            let mut servers = self
                .servers
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if *server.users.borrow() > 0 {
                return false;
            }
            let Some(superseded) = server.lock().superseded.clone() else {
                return true;
            };
            if servers
                .get(&server.key)
                .is_some_and(|listed| Arc::ptr_eq(listed, server))
            {
                servers.remove(&server.key);
            }
            superseded
        };
        server.stop.cancel();
        if let Superseded::Changed(config) = superseded {
            tracing::info!(server = %config.name, "MCP server restarting with its new definition");
            drop(self.acquire(&config, &server.key.project_root));
        } else {
            tracing::info!(server = %server.config.name, "MCP server stopped: removed from config.toml");
        }
        true
    }

    /// Takes `server` out of the map (if it is the one listed under its key).
    pub(super) fn unlist(&self, server: &Arc<Server>) {
        let mut servers = self
            .servers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if servers
            .get(&server.key)
            .is_some_and(|listed| Arc::ptr_eq(listed, server))
        {
            servers.remove(&server.key);
        }
    }

    /// Stops every server: stdin closed, SIGTERM to its process group, SIGKILL after a grace.
    /// Servers acquired from now on never start.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        self.tasks.close();
        self.tasks.wait().await;
    }
}
