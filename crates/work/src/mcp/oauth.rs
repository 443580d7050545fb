//! OAuth 2.1 for streamable HTTP servers, as the MCP authorization spec describes: discovery
//! (`discovery`: the 401's challenge, RFC 9728 protected-resource metadata, RFC 8414 / OpenID
//! Connect authorization-server metadata), the authorization code flow with PKCE S256, dynamic
//! client registration when offered, the RFC 8707 `resource` (`flow`), the loopback redirect
//! (`loopback`) and the token files (`store`). [`Bearer`] is a connection's token: sent as
//! `Authorization: Bearer`, refreshed before it expires and after a 401, and a refused refresh
//! means a new login. Tokens are never logged and never in an error text.

use std::time::Duration;

mod discovery;
mod flow;
mod loopback;
pub(crate) mod store;

use super::McpOAuth;
use store::{StoredToken, TokenStore};

/// How long one request to an authorization server may take.
const OAUTH_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// A token expiring within this many seconds is refreshed before it is sent.
const REFRESH_AHEAD_SECS: u64 = 60;
/// The most bytes of metadata read.
const MAX_METADATA_BYTES: usize = 256 * 1024;

/// What a server that needs a login says, for `mcp list` and errors (clients word the way
/// to log in: `needsLogin` says it is needed).
pub(crate) fn needs_login_message(server: &str, why: &str) -> String {
    format!("{why}: log in to MCP server {server} again")
}

/// A connection's token: the stored one, refreshed when needed.
pub(crate) struct Bearer {
    server: String,
    store: TokenStore,
    http: reqwest::Client,
    token: tokio::sync::Mutex<StoredToken>,
}

impl Bearer {
    /// The token a login left for `server` at `url` (None: no login yet).
    pub(crate) async fn load(
        store: &TokenStore,
        http: &reqwest::Client,
        server: &str,
        url: &str,
    ) -> Result<Option<Self>, String> {
        let (loader, name, at) = (store.clone(), server.to_owned(), url.to_owned());
        let token = tokio::task::spawn_blocking(move || loader.load(&name, &at))
            .await
            .map_err(|error| format!("reading the token failed: {error}"))??;
        Ok(token.map(|token| Self {
            server: server.to_owned(),
            store: store.clone(),
            http: http.clone(),
            token: tokio::sync::Mutex::new(token),
        }))
    }

    /// The access token to send now, refreshed first if it expires soon. Err: why there is
    /// none and whether only a login helps.
    pub(crate) async fn current(&self) -> Result<String, BearerError> {
        let mut token = self.token.lock().await;
        if token.expires_within(REFRESH_AHEAD_SECS) && token.refresh_token.is_some() {
            self.refresh(&mut token).await?;
        }
        Ok(token.access_token.clone())
    }

    /// The server refused `sent` (a 401): a new token, refreshed unless another request
    /// refreshed it already.
    pub(crate) async fn refused(&self, sent: &str) -> Result<String, BearerError> {
        let mut token = self.token.lock().await;
        if token.access_token != sent {
            return Ok(token.access_token.clone());
        }
        self.refresh(&mut token).await?;
        Ok(token.access_token.clone())
    }

    async fn refresh(&self, token: &mut StoredToken) -> Result<(), BearerError> {
        match flow::refresh(&self.http, token).await {
            Ok(fresh) => {
                let (store, saved) = (self.store.clone(), fresh.clone());
                tokio::task::spawn_blocking(move || store.save(&saved))
                    .await
                    .map_err(|error| BearerError::Failed(error.to_string()))?
                    .map_err(BearerError::Failed)?;
                *token = fresh;
                tracing::info!(server = %self.server, "MCP server's OAuth token refreshed");
                Ok(())
            }
            Err(failure) if failure.refused => {
                let (store, server, url) =
                    (self.store.clone(), token.server.clone(), token.url.clone());
                let _ = tokio::task::spawn_blocking(move || store.delete(&server, &url)).await;
                tracing::warn!(server = %self.server, "MCP server's OAuth token cannot be refreshed: {}", failure.message);
                Err(BearerError::NeedsLogin(needs_login_message(
                    &self.server,
                    &format!("its login expired or was revoked ({})", failure.message),
                )))
            }
            Err(failure) => Err(BearerError::Failed(failure.message)),
        }
    }
}

/// Why a connection has no token to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BearerError {
    /// Only a new login helps (the message says how).
    NeedsLogin(String),
    /// The authorization server could not be asked now; a later attempt may work.
    Failed(String),
}

/// A login waiting for its redirect.
pub(crate) struct PendingLogin {
    loopback: loopback::Loopback,
    state: String,
    exchange: flow::Exchange,
    /// The URL the user opens.
    pub(crate) authorization_url: String,
    pub(crate) redirect_uri: String,
}

/// Starts a login to `server` at `url`: discovery, the loopback listener, the client
/// (`oauth.client_id`, else dynamic registration), the authorization URL.
pub(crate) async fn begin(
    http: &reqwest::Client,
    server: &str,
    url: &str,
    oauth: &McpOAuth,
) -> Result<PendingLogin, String> {
    let mut discovered = discovery::discover(http, url).await?;
    if !oauth.scopes.is_empty() {
        discovered.scope = Some(oauth.scopes.join(" "));
    }
    let loopback = loopback::Loopback::bind().await?;
    let redirect_uri = loopback.redirect_uri();
    let client = match (&oauth.client_id, &discovered.metadata.registration_endpoint) {
        (Some(id), _) => flow::Client {
            id: id.clone(),
            secret: None,
        },
        (None, Some(endpoint)) => {
            flow::register(http, endpoint, &redirect_uri, discovered.scope.as_deref()).await?
        }
        (None, None) => {
            return Err(format!(
                "the authorization server of {url} offers no dynamic client registration; register a client for http://127.0.0.1 there and set oauth.client_id in the entry of {server}"
            ));
        }
    };
    let state = flow::random_text();
    let verifier = flow::random_text();
    let authorization_url =
        flow::authorization_url(&discovered, &client, &redirect_uri, &state, &verifier)?;
    Ok(PendingLogin {
        loopback,
        state,
        exchange: flow::Exchange {
            server: server.to_owned(),
            url: url.to_owned(),
            client,
            token_endpoint: discovered.metadata.token_endpoint.clone(),
            resource: discovered.resource.clone(),
            redirect_uri: redirect_uri.clone(),
            verifier,
        },
        authorization_url,
        redirect_uri,
    })
}

impl PendingLogin {
    /// Waits for the redirect, exchanges its code and stores the token.
    pub(crate) async fn finish(
        self,
        http: &reqwest::Client,
        store: &TokenStore,
    ) -> Result<(), String> {
        let code = match self.loopback.wait(&self.state).await {
            loopback::Redirect::Code(code) => code,
            loopback::Redirect::Refused(why) => {
                return Err(format!("the authorization server refused the login: {why}"));
            }
        };
        let token = flow::exchange(http, &self.exchange, &code).await?;
        let store = store.clone();
        tokio::task::spawn_blocking(move || store.save(&token))
            .await
            .map_err(|error| format!("saving the token failed: {error}"))?
    }
}

/// GETs JSON from `url`, bounded in time and size; the error names the URL.
async fn get_json<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &reqwest::Url,
) -> Result<T, String> {
    let sent = http
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .send();
    let response = tokio::time::timeout(OAUTH_REQUEST_TIMEOUT, sent)
        .await
        .map_err(|_| format!("{url} did not answer in time"))?
        .map_err(|error| format!("cannot reach {url}: {}", words(&error)))?;
    if !response.status().is_success() {
        return Err(format!("{url} answered {}", response.status()));
    }
    let bytes = response
        .bytes()
        .await
        .map_err(|error| format!("reading {url} failed: {}", words(&error)))?;
    if bytes.len() > MAX_METADATA_BYTES {
        return Err(format!(
            "{url} answered more than {MAX_METADATA_BYTES} bytes"
        ));
    }
    serde_json::from_slice(&bytes)
        .map_err(|error| format!("{url} answered no usable metadata ({error})"))
}

/// A reqwest error in words: its innermost cause, without Rust type names.
fn words(error: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = error;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}
