//! What each ACP request does on the daemon: the bridge holds one connection for requests
//! and one `Link` (own connection and subscription) per session the editor opened.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommand, CancelNotification, CloseSessionRequest,
    CloseSessionResponse, ContentBlock, ContentChunk, CurrentModeUpdate, Implementation,
    InitializeRequest, InitializeResponse, ListSessionsRequest, ListSessionsResponse,
    LoadSessionRequest, LoadSessionResponse, McpCapabilities, McpServer, NewSessionRequest,
    NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse, ResumeSessionRequest,
    ResumeSessionResponse, SessionCapabilities, SessionCloseCapabilities, SessionConfigOption,
    SessionInfo, SessionListCapabilities, SessionMode, SessionModeState, SessionNotification,
    SessionResumeCapabilities, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse, StopReason,
};
use agent_client_protocol::{Client, Error};
use futures::future::{AbortHandle, Abortable};
use protocol::Method;
use protocol::approval::PermissionMode;
use protocol::daemon::ClientCapabilities;
use protocol::event::RunStatus;
use protocol::methods::{
    SessionCancel, SessionCreate, SessionGet, SessionList, SessionPrompt, SessionSubscribe,
};
use protocol::session::{
    SessionCreateParams, SessionGetParams, SessionListParams, SessionPromptParams, SessionRef,
    SessionSubscribeParams,
};

use super::link::{self, Link, Replay, RunEnd};
use super::model;
use super::prompt::prompt_parts;
use super::stdio::UpdateWindow;
use super::translate::Translator;
use crate::autostart;
use crate::client::{ClientError, Connection};

/// The daemon method that changes a session's permission mode (`session/set_mode`).
const SESSION_UPDATE: &str = "session/update";

/// The bridge between one editor and the daemon.
pub struct Bridge {
    socket: PathBuf,
    start_daemon: bool,
    /// `acp:<the editor's name>`: how the daemon names this client (`decidedBy`).
    client_name: Mutex<String>,
    /// The connection for requests, made on first use and again after the daemon restarted.
    requests: tokio::sync::Mutex<Option<Arc<Connection>>>,
    /// The sessions the editor opened, by id, with the handle that stops following each.
    links: Mutex<HashMap<String, (Arc<Link>, AbortHandle)>>,
    /// Room for `session/update`s on their way to the editor.
    window: Arc<UpdateWindow>,
    /// The command list last sent per session (`available_commands_update`), so a prompt turn
    /// sends it again only when it changed.
    commands_sent: Mutex<HashMap<String, Vec<AvailableCommand>>>,
}

impl Bridge {
    pub fn new(socket: PathBuf, start_daemon: bool, window: Arc<UpdateWindow>) -> Bridge {
        Bridge {
            socket,
            start_daemon,
            client_name: Mutex::new("acp".to_owned()),
            requests: tokio::sync::Mutex::new(None),
            links: Mutex::new(HashMap::new()),
            window,
            commands_sent: Mutex::new(HashMap::new()),
        }
    }

    fn client_name(&self) -> String {
        self.client_name
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    async fn connect(&self, capabilities: ClientCapabilities) -> Result<Connection, Error> {
        autostart::connect_or_start(
            &self.socket,
            self.start_daemon,
            &self.client_name(),
            capabilities,
        )
        .await
        .map_err(daemon_error)
    }

    /// The connection for requests (connected, or connected again).
    async fn daemon(&self) -> Result<Arc<Connection>, Error> {
        let mut slot = self.requests.lock().await;
        if let Some(connection) = slot.as_ref().filter(|c| c.is_connected()) {
            return Ok(connection.clone());
        }
        let connection = Arc::new(self.connect(ClientCapabilities::default()).await?);
        *slot = Some(connection.clone());
        Ok(connection)
    }

    pub fn initialize(&self, request: InitializeRequest) -> InitializeResponse {
        if let Some(info) = &request.client_info {
            *self
                .client_name
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = format!("acp:{}", info.name);
        }
        let capabilities = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(PromptCapabilities::new().embedded_context(true).image(true))
            .mcp_capabilities(McpCapabilities::new().http(true))
            .session_capabilities(
                SessionCapabilities::new()
                    .list(SessionListCapabilities::new())
                    .resume(SessionResumeCapabilities::new())
                    .close(SessionCloseCapabilities::new()),
            );
        // Version 1 is the one this bridge speaks; a client asking another gets it offered.
        InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
            .agent_capabilities(capabilities)
            .agent_info(Implementation::new("agentd", env!("CARGO_PKG_VERSION")))
    }

    pub async fn new_session(
        &self,
        editor: &ConnectionTo<Client>,
        request: NewSessionRequest,
    ) -> Result<NewSessionResponse, Error> {
        let daemon = self.daemon().await?;
        let params = SessionCreateParams {
            cwd: request.cwd.display().to_string(),
            mcp_servers: mcp_servers(&request.mcp_servers),
            ..SessionCreateParams::default()
        };
        let created = daemon
            .request::<SessionCreate>(&params)
            .await
            .map_err(daemon_error)?;
        let session = created.session;
        self.follow(
            editor,
            &session.session_id,
            &session.cwd,
            session.last_seq,
            None,
        )
        .await?;
        let options = self.config_options(&session).await;
        Ok(NewSessionResponse::new(session.session_id)
            .modes(modes(session.permission_mode))
            .config_options(options))
    }

    /// Replay the session, then answer. The caller sends the answer, then tells the returned
    /// sender, after which approvals still pending are asked.
    pub async fn load_session(
        &self,
        editor: &ConnectionTo<Client>,
        request: LoadSessionRequest,
    ) -> Result<(LoadSessionResponse, tokio::sync::oneshot::Sender<()>), Error> {
        let session = self.session(&request.session_id.0).await?;
        let (caught_up, replayed) = tokio::sync::oneshot::channel();
        let (answered, answer_sent) = tokio::sync::oneshot::channel();
        let replay = Replay {
            through_seq: session.last_seq,
            caught_up,
            answered: answer_sent,
        };
        self.follow(editor, &session.session_id, &session.cwd, 0, Some(replay))
            .await?;
        // The history is sent before the answer (ACP's order for `session/load`).
        replayed.await.map_err(|_| {
            internal("the session's history could not be replayed; agentd closed the connection")
        })?;
        let options = self.config_options(&session).await;
        let response = LoadSessionResponse::new()
            .modes(modes(session.permission_mode))
            .config_options(options);
        Ok((response, answered))
    }

    pub async fn resume_session(
        &self,
        editor: &ConnectionTo<Client>,
        request: ResumeSessionRequest,
    ) -> Result<ResumeSessionResponse, Error> {
        let session = self.session(&request.session_id.0).await?;
        self.follow(
            editor,
            &session.session_id,
            &session.cwd,
            session.last_seq,
            None,
        )
        .await?;
        let options = self.config_options(&session).await;
        Ok(ResumeSessionResponse::new()
            .modes(modes(session.permission_mode))
            .config_options(options))
    }

    pub async fn list_sessions(
        &self,
        request: ListSessionsRequest,
    ) -> Result<ListSessionsResponse, Error> {
        let daemon = self.daemon().await?;
        #[allow(clippy::needless_update)] // Fields later versions add keep their defaults.
        let params = SessionListParams {
            cursor: request.cursor.clone(),
            limit: None,
            ..SessionListParams::default()
        };
        let listed = daemon
            .request::<SessionList>(&params)
            .await
            .map_err(daemon_error)?;
        let wanted = request.cwd.as_ref().map(|cwd| cwd.display().to_string());
        let sessions = listed
            .sessions
            .into_iter()
            .filter(|session| wanted.as_ref().is_none_or(|cwd| *cwd == session.cwd))
            .map(|session| {
                SessionInfo::new(session.session_id, session.cwd)
                    .title(session.title)
                    .updated_at(session.updated_at)
            })
            .collect();
        Ok(ListSessionsResponse::new(sessions).next_cursor(listed.next_cursor))
    }

    /// Stop following the session; its active run is cancelled (ACP's `session/close`). The
    /// session stays in the daemon.
    pub async fn close_session(
        &self,
        request: CloseSessionRequest,
    ) -> Result<CloseSessionResponse, Error> {
        let session_id = request.session_id.0.to_string();
        let removed = self
            .links
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&session_id);
        self.commands_sent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&session_id);
        if let Some((link, abort)) = removed {
            abort.abort();
            link.lose("the session was closed");
            self.cancel_run(&session_id).await?;
        }
        Ok(CloseSessionResponse::new())
    }

    /// Send the session's command list to the editor when it differs from the one sent last
    /// (always the first time). A list that cannot be read is left unsent: commands are a
    /// convenience, never a reason to fail a session.
    pub async fn announce_commands(&self, editor: &ConnectionTo<Client>, session_id: &str) {
        let Ok(daemon) = self.daemon().await else {
            return;
        };
        let Ok(session) = self.session(session_id).await else {
            return;
        };
        let Ok(commands) = super::commands::available(&daemon, session_id, &session.cwd).await
        else {
            return;
        };
        {
            let mut sent = self
                .commands_sent
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if sent.get(session_id) == Some(&commands) {
                return;
            }
            sent.insert(session_id.to_owned(), commands.clone());
        }
        let _ = self
            .window
            .send(editor, super::commands::update(session_id, commands))
            .await;
    }

    pub async fn prompt(
        &self,
        editor: &ConnectionTo<Client>,
        request: PromptRequest,
    ) -> Result<PromptResponse, Error> {
        let session_id = request.session_id.0.to_string();
        let link = self.link(&session_id)?;
        let (text, images) = prompt_parts(&request.prompt).map_err(|message| invalid(&message))?;
        // Files may have come or gone since the list was sent.
        self.announce_commands(editor, &session_id).await;
        let daemon = self.daemon().await?;
        if let Some(slash) = crate::commands::slash::parse(&text) {
            if !images.is_empty() {
                return Err(invalid(
                    "a slash command takes no images; send the images with a prompt",
                ));
            }
            let result = crate::commands::slash::send(&daemon, &session_id, &slash, None)
                .await
                .map_err(daemon_error)?;
            let Some(run_id) = result.run_id else {
                let mut shown: Vec<String> = result.output.into_iter().collect();
                shown.extend(result.warnings);
                let chunk = SessionUpdate::AgentMessageChunk(ContentChunk::new(
                    ContentBlock::from(shown.join("\n")),
                ));
                self.window
                    .send(editor, SessionNotification::new(request.session_id, chunk))
                    .await?;
                return Ok(PromptResponse::new(StopReason::EndTurn));
            };
            return match link.run_end(&run_id).await {
                RunEnd::Finished { status, error } => {
                    stop_reason(status, error).map(PromptResponse::new)
                }
                RunEnd::Lost(reason) => Err(internal(&reason)),
            };
        }
        // The struct update keeps the fields later protocol versions add (such as a prompt's
        // step limit) at their defaults, so this compiles against them unchanged.
        #[allow(clippy::needless_update)]
        let params = SessionPromptParams {
            session_id,
            text,
            client_request_id: None,
            // A prompt while a run is active joins it as a follow-up; the turn ends with it.
            queue_if_busy: true,
            images,
            ..SessionPromptParams::default()
        };
        let started = daemon
            .request::<SessionPrompt>(&params)
            .await
            .map_err(daemon_error)?;
        match link.run_end(&started.run_id).await {
            RunEnd::Finished { status, error } => {
                stop_reason(status, error).map(PromptResponse::new)
            }
            RunEnd::Lost(reason) => Err(internal(&reason)),
        }
    }

    pub async fn cancel(&self, notification: CancelNotification) -> Result<(), Error> {
        self.cancel_run(&notification.session_id.0).await
    }

    pub async fn cancel_run(&self, session_id: &str) -> Result<(), Error> {
        let daemon = self.daemon().await?;
        #[allow(clippy::needless_update)] // Fields later versions add keep their defaults.
        let params = SessionRef {
            session_id: session_id.to_owned(),
            ..SessionRef::default()
        };
        daemon
            .request::<SessionCancel>(&params)
            .await
            .map_err(daemon_error)?;
        Ok(())
    }

    pub async fn set_mode(
        &self,
        editor: &ConnectionTo<Client>,
        request: SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, Error> {
        let mode = PermissionMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == request.mode_id.0.as_ref())
            .ok_or_else(|| {
                invalid(&format!(
                    "unknown mode {}; the modes are default, acceptEdits, plan and bypass",
                    request.mode_id
                ))
            })?;
        let params = serde_json::json!({
            "sessionId": request.session_id.0.as_ref(),
            "permissionMode": mode.as_str(),
        });
        self.update_session(params).await?;
        let update = SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode.as_str()));
        self.window
            .send(editor, SessionNotification::new(request.session_id, update))
            .await?;
        Ok(SetSessionModeResponse::new())
    }

    /// Choose the session's model (the `model` config option) for its next run.
    pub async fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        if request.config_id.0.as_ref() != model::MODEL_OPTION {
            return Err(invalid(&format!(
                "unknown config option {}; agentd offers `model`",
                request.config_id
            )));
        }
        let chosen = model::chosen(&request.value)
            .ok_or_else(|| invalid("the model option takes a model id such as provider:model"))?;
        let params = serde_json::json!({
            "sessionId": request.session_id.0.as_ref(),
            "model": chosen,
        });
        self.update_session(params).await?;
        let session = self.session(&request.session_id.0).await?;
        Ok(SetSessionConfigOptionResponse::new(
            self.config_options(&session).await,
        ))
    }

    /// `session/update` with `params` (a newer daemon's method: an older one is told apart).
    async fn update_session(&self, params: serde_json::Value) -> Result<(), Error> {
        let daemon = self.daemon().await?;
        daemon
            .request_raw(SESSION_UPDATE, params)
            .await
            .map_err(|err| match err {
                ClientError::Rpc { code, .. } if code == protocol::error::METHOD_NOT_FOUND => {
                    internal(
                        "this agentd cannot change a session's mode or model yet; update agentd \
                         (agentctl daemon stop, then use the new binary)",
                    )
                }
                other => daemon_error(other),
            })?;
        Ok(())
    }

    /// The session's config options: its model among the configured ones.
    async fn config_options(
        &self,
        session: &protocol::session::SessionInfo,
    ) -> Vec<SessionConfigOption> {
        let current = model::model_id(&session.provider, &session.model);
        // Without the daemon's list (an older daemon, a failed call) only the current model.
        let status = match self.daemon().await {
            Ok(daemon) => daemon
                .request_raw(protocol::methods::DaemonStatus::NAME, serde_json::json!({}))
                .await
                .unwrap_or_default(),
            Err(_) => serde_json::Value::Null,
        };
        vec![model::option(
            &current,
            &model::available(&status, &current),
        )]
    }

    async fn session(&self, session_id: &str) -> Result<protocol::session::SessionInfo, Error> {
        let daemon = self.daemon().await?;
        #[allow(clippy::needless_update)] // Fields later versions add keep their defaults.
        let params = SessionGetParams {
            session_id: session_id.to_owned(),
            include_history: false,
            ..SessionGetParams::default()
        };
        let found = daemon
            .request::<SessionGet>(&params)
            .await
            .map_err(daemon_error)?;
        Ok(found.session)
    }

    fn link(&self, session_id: &str) -> Result<Arc<Link>, Error> {
        self.links
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(session_id)
            .map(|(link, _)| link.clone())
            .ok_or_else(|| {
                invalid(&format!(
                    "session {session_id} is not open in this bridge; open it with session/new, \
                     session/load or session/resume first"
                ))
            })
    }

    /// Follow the session from `after_seq` on its own connection (which answers approvals),
    /// replacing an earlier follower of it. The subscription exists when this returns, so a
    /// prompt sent next has its approvals asked here.
    async fn follow(
        &self,
        editor: &ConnectionTo<Client>,
        session_id: &str,
        cwd: &str,
        after_seq: u64,
        replay: Option<Replay>,
    ) -> Result<(), Error> {
        let connection = self
            .connect(ClientCapabilities {
                approvals: true,
                ..ClientCapabilities::default()
            })
            .await?;
        #[allow(clippy::needless_update)] // Fields later versions add keep their defaults.
        let params = SessionSubscribeParams {
            session_id: session_id.to_owned(),
            after_seq: Some(after_seq),
            ..SessionSubscribeParams::default()
        };
        let stream = connection
            .subscribe(
                SessionSubscribe::NAME,
                &params,
                protocol::event::SESSION_EVENT,
                protocol::methods::SESSION_UNSUBSCRIBE,
            )
            .await
            .map_err(daemon_error)?;
        let link = Arc::new(Link::new(session_id.to_owned()));
        let (abort, registration) = AbortHandle::new_pair();
        let previous = self
            .links
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(session_id.to_owned(), (link.clone(), abort));
        if let Some((previous, abort)) = previous {
            abort.abort();
            previous.lose("the session was opened again");
        }
        let pump = link::pump(
            link,
            editor.clone(),
            self.window.clone(),
            Arc::new(connection),
            stream,
            Translator::new(cwd),
            replay,
        );
        editor.spawn(async move {
            let _ = Abortable::new(pump, registration).await;
            Ok(())
        })?;
        Ok(())
    }
}

/// The permission modes as ACP session modes, with the session's current one.
fn modes(current: PermissionMode) -> SessionModeState {
    let available = PermissionMode::ALL
        .into_iter()
        .map(|mode| {
            let (name, description) = match mode {
                PermissionMode::Default => ("Default", "Reads run; edits, shell and network ask"),
                PermissionMode::AcceptEdits => (
                    "Accept edits",
                    "Edits in the workspace run; shell and network ask",
                ),
                PermissionMode::Plan => ("Plan", "Read-only: nothing is changed"),
                PermissionMode::Bypass => ("Bypass", "Everything runs without asking"),
            };
            SessionMode::new(mode.as_str(), name).description(description.to_owned())
        })
        .collect();
    SessionModeState::new(current.as_str(), available)
}

/// The editor's MCP servers as `session/create` takes them (ACP's array form).
fn mcp_servers(servers: &[McpServer]) -> Option<serde_json::Value> {
    if servers.is_empty() {
        return None;
    }
    serde_json::to_value(servers).ok()
}

/// A finished run as the prompt turn's answer.
fn stop_reason(status: RunStatus, error: Option<String>) -> Result<StopReason, Error> {
    match status {
        RunStatus::Completed => Ok(StopReason::EndTurn),
        RunStatus::Cancelled => Ok(StopReason::Cancelled),
        RunStatus::MaxSteps => Ok(StopReason::MaxTurnRequests),
        // A budget bounds what one prompt turn spends, as tokens do.
        RunStatus::Budget => Ok(StopReason::MaxTokens),
        RunStatus::Failed | RunStatus::Interrupted => {
            let reason = error.unwrap_or_else(|| "no reason given".to_owned());
            Err(internal(&format!("the run failed: {reason}")))
        }
    }
}

fn invalid(message: &str) -> Error {
    Error::new(agent_client_protocol::ErrorCode::INVALID_PARAMS, message)
}

fn internal(message: &str) -> Error {
    Error::new(agent_client_protocol::ErrorCode::INTERNAL_ERROR, message)
}

/// A daemon error as the editor's error: the daemon's code and words.
pub fn daemon_error(err: ClientError) -> Error {
    match err {
        ClientError::Rpc { code, message, .. } => Error::new(code, message),
        other => internal(&other.to_string()),
    }
}
