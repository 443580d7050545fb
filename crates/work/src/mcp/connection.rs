//! The one place that speaks rmcp: one connection to one MCP server, stdio or streamable
//! HTTP. A stdio server is a [`ChildProcess`] (own process group, death signal, recorded group,
//! scrubbed environment plus the configured `env`, cwd = configured or the project root; a
//! project's server confined by the shell's sandbox, see `ServerConfinement`), its
//! stdin/stdout the rmcp transport, its stderr recorded by the server's [`ServerLog`]. The
//! connection initializes, lists tools (paginated), calls tools with a timeout, progress and
//! cancellation (`notifications/cancelled`), lists and gets prompts (slash commands), reports
//! `notifications/tools/list_changed` (counted as it arrives, `guard`), records
//! `notifications/message` in the server's log, offers the project root as its roots
//! (`roots`), sends an HTTP server the OAuth login's token (`http`), holds each message to a
//! size before it is
//! parsed (`guard`; over HTTP, `http` ties an oversized answer to its call), says rmcp's
//! errors in words (`errors`), and
//! stops politely (stdin closed, SIGTERM to the group, SIGKILL after a grace).

use std::ffi::OsString;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientNotification, ClientRequest, ContentBlock, ResourceContents, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RunningServiceCancellationToken};
use rmcp::{Peer, RoleClient, ServiceExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::limits::McpLimits;
use super::log::ServerLog;
use super::server::ToolListFreshness;
use super::{
    McpCallError, McpCallResult, McpContent, McpProgress, McpServerConfig, McpToolInfo,
    McpTransport,
};
use agentd_policy::process::{ChildProcess, ProcessSpec, StderrMode};
use progress::{Handler, ProgressRoute, ProgressRoutes};

#[path = "connection_errors.rs"]
mod errors;
#[path = "connection_guard.rs"]
mod guard;
#[path = "connection_http.rs"]
mod http;
#[path = "connection_progress.rs"]
mod progress;
#[path = "connection_prompts.rs"]
mod prompts;
#[path = "connection_requests.rs"]
mod requests;
#[path = "connection_roots.rs"]
mod roots;

/// Room above `max_result_bytes` for rmcp's own line limit, so the guard's size error (a
/// short line) is what a long message meets.
const RMCP_LINE_SLACK: usize = 64 * 1024;

/// What a connection is started with besides its configuration.
pub(super) struct StartContext<'a> {
    pub(super) project_root: &'a Path,
    pub(super) log: &'a Arc<ServerLog>,
    pub(super) http: Option<&'a reqwest::Client>,
    pub(super) sandbox: Option<&'a Arc<agentd_policy::process::sandbox::ShellSandbox>>,
    /// Gets a message on each `notifications/tools/list_changed` (coalesced: a full channel
    /// already says so).
    pub(super) tools_changed: mpsc::Sender<()>,
    pub(super) tools_fresh: Arc<ToolListFreshness>,
    pub(super) limits: &'a McpLimits,
    /// Where the OAuth logins' tokens are.
    pub(super) oauth: &'a super::oauth::store::TokenStore,
}

/// How a connection could not be made.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub(super) struct StartError {
    pub(super) message: String,
    /// The server asks for an OAuth login no stored token answers: retrying will not help.
    pub(super) needs_login: bool,
}

impl StartError {
    fn new(message: String) -> Self {
        Self {
            message,
            needs_login: false,
        }
    }
}

/// A connected server: the process (stdio) and the rmcp service.
pub(super) struct Connection {
    client: Arc<McpClient>,
    process: Option<ChildProcess>,
    /// Stops the rmcp service (closes the transport: stdin for stdio).
    service_stop: Option<RunningServiceCancellationToken>,
    /// The rmcp service until it ends (transport closed or stopped); None once it ended.
    service: Option<AbortOnDropHandle<()>>,
    /// The stderr recorder of a stdio server.
    stderr: Option<AbortOnDropHandle<()>>,
}

/// What calls go through; shared with the manager's handles while the connection lives.
pub(super) struct McpClient {
    server: String,
    /// How errors name the server: its URL, or "the server" (stdio).
    place: String,
    /// Calls whose HTTP answer was over the limit (None: stdio, where the guard answers).
    too_large: Option<http::TooLargeAnswers>,
    max_result_bytes: usize,
    peer: Peer<RoleClient>,
    progress: ProgressRoutes,
    /// Where the server's questions and sampling requests go: the calls in flight.
    askers: requests::Askers,
    /// Cancelled once the connection is lost or stopped: in-flight calls end at once.
    closed: CancellationToken,
    /// Why it was lost, set before `closed` is cancelled.
    lost_because: Mutex<Option<String>>,
    /// Cancelled when a call could not reach the server (an HTTP server that went away shows
    /// only so): the supervisor then treats the connection as lost.
    broken: CancellationToken,
    broken_because: Mutex<Option<String>>,
}

impl Connection {
    /// Starts `config` for `start.project_root` (stdio: spawns the process) and initializes
    /// it, all within `config.startup_timeout`.
    pub(super) async fn start(
        config: &McpServerConfig,
        start: StartContext<'_>,
    ) -> Result<Connection, StartError> {
        let StartContext {
            project_root,
            log,
            http,
            sandbox,
            tools_changed,
            tools_fresh,
            limits,
            oauth,
        } = start;
        let progress = ProgressRoutes::default();
        let askers = requests::Askers::default();
        let handler = Handler {
            progress: progress.clone(),
            tools_changed,
            log: log.clone(),
            roots: roots::Roots::for_project(project_root),
            server: config.name.clone(),
            askers: askers.clone(),
            sampling: config.sampling,
        };
        let max_bytes = limits.max_result_bytes;
        let timeout = config.startup_timeout;
        match &config.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let cwd = match cwd {
                    Some(cwd) => project_root.join(cwd),
                    None => project_root.to_path_buf(),
                };
                let mut child_env = agentd_policy::process::scrubbed_env();
                for (name, value) in env {
                    child_env.retain(|(existing, _)| existing != OsString::from(name).as_os_str());
                    child_env.push((name.into(), value.into()));
                }
                let spec = ProcessSpec {
                    program: command.into(),
                    args: args.iter().map(OsString::from).collect(),
                    cwd: cwd.clone(),
                    env: child_env,
                    capture_stdin: true,
                    capture_stdout: true,
                    stderr: StderrMode::Capture,
                    confinement: None,
                    verbatim_args: false,
                };
                let spec = match sandbox {
                    Some(sandbox) => sandbox.confine_server(spec, project_root).await.map_err(|error| {
                        StartError::new(format!(
                            "cannot confine the project's server: {error}; fix the path, or list \
                             it in [mcp] unconfined of the daemon's config.toml to run it unconfined"
                        ))
                    })?,
                    None => spec,
                };
                let mut process = ChildProcess::spawn(spec).await.map_err(|error| {
                    StartError::new(format!(
                        "cannot start `{command}` in {}: {error} (check the server's command and cwd)",
                        cwd.display()
                    ))
                })?;
                let pid = process.pid();
                let stderr = process.take_stderr().map(|stderr| {
                    AbortOnDropHandle::new(tokio::spawn(log.clone().record(stderr, pid)))
                });
                let (Some(stdin), Some(stdout)) = (process.take_stdin(), process.take_stdout())
                else {
                    let _ = process.kill().await;
                    return Err(StartError::new(
                        "the server's stdin or stdout is missing".into(),
                    ));
                };
                let transport = guard::Watched {
                    inner: rmcp::transport::async_rw::AsyncRwTransport::new_client(
                        guard::SizeGuard::new(stdout, max_bytes, &config.name),
                        stdin,
                    )
                    .with_max_line_length(max_bytes.saturating_add(RMCP_LINE_SLACK)),
                    tools: tools_fresh,
                };
                let started = tokio::time::timeout(timeout, handler.serve(transport)).await;
                let failure = match started {
                    Ok(Ok(service)) => {
                        return Ok(Self::connected(
                            &config.name,
                            ("the server", None, max_bytes),
                            service,
                            (progress, askers),
                            Some(process),
                            stderr,
                        ));
                    }
                    Ok(Err(error)) => errors::initialize_failed(&error, "the server"),
                    Err(_) => format!(
                        "the server did not answer initialize within {} s",
                        timeout.as_secs_f64()
                    ),
                };
                let status = process.kill().await;
                // The pipe ends with the group: the recorder has the last lines then.
                if let Some(stderr) = stderr {
                    let _ = tokio::time::timeout(STDERR_DRAIN, stderr).await;
                }
                Err(StartError::new(match status {
                    Ok(status) if status.code().is_some() => {
                        format!("{failure} (the server {})", errors::describe_exit(status))
                    }
                    _ => failure,
                }))
            }
            McpTransport::Http { url, headers, .. } => {
                let http = http.ok_or_else(|| {
                    StartError::new(
                        "the HTTP client could not be built (see the daemon's log)".into(),
                    )
                })?;
                let auth = http::auth_for(&config.name, url, headers, oauth, http).await?;
                let custom = http::custom_headers(headers)?;
                let too_large = http::TooLargeAnswers::default();
                let transport = rmcp::transport::StreamableHttpClientTransport::with_client(
                    http::SizedHttp {
                        client: http.clone(),
                        too_large: too_large.clone(),
                        auth: auth.clone(),
                    },
                    rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                        url.as_str(),
                    )
                    .custom_headers(custom)
                    .max_json_response_size(max_bytes)
                    .max_sse_event_size(max_bytes),
                );
                let transport = guard::Watched {
                    inner: transport,
                    tools: tools_fresh,
                };
                match tokio::time::timeout(timeout, handler.serve(transport)).await {
                    Ok(Ok(service)) => Ok(Self::connected(
                        &config.name,
                        (url, Some(too_large), max_bytes),
                        service,
                        (progress, askers),
                        None,
                        None,
                    )),
                    Ok(Err(error)) => Err(match auth.needs_login() {
                        Some(message) => StartError {
                            message,
                            needs_login: true,
                        },
                        None => StartError::new(errors::initialize_failed(&error, url)),
                    }),
                    Err(_) => Err(StartError::new(format!(
                        "{url} did not answer initialize within {} s",
                        timeout.as_secs_f64()
                    ))),
                }
            }
        }
    }

    /// `(place, too_large, max_result_bytes)`: how errors name the server, and sizes.
    fn connected(
        server: &str,
        (place, too_large, max_result_bytes): (&str, Option<http::TooLargeAnswers>, usize),
        service: rmcp::service::RunningService<RoleClient, Handler>,
        (progress, askers): (ProgressRoutes, requests::Askers),
        process: Option<ChildProcess>,
        stderr: Option<AbortOnDropHandle<()>>,
    ) -> Self {
        let client = Arc::new(McpClient {
            server: server.to_owned(),
            place: place.to_owned(),
            too_large,
            max_result_bytes,
            peer: service.peer().clone(),
            progress,
            askers,
            closed: CancellationToken::new(),
            lost_because: Mutex::new(None),
            broken: CancellationToken::new(),
            broken_because: Mutex::new(None),
        });
        let service_stop = Some(service.cancellation_token());
        let service = Some(AbortOnDropHandle::new(tokio::spawn(async move {
            let _ = service.waiting().await;
        })));
        Self {
            client,
            process,
            service_stop,
            service,
            stderr,
        }
    }

    pub(super) fn client(&self) -> Arc<McpClient> {
        self.client.clone()
    }

    /// The process id of a stdio server.
    pub(super) fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(ChildProcess::pid)
    }

    /// Waits until the server is lost: its process exited or the transport closed. Returns
    /// why, in words; in-flight calls end as `Exited` from here.
    pub(super) async fn lost(&mut self) -> String {
        let reason = match self.process.as_mut() {
            Some(process) => {
                let exited = tokio::select! {
                    status = process.wait() => Some(status),
                    () = service_ended(&mut self.service) => None,
                    () = self.client.broken.cancelled() => None,
                };
                // The pipe usually closes a moment before the exit is seen: wait for it briefly.
                let exited = match exited {
                    Some(status) => Some(status),
                    None => tokio::time::timeout(EXIT_REASON_WAIT, process.wait())
                        .await
                        .ok(),
                };
                match exited {
                    Some(Ok(status)) => format!("it {}", errors::describe_exit(status)),
                    Some(Err(error)) => format!("waiting for it failed: {error}"),
                    None if self.client.broken.is_cancelled() => self.client.broken_reason(),
                    None => "it closed the connection".to_owned(),
                }
            }
            None => tokio::select! {
                () = service_ended(&mut self.service) => "the connection closed".to_owned(),
                () = self.client.broken.cancelled() => self.client.broken_reason(),
            },
        };
        self.client.close(&reason);
        reason
    }

    /// Stops the server: the transport closed (stdin for stdio), then SIGTERM to the group
    /// after `grace`, then SIGKILL after another `grace`. In-flight calls end as `Exited`.
    pub(super) async fn stop(mut self, grace: Duration) {
        self.client.close("the server was stopped");
        if let Some(stop) = self.service_stop.take() {
            stop.cancel();
        }
        if let Some(mut process) = self.process.take()
            && tokio::time::timeout(grace, process.wait()).await.is_err()
        {
            process.terminate();
            if tokio::time::timeout(grace, process.wait()).await.is_err() {
                let _ = process.kill().await;
            }
        }
        let _ = tokio::time::timeout(grace, service_ended(&mut self.service)).await;
        if let Some(stderr) = self.stderr.take() {
            let _ = tokio::time::timeout(STDERR_DRAIN, stderr).await;
        }
    }
}

/// Waits for the rmcp service to end (at once if it already has); never polls a finished
/// task again.
async fn service_ended(service: &mut Option<AbortOnDropHandle<()>>) {
    if let Some(running) = service.as_mut() {
        let _ = running.await;
        *service = None;
    }
}

/// How long a stopped server's stderr may still be read for its last lines.
const STDERR_DRAIN: Duration = Duration::from_secs(1);

impl McpClient {
    /// A call could not reach the server: the supervisor learns of it through `lost`.
    fn mark_broken(&self, error: &rmcp::ServiceError) -> String {
        let reason = errors::service_failed(error, &self.place);
        self.broken_because
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get_or_insert_with(|| reason.clone());
        self.broken.cancel();
        reason
    }

    fn broken_reason(&self) -> String {
        self.broken_because
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
            .unwrap_or_else(|| "the connection broke".to_owned())
    }

    fn close(&self, reason: &str) {
        self.lost_because
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get_or_insert_with(|| reason.to_owned());
        self.closed.cancel();
    }

    /// Why the connection was lost: waits a moment for the supervisor to find out (the
    /// transport closes about when the process exits).
    async fn lost_reason(&self) -> String {
        let _ = tokio::time::timeout(EXIT_REASON_WAIT, self.closed.cancelled()).await;
        self.lost_because
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
            .unwrap_or_else(|| "the connection closed".to_owned())
    }

    /// Every tool of the server (all pages).
    pub(super) async fn list_tools(&self) -> Result<Vec<McpToolInfo>, String> {
        let tools = tokio::select! {
            tools = self.peer.list_all_tools() => tools.map_err(|error| format!("tools/list failed: {}", errors::service_failed(&error, &self.place)))?,
            () = self.closed.cancelled() => return Err("the server exited".to_owned()),
        };
        Ok(tools
            .into_iter()
            .map(|tool| McpToolInfo {
                read_only: tool
                    .annotations
                    .as_ref()
                    .and_then(|annotations| annotations.read_only_hint)
                    .unwrap_or(false),
                name: tool.name.into_owned(),
                description: tool
                    .description
                    .map(|text| text.into_owned())
                    .unwrap_or_default(),
                input_schema: serde_json::Value::Object((*tool.input_schema).clone()),
            })
            .collect())
    }

    /// Calls `tool`: bounded by `timeout` (not counting the time the server's requests wait
    /// on agentd), cancelled on the server on timeout or `cancel`,
    /// progress notifications into `progress` (dropped when it is full), the server's
    /// questions and sampling requests meanwhile to `asker`.
    pub(super) async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        timeout: Duration,
        (progress, asker): (
            Option<mpsc::Sender<McpProgress>>,
            Option<crate::tools::server_requests::CallAsker>,
        ),
        cancel: CancellationToken,
    ) -> Result<McpCallResult, McpCallError> {
        let _asker_route = asker.map(|asker| self.askers.route(asker));
        let exited = |reason: String| McpCallError::Exited {
            server: self.server.clone(),
            reason,
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = self
            .peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|error| match error {
                rmcp::ServiceError::TransportSend(_) => exited(self.mark_broken(&error)),
                other => exited(errors::service_failed(&other, &self.place)),
            })?;
        let token = handle.progress_token.clone();
        let request_id = handle.id.clone();
        let answered_id = request_id.clone();
        let _route = progress.map(|sender| ProgressRoute::new(&self.progress, token, sender));
        let mut response = handle.rx;
        let outcome = tokio::select! {
            answer = &mut response => answer,
            () = self.askers.unasked(timeout) => {
                self.send_cancelled(request_id, "timeout").await;
                return Err(McpCallError::Timeout {
                    server: self.server.clone(),
                    tool: tool.to_owned(),
                    // Rounded up: a 300 ms limit reads "after 1 s", not "after 0 s".
                    secs: timeout.as_millis().div_ceil(1000).try_into().unwrap_or(u64::MAX),
                });
            }
            () = cancel.cancelled() => {
                self.send_cancelled(request_id, "cancelled by the user").await;
                return Err(McpCallError::Cancelled);
            }
            () = self.closed.cancelled() => return Err(exited(self.lost_reason().await)),
        };
        // rmcp runs each notification's handler as a task of its own: let the progress
        // handlers spawned before the answer arrived deliver before the route goes.
        tokio::task::yield_now().await;
        match outcome {
            Err(_) => Err(exited(self.lost_reason().await)),
            Ok(Err(rmcp::ServiceError::McpError(error))) => match too_large_data(&error) {
                Some((bytes, limit)) => Err(McpCallError::TooLarge {
                    server: self.server.clone(),
                    tool: tool.to_owned(),
                    bytes: Some(bytes),
                    limit,
                }),
                None => Err(McpCallError::Refused {
                    server: self.server.clone(),
                    message: error.message.into_owned(),
                }),
            },
            Ok(Err(rmcp::ServiceError::TransportClosed))
                if self
                    .too_large
                    .as_ref()
                    .is_some_and(|noted| noted.take(&answered_id)) =>
            {
                Err(McpCallError::TooLarge {
                    server: self.server.clone(),
                    tool: tool.to_owned(),
                    bytes: None,
                    limit: self.max_result_bytes as u64,
                })
            }
            Ok(Err(rmcp::ServiceError::TransportClosed)) => Err(exited(self.lost_reason().await)),
            Ok(Err(error @ rmcp::ServiceError::TransportSend(_))) => match errors::too_large(&error) {
                // An HTTP response over the limit: the connection is fine, the result is not.
                Some(limit) => Err(McpCallError::TooLarge {
                    server: self.server.clone(),
                    tool: tool.to_owned(),
                    bytes: None,
                    limit: limit as u64,
                }),
                None => Err(exited(self.mark_broken(&error))),
            },
            Ok(Err(error)) => Err(exited(errors::service_failed(&error, &self.place))),
            Ok(Ok(ServerResult::CallToolResult(result))) => Ok(McpCallResult {
                content: result.content.into_iter().map(content).collect(),
                structured: result.structured_content,
                is_error: result.is_error.unwrap_or(false),
            }),
            Ok(Ok(_)) => Err(McpCallError::Refused {
                server: self.server.clone(),
                message: "the server answered with something other than a tool result (asking for input or starting a task), which agentd does not support".to_owned(),
            }),
        }
    }

    async fn send_cancelled(&self, request_id: rmcp::model::RequestId, reason: &str) {
        let notification = ClientNotification::CancelledNotification(CancelledNotification::new(
            CancelledNotificationParam::new(Some(request_id), Some(reason.to_owned())),
        ));
        // Bounded: a server that stopped reading must not hold the caller.
        let _ = tokio::time::timeout(
            CANCEL_SEND_DEADLINE,
            self.peer.send_notification(notification),
        )
        .await;
    }
}

/// How long a call that saw its transport close waits to learn why (the process's exit).
const EXIT_REASON_WAIT: Duration = Duration::from_millis(500);

/// How long sending `notifications/cancelled` may take.
const CANCEL_SEND_DEADLINE: Duration = Duration::from_secs(2);

fn content(block: ContentBlock) -> McpContent {
    match block {
        ContentBlock::Text(text) => McpContent::Text(text.text),
        ContentBlock::Image(image) => McpContent::Image {
            mime_type: image.mime_type,
            data: image.data,
        },
        ContentBlock::Audio(audio) => {
            McpContent::Other(format!("[audio content, {}]", audio.mime_type))
        }
        ContentBlock::ResourceLink(link) => McpContent::ResourceLink {
            uri: link.uri,
            name: Some(link.name),
        },
        ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => McpContent::Resource {
                uri,
                text: Some(text),
            },
            ResourceContents::BlobResourceContents { uri, .. } => {
                McpContent::Resource { uri, text: None }
            }
            _ => McpContent::Other(
                "[an embedded resource of a kind agentd does not know]".to_owned(),
            ),
        },
        _ => McpContent::Other("[content of a kind agentd does not know]".to_owned()),
    }
}

/// `(bytes, limit)` of the error response the guard put in place of a result over the limit.
fn too_large_data(error: &rmcp::model::ErrorData) -> Option<(u64, u64)> {
    let size = error.data.as_ref()?.get(guard::TOO_LARGE_KEY)?;
    Some((size.get("bytes")?.as_u64()?, size.get("limit")?.as_u64()?))
}
