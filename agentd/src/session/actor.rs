//! One session as an actor: commands (prompt, steer, follow-up, cancel) go in through a
//! channel and are handled one at a time, so runs of a session are serialised while sessions
//! run concurrently; events come out through the session's `EventLog`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::events::{DaemonStream, EventLog, LogPosition};
use super::{SessionDeps, SessionShared};
use crate::agent::{Run, RunStart, StopReason};
use crate::store::{self, REMEMBERED_REQUEST_IDS, SessionHeader, SessionSettings};
use protocol::event::{Event, UserMessageKind};
use protocol::session::{
    QueueMessageResult, SessionCompactResult, SessionInfo, SessionPromptResult, SessionStatus,
    SessionUpdateParams,
};

#[path = "actor_compact.rs"]
mod compact;
#[path = "actor_update.rs"]
mod update;

/// Commands queued per session before senders wait.
const COMMAND_QUEUE: usize = 64;

/// Why a session request failed; mapped to JSON-RPC errors by the RPC layer. Messages name
/// no client's commands: what to do next is [`SessionError::suggested_method`], sent as
/// `error.data`.
/// How a prompted run goes, beyond its text.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Keep its approvals pending while no client that answers approvals follows
    /// (`session/prompt {holdApprovals}`).
    pub hold_approvals: bool,
    /// Its own step limit (`session/prompt {maxSteps}`), under the config's `max_steps`.
    pub max_steps: Option<u32>,
    /// A subagent's run: the parent's run that started it, named in its approvals
    /// (`PendingApproval.parentRunId`).
    pub parent_run_id: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{0}")]
    NotFound(String),
    /// A session id outside the `ses_…` grammar.
    #[error("{0}")]
    InvalidId(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    InvalidParams(String),
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Internal(String),
    /// The model endpoint failed a request the daemon made for the user (a summary).
    #[error("{0}")]
    Upstream(String),
}

impl SessionError {
    pub fn not_found(id: &str) -> Self {
        SessionError::NotFound(format!(
            "session not found: {}; list the sessions to see which exist",
            protocol::error::echo(id)
        ))
    }

    /// The method whose result helps the user recover from this error, if one does.
    pub fn suggested_method(&self) -> Option<&'static str> {
        use protocol::Method;
        match self {
            SessionError::NotFound(_) | SessionError::InvalidId(_) => {
                Some(protocol::methods::SessionList::NAME)
            }
            SessionError::Conflict(_)
            | SessionError::InvalidParams(_)
            | SessionError::Config(_)
            | SessionError::Internal(_)
            | SessionError::Upstream(_) => None,
        }
    }
}

/// A loaded session: its header, log, shared state and the actor's mailbox.
pub struct Session {
    /// As created (`settings` holds what `session/update` changed since).
    pub header: SessionHeader,
    /// Provider, model, mode and title as they now are; the actor changes them
    /// (`session/update`), runs start with them.
    settings: Arc<Mutex<SessionSettings>>,
    pub log: Arc<EventLog>,
    pub shared: Arc<SessionShared>,
    commands: Mutex<Option<mpsc::Sender<Command>>>,
    /// Fires the active run's cancellation from outside the actor (shutdown, delete).
    active: Arc<Mutex<Option<ActiveRun>>>,
    run_finished: broadcast::Sender<()>,
    /// Commands sent and not yet handled by the actor (eviction waits for zero).
    unhandled_commands: Arc<AtomicUsize>,
    /// Cancelled once the actor task has ended (it holds the drop guard).
    actor_stopped: CancellationToken,
    /// Cancelled by `close`: stops work the actor does itself (a `session/compact` summary).
    closing: CancellationToken,
}

#[derive(Clone)]
struct ActiveRun {
    run_id: String,
    cancel: CancellationToken,
    stop_reason: Arc<Mutex<Option<StopReason>>>,
}

impl ActiveRun {
    fn stop(&self, reason: StopReason) {
        if let Ok(mut slot) = self.stop_reason.lock() {
            slot.get_or_insert(reason);
        }
        self.cancel.cancel();
    }
}

enum Command {
    Prompt {
        text: String,
        client_request_id: Option<String>,
        queue_if_busy: bool,
        /// How the run it starts goes (`holdApprovals`, `maxSteps`).
        options: RunOptions,
        reply: oneshot::Sender<Result<SessionPromptResult, SessionError>>,
    },
    Steer {
        text: String,
        reply: oneshot::Sender<Result<QueueMessageResult, SessionError>>,
    },
    FollowUp {
        text: String,
        /// None: a client's.
        origin: Option<protocol::event::FollowUpOrigin>,
        /// With no active run: start one (else the text is held for the next run).
        start_if_idle: bool,
        reply: oneshot::Sender<Result<QueueMessageResult, SessionError>>,
    },
    Compact {
        reply: oneshot::Sender<Result<SessionCompactResult, SessionError>>,
    },
    Update {
        params: SessionUpdateParams,
        reply: oneshot::Sender<Result<(), SessionError>>,
    },
}

impl Session {
    /// Load a session from its file, repair an interrupted run, and start its actor.
    pub(super) async fn load(
        header: SessionHeader,
        deps: Arc<SessionDeps>,
        daemon: DaemonStream,
        tasks: &TaskTracker,
    ) -> Result<Session, SessionError> {
        let path = store::session_path(&deps.paths.sessions_dir, &header.id);
        let load_path = path.clone();
        let loaded = tokio::task::spawn_blocking(move || store::load(&load_path))
            .await
            .map_err(|err| SessionError::Internal(err.to_string()))?
            .map_err(|err| SessionError::Internal(format!("{err:#}")))?;
        for warning in &loaded.warnings {
            tracing::warn!(session = %header.id, "{warning}");
        }
        let position = LogPosition {
            last_seq: loaded.last_seq,
            valid_len: loaded.valid_len,
            missing_newline: loaded.missing_newline,
        };
        let log = EventLog::open(&header.id, path, position, daemon, tasks)
            .await
            .map_err(|err| SessionError::Internal(format!("{err:#}")))?;
        let log = Arc::new(log);
        // The header as `sessionUpdated` events left it: runs start with these settings.
        let mut header = header;
        let settings = SessionSettings::of(&loaded.header);
        settings.write_into(&mut header);
        let settings = Arc::new(Mutex::new(settings));
        let shared = Arc::new(SessionShared::default());
        {
            let mut state = shared.lock();
            state.history = loaded.history;
            state.usage = loaded.usage;
            state.cost_usd = loaded.cost_usd;
            state.remembered_allow_rules = loaded.session_allow_rules;
            state.context = loaded.context;
        }
        for (run_id, approval_id, tool_call_id) in loaded.unresolved_approvals {
            super::recovery::expire_approval(&log, run_id, approval_id, tool_call_id)
                .await
                .map_err(|err| SessionError::Internal(format!("{err:#}")))?;
        }
        if let Some(run_id) = loaded.unfinished_run {
            super::recovery::repair_interrupted_run(
                &log,
                &shared,
                &run_id,
                loaded.queued_steers,
                loaded.queued_follow_ups,
            )
            .await
            .map_err(|err| SessionError::Internal(format!("{err:#}")))?;
        }
        Ok(Session::start(
            header,
            deps,
            log,
            shared,
            settings,
            loaded.request_ids.into_iter().collect(),
            tasks,
        ))
    }

    /// A session whose file `log` has just created: nothing to read back or repair.
    pub(super) fn create(
        header: SessionHeader,
        deps: Arc<SessionDeps>,
        log: EventLog,
        tasks: &TaskTracker,
    ) -> Session {
        let settings = Arc::new(Mutex::new(SessionSettings::of(&header)));
        Session::start(
            header,
            deps,
            Arc::new(log),
            Arc::new(SessionShared::default()),
            settings,
            VecDeque::new(),
            tasks,
        )
    }

    /// Start the actor of a session whose state is known.
    fn start(
        header: SessionHeader,
        deps: Arc<SessionDeps>,
        log: Arc<EventLog>,
        shared: Arc<SessionShared>,
        settings: Arc<Mutex<SessionSettings>>,
        recent_requests: VecDeque<(String, String)>,
        tasks: &TaskTracker,
    ) -> Session {
        let (commands_tx, commands_rx) = mpsc::channel(COMMAND_QUEUE);
        let active = Arc::new(Mutex::new(None));
        let (run_finished, _) = broadcast::channel(4);
        let unhandled_commands = Arc::new(AtomicUsize::new(0));
        let actor_stopped = CancellationToken::new();
        let closing = CancellationToken::new();
        let notification_cap = deps
            .config
            .as_ref()
            .map(|config| config.tasks.max_notification_runs)
            .unwrap_or(crate::task::DEFAULT_MAX_NOTIFICATION_RUNS);
        let actor = Actor {
            header: header.clone(),
            settings: settings.clone(),
            deps,
            log: log.clone(),
            shared: shared.clone(),
            active: active.clone(),
            recent_requests,
            tasks: tasks.clone(),
            previous_run: None,
            run_finished: run_finished.clone(),
            unhandled_commands: unhandled_commands.clone(),
            _stopped: actor_stopped.clone().drop_guard(),
            closing: closing.clone(),
            mcp: super::mcp::SessionMcp::default(),
            notification_chain: super::notification_chain::NotificationChain::new(notification_cap),
        };
        tasks.spawn(actor.run(commands_rx));
        Session {
            header,
            settings,
            log,
            shared,
            commands: Mutex::new(Some(commands_tx)),
            active,
            run_finished,
            unhandled_commands,
            actor_stopped,
            closing,
        }
    }

    pub fn id(&self) -> &str {
        &self.header.id
    }

    /// Provider, model, mode and title as they now are.
    pub fn settings(&self) -> SessionSettings {
        self.settings
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// The preview of the session's first prompt (`protocol::session::preview_of`).
    pub fn preview(&self) -> Option<String> {
        let state = self.shared.lock();
        state.history.iter().find_map(|message| match message {
            crate::conversation::Message::User { content } => {
                Some(protocol::session::preview_of(content))
            }
            _ => None,
        })
    }

    /// The session as listed.
    pub fn info(&self) -> SessionInfo {
        let settings = self.settings();
        let preview = self.preview();
        let state = self.shared.lock();
        SessionInfo {
            session_id: self.header.id.clone(),
            title: settings.title,
            cwd: self.header.cwd.clone(),
            provider: settings.provider,
            model: settings.model,
            permission_mode: settings.permission_mode,
            created_at: self.header.created_at.clone(),
            updated_at: state
                .updated_at
                .map(|t| humantime::format_rfc3339_seconds(t).to_string())
                .unwrap_or_else(|| self.header.created_at.clone()),
            status: if state.run_id.is_some() {
                SessionStatus::Running
            } else {
                SessionStatus::Idle
            },
            run_id: state.run_id.clone(),
            last_seq: self.log.last_seq(),
            usage: crate::conversation::wire::usage(&state.usage),
            preview,
            parent_session_id: self.header.parent_session_id.clone(),
            cost_usd: state.cost_usd,
        }
    }

    /// Change the mode, model or title from the next run on (`session/update`); handled by
    /// the actor, between runs' starts.
    pub async fn update(&self, params: SessionUpdateParams) -> Result<(), SessionError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Update { params, reply }).await?;
        answer.await.map_err(|_| self.no_answer())?
    }

    /// Start a run with `text` (or queue it as a follow-up with `queue_if_busy`); `options`
    /// shape the run it starts (a prompt queued as a follow-up keeps the active run's).
    pub async fn prompt(
        &self,
        text: String,
        client_request_id: Option<String>,
        queue_if_busy: bool,
        options: RunOptions,
    ) -> Result<SessionPromptResult, SessionError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Prompt {
            text,
            client_request_id,
            queue_if_busy,
            options,
            reply,
        })
        .await?;
        answer.await.map_err(|_| self.no_answer())?
    }

    pub async fn steer(&self, text: String) -> Result<QueueMessageResult, SessionError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Steer { text, reply }).await?;
        answer.await.map_err(|_| self.no_answer())?
    }

    pub async fn follow_up(&self, text: String) -> Result<QueueMessageResult, SessionError> {
        self.follow_up_from(text, None, true).await
    }

    /// A follow-up queued by the daemon (`origin`), e.g. a background task's notification.
    /// With no active run, `start_if_idle` starts one; otherwise the text is held and opens
    /// the session's next run, before that run's own message.
    pub async fn follow_up_from(
        &self,
        text: String,
        origin: Option<protocol::event::FollowUpOrigin>,
        start_if_idle: bool,
    ) -> Result<QueueMessageResult, SessionError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::FollowUp {
            text,
            origin,
            start_if_idle,
            reply,
        })
        .await?;
        answer.await.map_err(|_| self.no_answer())?
    }

    /// Summarise the older history now; refused while a run is active. Handled by the actor,
    /// so no run starts while the summary is written.
    pub async fn compact(&self) -> Result<SessionCompactResult, SessionError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Compact { reply }).await?;
        answer.await.map_err(|_| self.no_answer())?
    }

    /// Cancel the active run; returns its id, or None when idle. The outcome arrives as
    /// `runFinished{status:"cancelled"}`.
    pub fn cancel(&self) -> Option<String> {
        let active = self.active.lock().ok()?.clone()?;
        // A run that has decided how it ends (it cleared the session's run id before writing
        // `runFinished`) takes no cancel: the session already reads as idle.
        if self.shared.lock().run_id.as_deref() != Some(active.run_id.as_str()) {
            return None;
        }
        active.stop(StopReason::Cancelled);
        Some(active.run_id)
    }

    /// Stop the active run without waiting.
    pub fn request_stop(&self, reason: StopReason) {
        if let Some(active) = self.active.lock().ok().and_then(|a| a.clone()) {
            active.stop(reason);
        }
    }

    /// Stop the active run and wait until it has finished.
    pub async fn stop_and_wait(&self, reason: StopReason) {
        let mut finished = self.run_finished.subscribe();
        let running = self.active.lock().ok().and_then(|a| a.clone()).is_some();
        if !running {
            return;
        }
        self.request_stop(reason);
        loop {
            if self.active.lock().ok().and_then(|a| a.clone()).is_none() {
                return;
            }
            if finished.recv().await.is_err() {
                return;
            }
        }
    }

    /// Close the mailbox (the actor ends once its run, if any, has ended) and end every
    /// subscription.
    pub fn close(&self) {
        self.closing.cancel();
        if let Ok(mut commands) = self.commands.lock() {
            commands.take();
        }
        self.log.close();
    }

    /// Close the session and wait until its actor has ended and its log writer has written
    /// what was queued and stopped: after this nothing of the session touches its file, so it
    /// may be loaded again (unloading an idle session waits for this).
    pub async fn close_and_wait(&self) {
        self.close();
        self.actor_stopped.cancelled().await;
        self.log.writer_stopped().await;
    }

    /// Why a command got no answer: the mailbox closed, or handling it failed (a panic the
    /// daemon logged).
    fn no_answer(&self) -> SessionError {
        let open = self.commands.lock().map(|c| c.is_some()).unwrap_or(false);
        if open {
            SessionError::Internal(
                "internal error: the session failed handling this request; the daemon logged it, please report it".to_owned(),
            )
        } else {
            closed()
        }
    }

    /// Nothing in progress or waiting: no run, no command sent and not yet handled, no steer
    /// or follow-up queued, no subscriber. Only such a session may be unloaded.
    pub fn is_idle(&self) -> bool {
        let no_run = self.active.lock().is_ok_and(|active| active.is_none());
        let state = self.shared.lock();
        no_run
            && state.run_id.is_none()
            && state.steers.is_empty()
            && state.follow_ups.is_empty()
            && state.held.is_empty()
            && self.unhandled_commands.load(Ordering::Acquire) == 0
            && self.log.subscriber_count() == 0
    }

    async fn send(&self, command: Command) -> Result<(), SessionError> {
        let sender = self
            .commands
            .lock()
            .ok()
            .and_then(|c| c.clone())
            .ok_or_else(closed)?;
        let permit = sender.reserve().await.map_err(|_| closed())?;
        // Counted as it is queued (no await in between), so a session is never seen idle with
        // a command in flight, even when the requester goes away after sending it.
        self.unhandled_commands.fetch_add(1, Ordering::AcqRel);
        permit.send(command);
        Ok(())
    }
}

fn closed() -> SessionError {
    SessionError::Conflict("the session is closing (deleted, or the daemon is stopping)".to_owned())
}

/// The actor's own state.
struct Actor {
    /// With the current settings written in: what the next run starts with.
    header: SessionHeader,
    /// Shared with `Session` (what it lists); changed only here.
    settings: Arc<Mutex<SessionSettings>>,
    deps: Arc<SessionDeps>,
    log: Arc<EventLog>,
    shared: Arc<SessionShared>,
    active: Arc<Mutex<Option<ActiveRun>>>,
    recent_requests: VecDeque<(String, String)>,
    tasks: TaskTracker,
    /// The task of the last run started, awaited before the next run starts.
    previous_run: Option<tokio::task::JoinHandle<()>>,
    run_finished: broadcast::Sender<()>,
    /// Shared with `Session`: decremented once a command is handled.
    unhandled_commands: Arc<AtomicUsize>,
    /// Says the actor has ended when it is dropped (`Session::close_and_wait`).
    _stopped: tokio_util::sync::DropGuard,
    /// Fired when the session closes (deleted, unloaded, daemon stopping).
    closing: CancellationToken,
    /// The MCP servers the session holds while it is loaded (released when the actor ends).
    mcp: super::mcp::SessionMcp,
    /// Runs started by task notifications since the user's last input, and their cap.
    notification_chain: super::notification_chain::NotificationChain,
}

impl Actor {
    async fn run(mut self, mut commands: mpsc::Receiver<Command>) {
        use futures::FutureExt;
        while let Some(command) = commands.recv().await {
            // A command that panics (the hook logged it) loses its answer, not the session.
            let handled = std::panic::AssertUnwindSafe(self.handle(command))
                .catch_unwind()
                .await;
            if let Err(payload) = handled {
                tracing::error!(
                    session = %self.header.id,
                    "a session command panicked: {}; the session keeps serving",
                    crate::logging::panic_message(&*payload)
                );
            }
            self.unhandled_commands.fetch_sub(1, Ordering::AcqRel);
        }
        // The mailbox closed: wait for a run still going (it was asked to stop).
        tracing::debug!(session = %self.header.id, "session actor stopped");
    }

    async fn handle(&mut self, command: Command) {
        match command {
            Command::Prompt {
                text,
                client_request_id,
                queue_if_busy,
                options,
                reply,
            } => {
                let result = self
                    .prompt(text, client_request_id, queue_if_busy, options)
                    .await;
                let _ = reply.send(result);
            }
            Command::Steer { text, reply } => {
                let result = self.steer(text).await;
                let _ = reply.send(result);
            }
            Command::FollowUp {
                text,
                origin,
                start_if_idle,
                reply,
            } => {
                let result = self
                    .follow_up(text, None, origin, start_if_idle)
                    .await
                    .map(|(run_id, queued)| QueueMessageResult { run_id, queued });
                let _ = reply.send(result);
            }
            Command::Compact { reply } => {
                let result = self.compact().await;
                let _ = reply.send(result);
            }
            Command::Update { params, reply } => {
                let result = self.update(params).await;
                let _ = reply.send(result);
            }
        }
    }

    /// The run that still takes steers and follow-ups. A run clears this itself, under the
    /// queues' lock, once it has decided to end.
    fn active_run_id(&self) -> Option<String> {
        self.shared.lock().run_id.clone()
    }

    async fn prompt(
        &mut self,
        text: String,
        client_request_id: Option<String>,
        queue_if_busy: bool,
        options: RunOptions,
    ) -> Result<SessionPromptResult, SessionError> {
        if let Some(request_id) = &client_request_id
            && let Some((_, run_id)) = self.recent_requests.iter().find(|(id, _)| id == request_id)
        {
            return Ok(SessionPromptResult {
                run_id: run_id.clone(),
                queued: false,
            });
        }
        if text.trim().is_empty() {
            return Err(SessionError::InvalidParams(
                "the prompt is empty".to_owned(),
            ));
        }
        // The user said something: task notifications may start runs again.
        self.notification_chain.user_input();
        let result = match self.active_run_id() {
            Some(_) if queue_if_busy => {
                let (run_id, queued) = self
                    .follow_up(text, client_request_id.clone(), None, true)
                    .await?;
                SessionPromptResult { run_id, queued }
            }
            Some(run_id) => {
                return Err(SessionError::Conflict(format!(
                    "a run is already active on this session ({run_id}); steer it (session/steer), queue a follow-up (session/followUp), or cancel it first"
                )));
            }
            None => SessionPromptResult {
                run_id: self
                    .start_run(
                        text,
                        UserMessageKind::Prompt,
                        client_request_id.clone(),
                        options,
                    )
                    .await?,
                queued: false,
            },
        };
        if let Some(request_id) = client_request_id {
            if self.recent_requests.len() >= REMEMBERED_REQUEST_IDS {
                self.recent_requests.pop_front();
            }
            self.recent_requests
                .push_back((request_id, result.run_id.clone()));
        }
        Ok(result)
    }

    /// Queue a steer for the active run: persisted first (`steerQueued`), so a crash cannot
    /// lose it without a word, then queued under the queues' lock: a run that has decided to
    /// end takes no steer (it would be left behind), and the steer is refused instead.
    async fn steer(&mut self, text: String) -> Result<QueueMessageResult, SessionError> {
        let no_run = || {
            SessionError::Conflict("no run is active to steer; send a prompt instead".to_owned())
        };
        let run_id = self.active_run_id().ok_or_else(no_run)?;
        self.notification_chain.user_input();
        self.log
            .append(Event::SteerQueued {
                run_id: run_id.clone(),
                text: text.clone(),
            })
            .await
            .map_err(|err| SessionError::Internal(format!("{err:#}")))?;
        let mut state = self.shared.lock();
        if state.run_id.as_deref() != Some(run_id.as_str()) {
            return Err(no_run());
        }
        state.steers.push_back(text);
        Ok(QueueMessageResult {
            run_id,
            queued: true,
        })
    }

    /// Queue a follow-up for the active run (persisted first, so it survives a restart and is
    /// reported if the run ends without it), or start a run with it when none is active.
    /// Returns the run id and whether it was queued.
    async fn follow_up(
        &mut self,
        text: String,
        client_request_id: Option<String>,
        origin: Option<protocol::event::FollowUpOrigin>,
        start_if_idle: bool,
    ) -> Result<(String, bool), SessionError> {
        let internal = |err: anyhow::Error| SessionError::Internal(format!("{err:#}"));
        let from_task = matches!(
            origin,
            Some(protocol::event::FollowUpOrigin::TaskNotification)
        );
        if !from_task {
            self.notification_chain.user_input();
        }
        if let Some(run_id) = self.active_run_id() {
            self.log
                .append(Event::FollowUpQueued {
                    run_id: run_id.clone(),
                    text: text.clone(),
                    client_request_id: client_request_id.clone(),
                    origin,
                })
                .await
                .map_err(internal)?;
            // Under the queues' lock: the run still takes it, or it has decided to end and
            // the follow-up starts the next run instead.
            let mut state = self.shared.lock();
            if state.run_id.as_deref() == Some(run_id.as_str()) {
                state.follow_ups.push_back(text);
                return Ok((run_id, true));
            }
        }
        if !start_if_idle {
            self.hold(text);
            return Ok((String::new(), true));
        }
        if from_task
            && let super::notification_chain::Admission::Hold { warning } =
                self.notification_chain.admit()
        {
            self.hold(text);
            if let Err(err) = self.log.append(Event::Warning { message: warning }).await {
                tracing::warn!(session = %self.header.id, "a held notification's warning was not logged: {err:#}");
            }
            return Ok((String::new(), true));
        }
        let run_id = self
            .start_run(
                text,
                UserMessageKind::FollowUp,
                client_request_id,
                RunOptions::default(),
            )
            .await?;
        Ok((run_id, false))
    }

    /// Keep a daemon message for the session's next run, where it comes before that run's own
    /// message (at most `MAX_HELD_MESSAGES`, the oldest dropped).
    fn hold(&self, text: String) {
        let mut state = self.shared.lock();
        if state.held.len() >= crate::agent::sink::MAX_HELD_MESSAGES {
            state.held.pop_front();
            tracing::warn!(session = %self.header.id, "too many held notifications; the oldest is dropped (its task keeps the result)");
        }
        state.held.push_back(text);
    }

    /// Prepare everything that can fail, persist `runStarted`, then spawn the run, which
    /// persists the user's message; returns once that message is persisted (or the run already
    /// ended). From `runStarted` on, whatever fails or panics ends the run with `runFinished`
    /// (`Run::execute_guarded`), so the session never stays `running` without a run.
    async fn start_run(
        &mut self,
        text: String,
        kind: UserMessageKind,
        client_request_id: Option<String>,
        options: RunOptions,
    ) -> Result<String, SessionError> {
        let (llm, context_limits) = self.model()?;
        let config = self
            .deps
            .config
            .as_ref()
            .map_err(|err| SessionError::Config(err.clone()))?;
        let internal = |err: anyhow::Error| SessionError::Internal(format!("{err:#}"));
        // Both read the workspace's files (on the blocking pool): at the same time.
        let (permissions, servers) = tokio::join!(
            super::run_permissions::run_permissions(&self.header, &self.shared, &self.deps, config),
            self.mcp.for_run(&self.header, &self.deps, config),
        );
        let (mut permissions, mut warnings) = permissions.map_err(internal)?;
        permissions.hold_approvals = options.hold_approvals;
        permissions.parent_run_id = options.parent_run_id.clone();
        let servers = servers.map_err(internal)?;
        self.mcp
            .register_status_events(&self.deps.mcp_status, &self.log);
        warnings.extend(servers.warnings);
        let tools = crate::agent::tool_set::RunTools::new(
            self.deps.tools.clone(),
            servers.handles,
            config.mcp.startup_grace,
        )
        .with_filter(super::subagent::run_filter(&self.header));
        let mut tool_context = crate::tools::ToolContext::new(
            std::path::PathBuf::from(&self.header.cwd),
            self.deps.fetch.clone(),
        );
        tool_context.limits = self.deps.tool_limits.clone();
        tool_context.session_id = Some(self.header.id.clone());
        tool_context.sandbox = Arc::clone(&self.deps.sandbox);
        tool_context.background = Some(crate::tools::BackgroundShells {
            tasks: Arc::clone(&self.deps.tasks),
            shells: Arc::clone(&self.deps.shell_tasks),
            session_id: self.header.id.clone(),
        });
        // Listings and searches apply the run's Read deny rules to every path they find.
        tool_context.read_filter =
            crate::tools::ReadFilter::new(Arc::new(crate::permission::ReadWithholdRules::new(
                &permissions.rules,
                &tool_context.workspace,
                permissions.home.as_deref(),
            )));
        // The previous run may still be writing its `runFinished`: runs of a session never
        // overlap in the log.
        if let Some(previous) = self.previous_run.take() {
            let _ = previous.await;
        }
        let run_id = format!("run_{}", uuid::Uuid::new_v4().simple());
        // Its children answer to whoever answers this run, and hold their approvals as it does.
        tool_context.subagents = super::subagent::launcher_for(
            &self.header,
            &self.deps,
            super::subagent::ParentRun {
                run_id: run_id.clone(),
                hold_approvals: options.hold_approvals,
            },
        );
        // A tool call left without a result (its pairing could not be written) is paired
        // before anything follows it: providers reject an unpaired call.
        crate::agent::pair_orphaned_tool_calls(
            &*self.log,
            &self.shared,
            "interrupted: the result of this tool call was lost (the session log could not be written)",
            crate::agent::Pairing::Quiet,
        )
        .await
        .map_err(internal)?;
        self.log
            .append(Event::RunStarted {
                run_id: run_id.clone(),
                prompt: text.clone(),
                client_request_id,
            })
            .await
            .map_err(internal)?;
        {
            let mut state = self.shared.lock();
            // Steers and follow-ups still queued belong to an earlier run that ended without
            // delivering them (cancelled or failed): they stayed visible in `session/get` for
            // the user to resend. Left here, a stale steer would make this run skip its tool
            // calls ("skipped: user steered") and a stale follow-up would be sent after this
            // run's answer, so a new run starts with empty queues.
            let stale_steers = std::mem::take(&mut state.steers);
            let stale_follow_ups = std::mem::take(&mut state.follow_ups);
            if !stale_steers.is_empty() || !stale_follow_ups.is_empty() {
                tracing::debug!(
                    session = %self.header.id,
                    steers = stale_steers.len(),
                    follow_ups = stale_follow_ups.len(),
                    "dropping messages queued for an earlier run"
                );
            }
            state.run_id = Some(run_id.clone());
            state.updated_at = Some(SystemTime::now());
        }

        let active = ActiveRun {
            run_id: run_id.clone(),
            cancel: CancellationToken::new(),
            stop_reason: Arc::new(Mutex::new(None)),
        };
        if let Ok(mut slot) = self.active.lock() {
            *slot = Some(active.clone());
        }
        // A subagent's approvals also reach its parent's subscribers.
        let run_log = super::child_log::run_log_for(&self.header, &self.deps, &self.log).await;
        let (budget, budget_warning) =
            crate::agent::budget::RunBudget::for_run(self.header.max_budget_usd, llm.provider());
        warnings.extend(budget_warning);
        let run = Run {
            session_id: self.header.id.as_str().into(),
            run_id: run_id.clone(),
            system: self.header.system_prompt.as_str().into(),
            llm,
            tools,
            tool_context,
            max_steps: [self.header.max_turns, options.max_steps]
                .into_iter()
                .flatten()
                .fold(config.max_steps, u32::min)
                .max(1),
            budget,
            shared: self.shared.clone(),
            log: run_log,
            cancel: active.cancel.clone(),
            stop_reason: active.stop_reason.clone(),
            permissions,
            context_limits,
        };
        let start = RunStart {
            text,
            kind,
            warnings,
        };
        let ended_run_id = run_id.clone();
        let active_slot = self.active.clone();
        let shared = self.shared.clone();
        let run_finished = self.run_finished.clone();
        let (begun, begun_rx) = oneshot::channel();
        let handle = self.tasks.spawn(async move {
            let outcome = run.execute_guarded(start, begun).await;
            tracing::debug!(run = %ended_run_id, status = ?outcome.status, "run finished");
            // Clear the active run here, not only in the actor: the actor may be gone.
            {
                let mut state = shared.lock();
                state.run_id = None;
                state.updated_at = Some(SystemTime::now());
            }
            if let Ok(mut slot) = active_slot.lock()
                && slot.as_ref().map(|a| a.run_id.as_str()) == Some(ended_run_id.as_str())
            {
                *slot = None;
            }
            let _ = run_finished.send(());
        });
        self.previous_run = Some(handle);
        // Answer once the prompt is in the history (or the run already ended).
        let _ = begun_rx.await;
        Ok(run_id)
    }
}
