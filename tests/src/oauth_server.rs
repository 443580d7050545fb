//! A local OAuth 2.1 authorization server and a protected streamable HTTP MCP server on one
//! port, for the login tests: protected-resource metadata (RFC 9728) at the path-inserted
//! well-known URI, authorization-server metadata (RFC 8414) for an issuer with a path, dynamic
//! client registration (RFC 7591, can be turned off), an authorize endpoint that approves at
//! once (302 to the redirect with the code and state), a token endpoint that checks PKCE S256,
//! the redirect URI and the `resource`, and rotates refresh tokens; and `/mcp`, which answers
//! `initialize`, `tools/list` and `tools/call` of one tool (`whoami`) only with a live token,
//! else a 401 with a `WWW-Authenticate: Bearer resource_metadata=…` challenge. Tests revoke
//! every token, record what came, and shorten the tokens' life.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use sha2::Digest as _;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// How the server behaves.
#[derive(Clone, Debug)]
pub struct OAuthOptions {
    /// `expires_in` of access tokens.
    pub access_ttl: Duration,
    /// Whether it offers dynamic client registration.
    pub registration: bool,
}

impl Default for OAuthOptions {
    fn default() -> Self {
        Self {
            access_ttl: Duration::from_secs(3600),
            registration: true,
        }
    }
}

/// The client id the server knows without a registration.
pub const PRESET_CLIENT: &str = "preset-client";

/// What the server saw and holds.
#[derive(Default)]
pub struct OAuthRecord {
    /// Access tokens issued, with their expiry.
    access: HashMap<String, Instant>,
    refresh: HashSet<String>,
    clients: HashSet<String>,
    /// code → (client, redirect, challenge, resource)
    codes: HashMap<String, (String, String, String, String)>,
    /// Grants the token endpoint served, in order (`authorization_code`, `refresh_token`).
    pub grants: Vec<String>,
    /// The access tokens issued, in order.
    pub issued: Vec<String>,
    /// The query of each authorize request.
    pub authorize_queries: Vec<BTreeMap<String, String>>,
    /// The bearer of each `/mcp` request with a valid one (tokens seen by the MCP server).
    pub tokens_used: Vec<String>,
    /// `tools/call`s answered.
    pub calls: usize,
    next: u64,
}

struct Shared {
    port: u16,
    options: OAuthOptions,
    record: Mutex<OAuthRecord>,
}

/// The running server; stops when dropped.
pub struct OAuthServer {
    pub port: u16,
    shared: Arc<Shared>,
    _accept: tokio::task::JoinHandle<()>,
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        self._accept.abort();
    }
}

impl OAuthServer {
    pub async fn start(options: OAuthOptions) -> OAuthServer {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let shared = Arc::new(Shared {
            port,
            options,
            record: Mutex::new(OAuthRecord::default()),
        });
        shared.lock().clients.insert(PRESET_CLIENT.to_owned());
        let accept = tokio::spawn(accept_loop(listener, shared.clone()));
        OAuthServer {
            port,
            shared,
            _accept: accept,
        }
    }

    /// The MCP server's URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    pub fn record(&self) -> MutexGuard<'_, OAuthRecord> {
        self.shared.lock()
    }

    /// Ends every access token now; refresh tokens stay good (a server-side expiry).
    pub fn expire_access_tokens(&self) {
        self.shared.lock().access.clear();
    }

    /// Revokes every access and refresh token (a user removing the app's access).
    pub fn revoke_all(&self) {
        let mut record = self.shared.lock();
        record.access.clear();
        record.refresh.clear();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, OAuthRecord> {
        self.record
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let shared = shared.clone();
                connections.spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let shared = shared.clone();
                        async move { Ok::<_, Infallible>(handle(&shared, request).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        }
    }
}

type Body = Full<Bytes>;

fn respond(status: StatusCode, content_type: &str, body: String) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)))
        .expect("response")
}

fn json_response(status: StatusCode, value: Value) -> Response<Body> {
    respond(status, "application/json", value.to_string())
}

fn form(text: &str) -> BTreeMap<String, String> {
    form_urlencoded::parse(text.as_bytes())
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect()
}

async fn handle(shared: &Shared, request: Request<Incoming>) -> Response<Body> {
    let base = shared.base();
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let query = form(request.uri().query().unwrap_or(""));
    let bearer = request
        .headers()
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::to_owned);
    let body = request
        .into_body()
        .collect()
        .await
        .map(|collected| collected.to_bytes())
        .unwrap_or_default();
    let body = String::from_utf8_lossy(&body).into_owned();
    match (method, path.as_str()) {
        (Method::GET, "/.well-known/oauth-protected-resource/mcp") => json_response(
            StatusCode::OK,
            json!({
                "resource": format!("{base}/mcp"),
                "authorization_servers": [format!("{base}/auth")],
                "scopes_supported": ["tools"],
            }),
        ),
        (Method::GET, "/.well-known/oauth-authorization-server/auth") => {
            let mut metadata = json!({
                "issuer": format!("{base}/auth"),
                "authorization_endpoint": format!("{base}/auth/authorize"),
                "token_endpoint": format!("{base}/auth/token"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
            });
            if shared.options.registration {
                metadata["registration_endpoint"] = format!("{base}/auth/register").into();
            }
            json_response(StatusCode::OK, metadata)
        }
        (Method::POST, "/auth/register") if shared.options.registration => {
            let asked: Value = serde_json::from_str(&body).unwrap_or_default();
            let mut record = shared.lock();
            record.next += 1;
            let id = format!("dyn-client-{}", record.next);
            record.clients.insert(id.clone());
            json_response(
                StatusCode::CREATED,
                json!({"client_id": id, "redirect_uris": asked["redirect_uris"], "token_endpoint_auth_method": "none"}),
            )
        }
        (Method::GET, "/auth/authorize") => authorize(shared, query),
        (Method::POST, "/auth/token") => token(shared, form(&body)),
        (Method::POST, "/mcp") => {
            let live = bearer.as_ref().is_some_and(|token| {
                shared
                    .lock()
                    .access
                    .get(token)
                    .is_some_and(|expires| *expires > Instant::now())
            });
            if !live {
                let error = if bearer.is_some() {
                    ", error=\"invalid_token\""
                } else {
                    ""
                };
                return Response::builder()
                    .status(StatusCode::UNAUTHORIZED)
                    .header(
                        "www-authenticate",
                        format!(
                            "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\", scope=\"tools\"{error}"
                        ),
                    )
                    .body(Full::new(Bytes::new()))
                    .expect("response");
            }
            if let Some(token) = bearer {
                shared.lock().tokens_used.push(token);
            }
            mcp(shared, &body)
        }
        (Method::GET, "/mcp") => {
            respond(StatusCode::METHOD_NOT_ALLOWED, "text/plain", String::new())
        }
        (Method::DELETE, "/mcp") => respond(StatusCode::OK, "text/plain", String::new()),
        _ => respond(StatusCode::NOT_FOUND, "text/plain", "not found".into()),
    }
}

fn authorize(shared: &Shared, query: BTreeMap<String, String>) -> Response<Body> {
    let base = shared.base();
    let mut record = shared.lock();
    record.authorize_queries.push(query.clone());
    let get = |key: &str| query.get(key).cloned().unwrap_or_default();
    let known = record.clients.contains(&get("client_id"));
    if !known
        || get("response_type") != "code"
        || get("code_challenge_method") != "S256"
        || get("resource") != format!("{base}/mcp")
    {
        return respond(
            StatusCode::BAD_REQUEST,
            "text/plain",
            format!("bad authorize request: {query:?}"),
        );
    }
    record.next += 1;
    let code = format!("code-{}", record.next);
    record.codes.insert(
        code.clone(),
        (
            get("client_id"),
            get("redirect_uri"),
            get("code_challenge"),
            get("resource"),
        ),
    );
    let mut location = reqwest::Url::parse(&get("redirect_uri")).expect("redirect uri");
    location
        .query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &get("state"));
    Response::builder()
        .status(StatusCode::FOUND)
        .header("location", location.to_string())
        .body(Full::new(Bytes::new()))
        .expect("response")
}

fn token(shared: &Shared, form: BTreeMap<String, String>) -> Response<Body> {
    let base = shared.base();
    let get = |key: &str| form.get(key).cloned().unwrap_or_default();
    let refused = |error: &str| json_response(StatusCode::BAD_REQUEST, json!({"error": error}));
    let mut record = shared.lock();
    let grant = get("grant_type");
    record.grants.push(grant.clone());
    if get("resource") != format!("{base}/mcp") {
        return refused("invalid_target");
    }
    match grant.as_str() {
        "authorization_code" => {
            let Some((client, redirect, challenge, _)) = record.codes.remove(&get("code")) else {
                return refused("invalid_grant");
            };
            let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(sha2::Sha256::digest(get("code_verifier")));
            if client != get("client_id")
                || redirect != get("redirect_uri")
                || computed != challenge
            {
                return refused("invalid_grant");
            }
        }
        "refresh_token" => {
            if !record.refresh.remove(&get("refresh_token")) {
                return refused("invalid_grant");
            }
        }
        _ => return refused("unsupported_grant_type"),
    }
    record.next += 1;
    let access = format!("access-secret-{}", record.next);
    let refresh = format!("refresh-secret-{}", record.next);
    let ttl = shared.options.access_ttl;
    record.access.insert(access.clone(), Instant::now() + ttl);
    record.issued.push(access.clone());
    record.refresh.insert(refresh.clone());
    json_response(
        StatusCode::OK,
        json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": ttl.as_secs(),
            "refresh_token": refresh,
            "scope": "tools",
        }),
    )
}

/// The MCP server: JSON answers (no event stream).
fn mcp(shared: &Shared, body: &str) -> Response<Body> {
    let message: Value = serde_json::from_str(body).unwrap_or_default();
    let Some(id) = message.get("id").cloned() else {
        return respond(StatusCode::ACCEPTED, "text/plain", String::new());
    };
    let result = match message["method"].as_str().unwrap_or("") {
        "initialize" => json!({
            "protocolVersion": message["params"]["protocolVersion"].as_str().unwrap_or("2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "protected", "version": "1.0.0"},
        }),
        "tools/list" => json!({"tools": [{
            "name": "whoami",
            "description": "Says who the caller is.",
            "inputSchema": {"type": "object", "properties": {}},
        }]}),
        "tools/call" => {
            shared.lock().calls += 1;
            json!({"content": [{"type": "text", "text": "you are logged in"}], "isError": false})
        }
        "ping" => json!({}),
        other => {
            return json_response(
                StatusCode::OK,
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("no method {other}")}}),
            );
        }
    };
    json_response(
        StatusCode::OK,
        json!({"jsonrpc": "2.0", "id": id, "result": result}),
    )
}
