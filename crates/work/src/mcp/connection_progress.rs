//! Our side of an MCP session (`Handler`): progress notifications routed to the call that
//! asked for them, by progress token (kept a while when they come before the call's route),
//! tool-list changes reported to the connection's supervisor, and the server's log messages
//! (`notifications/message`) recorded in its log, `roots/list` answered (`roots`), and the
//! server's questions and sampling requests handed to the call in flight (`requests`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use rmcp::model::{ClientConfig, Implementation, ProgressNotificationParam, ProgressToken};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::mpsc;

use crate::mcp::McpProgress;
use crate::mcp::log::ServerLog;

/// Where progress notifications of running calls go.
pub(super) type ProgressRoutes = Arc<Mutex<ProgressTable>>;

/// Progress notifications by progress token.
#[derive(Default)]
pub(super) struct ProgressTable {
    routes: HashMap<ProgressToken, mpsc::Sender<McpProgress>>,
    /// Notifications that came before their call registered its route (rmcp sends the request
    /// before it hands back the token): kept until the route comes, the oldest dropped past
    /// [`MAX_EARLY_PROGRESS`].
    early: VecDeque<(ProgressToken, McpProgress)>,
}

impl ProgressTable {
    /// To the call's channel (dropped when it is full), or kept for a route still to come.
    fn deliver(&mut self, token: ProgressToken, progress: McpProgress) {
        match self.routes.get(&token) {
            Some(sender) => {
                let _ = sender.try_send(progress);
            }
            None => {
                if self.early.len() >= MAX_EARLY_PROGRESS {
                    self.early.pop_front();
                }
                self.early.push_back((token, progress));
            }
        }
    }
}

/// Bound of [`ProgressTable::early`].
const MAX_EARLY_PROGRESS: usize = 32;

/// A call's entry in the progress routes, removed when the call ends.
pub(super) struct ProgressRoute {
    routes: ProgressRoutes,
    token: ProgressToken,
}

impl ProgressRoute {
    pub(super) fn new(
        routes: &ProgressRoutes,
        token: ProgressToken,
        sender: mpsc::Sender<McpProgress>,
    ) -> Self {
        let mut table = routes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let early = std::mem::take(&mut table.early);
        for (early_token, progress) in early {
            if early_token == token {
                let _ = sender.try_send(progress);
            } else {
                table.early.push_back((early_token, progress));
            }
        }
        table.routes.insert(token.clone(), sender);
        drop(table);
        Self {
            routes: routes.clone(),
            token,
        }
    }
}

impl Drop for ProgressRoute {
    fn drop(&mut self) {
        let mut table = self
            .routes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        table.routes.remove(&self.token);
        table.early.retain(|(token, _)| *token != self.token);
    }
}

/// Our side of the MCP session: routes progress, reports tool-list changes.
pub(super) struct Handler {
    pub(super) progress: ProgressRoutes,
    pub(super) tools_changed: mpsc::Sender<()>,
    /// Where `notifications/message` goes (`mcp logs` reads it).
    pub(super) log: Arc<ServerLog>,
    /// What `roots/list` answers (`connection_roots`).
    pub(super) roots: super::roots::Roots,
    /// The server's name, for the questions it asks.
    pub(super) server: String,
    /// Where `elicitation/create` and `sampling/createMessage` go (`connection_requests`).
    pub(super) askers: super::requests::Askers,
    /// `sampling = true` in the user's config: sampling is offered and served.
    pub(super) sampling: bool,
}

impl ClientHandler for Handler {
    // Roots are deprecated by the newest spec (SEP-2577); servers still ask for them.
    #[allow(deprecated)]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        Ok(self.roots.list())
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        super::requests::elicit(&self.server, &self.askers, request, context).await
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        super::requests::sample(&self.server, self.sampling, &self.askers, params, context).await
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let progress = McpProgress {
            progress: params.progress,
            total: params.total,
            message: params.message,
        };
        self.progress
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .deliver(params.progress_token, progress);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.tools_changed.try_send(());
    }

    // The logging capability is deprecated by the newest spec; servers still use it.
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let text = match &params.data {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let level = serde_json::to_value(params.level)
            .ok()
            .and_then(|level| level.as_str().map(str::to_owned))
            .unwrap_or_else(|| "info".to_owned());
        self.log
            .server_message(&level, params.logger.as_deref(), &text)
            .await;
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            super::roots::capabilities(self.sampling),
            Implementation::new("agentd", env!("CARGO_PKG_VERSION")),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    fn step(progress: f64) -> McpProgress {
        McpProgress {
            progress,
            total: None,
            message: None,
        }
    }

    #[test]
    fn progress_that_comes_before_its_route_is_delivered_when_the_route_comes() {
        let routes = ProgressRoutes::default();
        let token = ProgressToken(NumberOrString::Number(7));
        let other = ProgressToken(NumberOrString::Number(8));
        routes.lock().unwrap().deliver(token.clone(), step(1.0));
        routes.lock().unwrap().deliver(other.clone(), step(9.0));
        let (sender, mut receiver) = mpsc::channel(4);
        let route = ProgressRoute::new(&routes, token.clone(), sender);
        routes.lock().unwrap().deliver(token.clone(), step(2.0));
        assert_eq!(receiver.try_recv().unwrap(), step(1.0));
        assert_eq!(receiver.try_recv().unwrap(), step(2.0));
        assert!(receiver.try_recv().is_err());
        drop(route);
        let table = routes.lock().unwrap();
        assert!(table.routes.is_empty());
        assert_eq!(table.early.len(), 1, "another call's early progress stays");
    }

    #[test]
    fn early_progress_is_bounded() {
        let mut table = ProgressTable::default();
        for n in 0..(MAX_EARLY_PROGRESS + 10) {
            let token = ProgressToken(NumberOrString::Number(n as i64));
            table.deliver(token, step(1.0));
        }
        assert_eq!(table.early.len(), MAX_EARLY_PROGRESS);
    }
}
