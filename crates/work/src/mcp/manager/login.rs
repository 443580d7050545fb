//! OAuth logins of HTTP servers (`mcp/login`, `mcp/logout`): a login runs in the daemon, which
//! owns the tokens and the servers. It discovers the authorization server, listens on a
//! loopback port for the redirect and hands back the URL for the user to open; a task of the
//! manager waits for the redirect (bounded by `McpLimits::login_timeout`), stores the token and
//! restarts the servers of that name and URL, which then connect with it. A client follows
//! the login by its id (`login_state`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::McpManager;
use crate::mcp::{McpServerConfig, McpTransport, oauth};

/// The most finished logins remembered for `login_state`.
const FINISHED_KEPT: usize = 32;

/// Where a login is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoginState {
    /// Waiting for the browser's redirect.
    Pending,
    /// The token is stored; the server's connections restart with it.
    Done,
    /// Why it failed (a refusal, a timeout, an exchange that failed).
    Failed(String),
}

/// A login that waits for the user.
#[derive(Clone, Debug)]
pub struct LoginStarted {
    pub login_id: String,
    /// The URL the user opens in a browser.
    pub authorization_url: String,
    /// Where the browser is sent back (a loopback port of the daemon).
    pub redirect_uri: String,
    /// How long the login waits for the redirect.
    pub timeout: Duration,
}

/// The logins the manager runs or ran, by id.
#[derive(Default)]
pub(crate) struct Logins {
    states: std::sync::Mutex<BTreeMap<String, watch::Sender<LoginState>>>,
}

impl McpManager {
    /// Starts a login to the HTTP server of `config`; the answer comes once the URL is known.
    pub async fn login(self: &Arc<Self>, config: &McpServerConfig) -> Result<LoginStarted, String> {
        let McpTransport::Http { url, oauth, .. } = &config.transport else {
            return Err(format!(
                "MCP server {} is a stdio server; only HTTP servers log in with OAuth",
                config.name
            ));
        };
        let http = self
            .http
            .clone()
            .ok_or("the HTTP client could not be built (see the daemon's log)")?;
        let pending = oauth::begin(&http, &config.name, url, oauth).await?;
        let login_id = format!("login_{}", uuid::Uuid::new_v4().simple());
        let started = LoginStarted {
            login_id: login_id.clone(),
            authorization_url: pending.authorization_url.clone(),
            redirect_uri: pending.redirect_uri.clone(),
            timeout: self.limits.login_timeout,
        };
        let (state, _) = watch::channel(LoginState::Pending);
        self.logins.remember(login_id, state.clone());
        let (manager, name, url) = (Arc::downgrade(self), config.name.clone(), url.clone());
        let (stop, timeout, store) = (
            self.stop.clone(),
            self.limits.login_timeout,
            self.oauth.clone(),
        );
        self.tasks.spawn(async move {
            let outcome = tokio::select! {
                finished = tokio::time::timeout(timeout, pending.finish(&http, &store)) => match finished {
                    Ok(Ok(())) => LoginState::Done,
                    Ok(Err(error)) => LoginState::Failed(error),
                    Err(_) => LoginState::Failed(format!(
                        "no answer came from the browser within {} s; run the login again",
                        timeout.as_secs()
                    )),
                },
                () = stop.cancelled() => LoginState::Failed("the daemon stopped".to_owned()),
            };
            match &outcome {
                LoginState::Done => {
                    tracing::info!(server = %name, "MCP server logged in");
                    if let Some(manager) = manager.upgrade() {
                        manager.restart_at(&name, &url);
                    }
                }
                LoginState::Failed(error) => {
                    tracing::warn!(server = %name, "MCP server's login failed: {error}");
                }
                LoginState::Pending => {}
            }
            state.send_replace(outcome);
        });
        Ok(started)
    }

    /// Where login `login_id` is, waiting up to `wait` while it is pending (None: no such
    /// login, or it finished long ago).
    pub async fn login_state(&self, login_id: &str, wait: Duration) -> Option<LoginState> {
        let mut state = self
            .logins
            .states
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(login_id)?
            .subscribe();
        let _ = tokio::time::timeout(
            wait,
            state.wait_for(|state| !matches!(state, LoginState::Pending)),
        )
        .await;
        let now = state.borrow().clone();
        Some(now)
    }

    /// Deletes the token of the HTTP server of `config` and restarts its connections (which
    /// then need a login); true when there was a token.
    pub async fn logout(self: &Arc<Self>, config: &McpServerConfig) -> Result<bool, String> {
        let McpTransport::Http { url, .. } = &config.transport else {
            return Err(format!(
                "MCP server {} is a stdio server; it has no OAuth login",
                config.name
            ));
        };
        let (store, name, at) = (self.oauth.clone(), config.name.clone(), url.clone());
        let deleted = tokio::task::spawn_blocking(move || store.delete(&name, &at))
            .await
            .map_err(|error| format!("deleting the token failed: {error}"))??;
        self.restart_at(&config.name, url);
        Ok(deleted)
    }

    /// Restarts every server named `name` at `url` (any project): they pick up the token.
    fn restart_at(&self, name: &str, url: &str) {
        let servers = self
            .servers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for server in servers.values() {
            let same_url =
                matches!(&server.config.transport, McpTransport::Http { url: at, .. } if at == url);
            if server.key.name == name && same_url {
                server.restart.notify_one();
            }
        }
    }
}

impl Logins {
    fn remember(&self, login_id: String, state: watch::Sender<LoginState>) {
        let mut states = self
            .states
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if states.len() >= FINISHED_KEPT {
            let finished: Vec<String> = states
                .iter()
                .filter(|(_, state)| !matches!(*state.borrow(), LoginState::Pending))
                .map(|(id, _)| id.clone())
                .collect();
            for id in finished {
                states.remove(&id);
            }
        }
        states.insert(login_id, state);
    }
}
