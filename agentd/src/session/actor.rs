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

use super::events::{EventLog, Published};
use super::{SessionDeps, SessionShared};
use crate::agent::{Run, StopReason, to_wire_usage};
use crate::conversation::{Message, ToolSpec};
use crate::llm::LlmClient;
use crate::store::{self, SessionHeader};
use protocol::event::{Event, MessageRole, UserMessageKind};
use protocol::session::{PromptResult, QueueMessageResult, SessionInfo, SessionStatus};

/// Commands queued per session before senders wait.
const COMMAND_QUEUE: usize = 64;
/// `clientRequestId`s remembered per session for idempotent prompts.
const REMEMBERED_REQUEST_IDS: usize = 256;

/// Why a session request failed; mapped to JSON-RPC errors by the RPC layer.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    InvalidParams(String),
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Internal(String),
}

impl SessionError {
    pub fn not_found(id: &str) -> Self {
        SessionError::NotFound(format!(
            "session not found: {id}; list sessions with `agentctl sessions list`"
        ))
    }
}

/// A loaded session: its header, log, shared state and the actor's mailbox.
pub struct Session {
    pub header: SessionHeader,
    pub log: Arc<EventLog>,
    pub shared: Arc<SessionShared>,
    commands: Mutex<Option<mpsc::Sender<Command>>>,
    /// Fires the active run's cancellation from outside the actor (shutdown, delete).
    active: Arc<Mutex<Option<ActiveRun>>>,
    run_finished: broadcast::Sender<()>,
    /// Commands sent and not yet handled by the actor (eviction waits for zero).
    unhandled_commands: Arc<AtomicUsize>,
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
        reply: oneshot::Sender<Result<PromptResult, SessionError>>,
    },
    Steer {
        text: String,
        reply: oneshot::Sender<Result<QueueMessageResult, SessionError>>,
    },
    FollowUp {
        text: String,
        reply: oneshot::Sender<Result<QueueMessageResult, SessionError>>,
    },
}

impl Session {
    /// Load a session from its file, repair an interrupted run, and start its actor.
    pub(super) async fn load(
        header: SessionHeader,
        deps: Arc<SessionDeps>,
        daemon_events: broadcast::Sender<Arc<Published>>,
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
        let log = EventLog::open(&header.id, path, loaded.last_seq, daemon_events)
            .await
            .map_err(|err| SessionError::Internal(format!("{err:#}")))?;
        let log = Arc::new(log);
        let shared = Arc::new(SessionShared::default());
        {
            let mut state = shared.lock();
            state.history = loaded.history;
            state.usage = loaded.usage;
            state.remembered_allow_rules = loaded.session_allow_rules;
        }
        for (run_id, approval_id, tool_call_id) in loaded.unresolved_approvals {
            super::recovery::expire_approval(&log, run_id, approval_id, tool_call_id)
                .await
                .map_err(|err| SessionError::Internal(format!("{err:#}")))?;
        }
        if let Some(run_id) = loaded.unfinished_run {
            super::recovery::repair_interrupted_run(&log, &shared, &run_id)
                .await
                .map_err(|err| SessionError::Internal(format!("{err:#}")))?;
        }
        let (commands_tx, commands_rx) = mpsc::channel(COMMAND_QUEUE);
        let active = Arc::new(Mutex::new(None));
        let (run_finished, _) = broadcast::channel(4);
        let unhandled_commands = Arc::new(AtomicUsize::new(0));
        let actor = Actor {
            header: header.clone(),
            deps,
            log: log.clone(),
            shared: shared.clone(),
            active: active.clone(),
            recent_requests: VecDeque::new(),
            tasks: tasks.clone(),
            previous_run: None,
            run_finished: run_finished.clone(),
            unhandled_commands: unhandled_commands.clone(),
        };
        tasks.spawn(actor.run(commands_rx));
        Ok(Session {
            header,
            log,
            shared,
            commands: Mutex::new(Some(commands_tx)),
            active,
            run_finished,
            unhandled_commands,
        })
    }

    pub fn id(&self) -> &str {
        &self.header.id
    }

    /// The session as listed.
    pub fn info(&self) -> SessionInfo {
        let state = self.shared.lock();
        SessionInfo {
            session_id: self.header.id.clone(),
            title: self.header.title.clone(),
            cwd: self.header.cwd.clone(),
            provider: self.header.provider.clone(),
            model: self.header.model.clone(),
            permission_mode: self.header.permission_mode,
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
            usage: to_wire_usage(&state.usage),
        }
    }

    pub async fn prompt(
        &self,
        text: String,
        client_request_id: Option<String>,
        queue_if_busy: bool,
    ) -> Result<PromptResult, SessionError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Prompt {
            text,
            client_request_id,
            queue_if_busy,
            reply,
        })
        .await?;
        answer.await.map_err(|_| closed())?
    }

    pub async fn steer(&self, text: String) -> Result<QueueMessageResult, SessionError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Steer { text, reply }).await?;
        answer.await.map_err(|_| closed())?
    }

    pub async fn follow_up(&self, text: String) -> Result<QueueMessageResult, SessionError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::FollowUp { text, reply }).await?;
        answer.await.map_err(|_| closed())?
    }

    /// Cancel the active run; returns its id, or None when idle. The outcome arrives as
    /// `runFinished{status:"cancelled"}`.
    pub fn cancel(&self) -> Option<String> {
        let active = self.active.lock().ok()?.clone()?;
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
        if let Ok(mut commands) = self.commands.lock() {
            commands.take();
        }
        self.log.close();
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
    header: SessionHeader,
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
}

impl Actor {
    async fn run(mut self, mut commands: mpsc::Receiver<Command>) {
        while let Some(command) = commands.recv().await {
            match command {
                Command::Prompt {
                    text,
                    client_request_id,
                    queue_if_busy,
                    reply,
                } => {
                    let result = self.prompt(text, client_request_id, queue_if_busy).await;
                    let _ = reply.send(result);
                }
                Command::Steer { text, reply } => {
                    let result = match self.active_run_id() {
                        Some(run_id) => {
                            self.shared.lock().steers.push_back(text);
                            Ok(QueueMessageResult {
                                run_id,
                                queued: true,
                            })
                        }
                        None => Err(SessionError::Conflict(
                            "no run is active to steer; send a prompt instead".to_owned(),
                        )),
                    };
                    let _ = reply.send(result);
                }
                Command::FollowUp { text, reply } => {
                    let result =
                        match self.active_run_id() {
                            Some(run_id) => {
                                self.shared.lock().follow_ups.push_back(text);
                                Ok(QueueMessageResult {
                                    run_id,
                                    queued: true,
                                })
                            }
                            None => self.start_run(text, UserMessageKind::FollowUp).await.map(
                                |run_id| QueueMessageResult {
                                    run_id,
                                    queued: false,
                                },
                            ),
                        };
                    let _ = reply.send(result);
                }
            }
            self.unhandled_commands.fetch_sub(1, Ordering::AcqRel);
        }
        // The mailbox closed: wait for a run still going (it was asked to stop).
        tracing::debug!(session = %self.header.id, "session actor stopped");
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
    ) -> Result<PromptResult, SessionError> {
        if let Some(request_id) = &client_request_id
            && let Some((_, run_id)) = self.recent_requests.iter().find(|(id, _)| id == request_id)
        {
            return Ok(PromptResult {
                run_id: run_id.clone(),
                queued: false,
            });
        }
        if text.trim().is_empty() {
            return Err(SessionError::InvalidParams(
                "the prompt is empty".to_owned(),
            ));
        }
        let result = match self.active_run_id() {
            Some(run_id) if queue_if_busy => {
                self.shared.lock().follow_ups.push_back(text);
                PromptResult {
                    run_id,
                    queued: true,
                }
            }
            Some(run_id) => {
                return Err(SessionError::Conflict(format!(
                    "a run is already active on this session ({run_id}); steer it (session/steer), queue a follow-up (session/followUp), or cancel it first"
                )));
            }
            None => PromptResult {
                run_id: self.start_run(text, UserMessageKind::Prompt).await?,
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

    /// Persist the start of a run and its first user message, then spawn the run.
    async fn start_run(
        &mut self,
        text: String,
        kind: UserMessageKind,
    ) -> Result<String, SessionError> {
        let config = self
            .deps
            .config
            .as_ref()
            .map_err(|err| SessionError::Config(err.clone()))?;
        let provider = config
            .resolve_provider(Some(&format!(
                "{}:{}",
                self.header.provider, self.header.model
            )))
            .map_err(|err| SessionError::Config(err.to_string()))?;
        let llm = LlmClient::new(provider, self.deps.http.clone());
        // The previous run may still be writing its `runFinished`: runs of a session never
        // overlap in the log.
        if let Some(previous) = self.previous_run.take() {
            let _ = previous.await;
        }
        let run_id = format!("run_{}", uuid::Uuid::new_v4().simple());
        let internal = |err: anyhow::Error| SessionError::Internal(format!("{err:#}"));
        self.log
            .append(Event::RunStarted {
                run_id: run_id.clone(),
                prompt: text.clone(),
            })
            .await
            .map_err(internal)?;
        let message = Message::User {
            content: text.clone(),
        };
        self.log.append_message(&message).await.map_err(internal)?;
        let history = {
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
            state.history.push(message);
            state.run_id = Some(run_id.clone());
            state.updated_at = Some(SystemTime::now());
            state.history.clone()
        };
        self.log
            .append(Event::MessageCompleted {
                run_id: run_id.clone(),
                role: MessageRole::User,
                content: text,
                kind: Some(kind),
                tool_calls: Vec::new(),
            })
            .await
            .map_err(internal)?;

        let active = ActiveRun {
            run_id: run_id.clone(),
            cancel: CancellationToken::new(),
            stop_reason: Arc::new(Mutex::new(None)),
        };
        if let Ok(mut slot) = self.active.lock() {
            *slot = Some(active.clone());
        }
        let tool_specs: Arc<[ToolSpec]> = self.deps.tools.specs().into();
        let mut tool_context = crate::tools::ToolContext::new(
            std::path::PathBuf::from(&self.header.cwd),
            self.deps.http.clone(),
        );
        tool_context.limits = self.deps.tool_limits.clone();
        let permissions = self.run_permissions(config).await.map_err(internal)?;
        let run = Run {
            session_id: self.header.id.as_str().into(),
            run_id: run_id.clone(),
            system: self.header.system_prompt.as_str().into(),
            llm,
            tools: self.deps.tools.clone(),
            tool_specs,
            tool_context,
            max_steps: config.max_steps,
            shared: self.shared.clone(),
            log: self.log.clone(),
            cancel: active.cancel.clone(),
            stop_reason: active.stop_reason.clone(),
            permissions,
        };
        let ended_run_id = run_id.clone();
        let active_slot = self.active.clone();
        let shared = self.shared.clone();
        let run_finished = self.run_finished.clone();
        let handle = self.tasks.spawn(async move {
            let outcome = run.execute(history).await;
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
        Ok(run_id)
    }
}

impl Actor {
    /// The permission inputs of a run: user rules (config), project rules (read now, so edits
    /// apply to the next run; problems are reported as warnings), the session's own rules and
    /// remembered "allow for session" answers.
    async fn run_permissions(
        &self,
        config: &crate::config::Config,
    ) -> anyhow::Result<crate::agent::gate::RunPermissions> {
        use crate::permission::{RuleList, RuleSet, RuleSource, load_project_settings};
        let cwd = std::path::PathBuf::from(&self.header.cwd);
        let project = tokio::task::spawn_blocking(move || load_project_settings(&cwd)).await?;
        let project_rules = match project {
            Ok(settings) => {
                for error in &settings.errors {
                    self.log
                        .append(Event::Warning {
                            message: format!("ignored permission rule: {error}"),
                        })
                        .await?;
                }
                settings.rules
            }
            Err(err) => {
                self.log
                    .append(Event::Warning {
                        message: format!("project settings not used: {err}"),
                    })
                    .await?;
                RuleSet::default()
            }
        };
        let session = &self.header.permission_rules;
        let (mut session_rules, _) = RuleSet::parse(
            &RuleSource::session(),
            &session.allow,
            &session.ask,
            &session.deny,
        );
        let remembered = self.shared.lock().remembered_allow_rules.clone();
        for text in remembered {
            if let Ok(rule) =
                crate::permission::Rule::parse(&text, RuleSource::session(), RuleList::Allow)
            {
                session_rules.push(rule);
            }
        }
        // The user layer: config.toml as loaded at startup, plus the rules "always allow"
        // appended to it since (the config is not reloaded).
        let mut user_rules = config.permissions.rules.clone();
        let user_source =
            RuleSource::file(crate::permission::RuleLayer::User, &self.deps.paths.config);
        for text in self.deps.approvals.always_rules() {
            if let Ok(rule) =
                crate::permission::Rule::parse(&text, user_source.clone(), RuleList::Allow)
            {
                user_rules.push(rule);
            }
        }
        Ok(crate::agent::gate::RunPermissions {
            mode: self.header.permission_mode.into(),
            rules: RuleSet::merge([user_rules, project_rules, session_rules]),
            home: directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf()),
            approval_timeout: std::time::Duration::from_secs(
                config.permissions.approval_timeout_secs,
            ),
            broker: self.deps.approvals.clone(),
        })
    }
}
