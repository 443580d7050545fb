//! The actor's mailbox: the commands a `Session` sends, the loop that handles them one at a
//! time, and the queueing of prompts, steers and follow-ups (into the active run, or held for
//! the next).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{ActiveRun, RunOptions, SessionError};
use crate::session::events::EventLog;
use crate::session::{SessionDeps, SessionShared};
use crate::store::{REMEMBERED_REQUEST_IDS, SessionHeader, SessionSettings};
use protocol::event::{Event, UserMessageKind};
use protocol::session::{
    QueueMessageResult, SessionCompactResult, SessionPromptResult, SessionUpdateParams,
};

pub(super) enum Command {
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
        /// What the summary should keep (`/compact FOCUS`).
        focus: Option<String>,
        reply: oneshot::Sender<Result<SessionCompactResult, SessionError>>,
    },
    Update {
        params: SessionUpdateParams,
        reply: oneshot::Sender<Result<(), SessionError>>,
    },
    /// Nothing else happens on the session until `release` fires or is dropped: a rewind
    /// writes the workspace. Refused while a run is active.
    Hold {
        reply: oneshot::Sender<Result<(), SessionError>>,
        release: oneshot::Receiver<()>,
    },
    /// Go on with the run the daemon stopped in (sent once, as the loaded session starts).
    Resume {
        run_id: String,
        plan: agentd_agent::resume::Resumption,
        /// What its `runStarted` recorded beyond the prompt: it goes on with the same.
        options: Option<protocol::event::RunStartOptions>,
    },
}

/// The actor's own state.
pub(super) struct Actor {
    /// With the current settings written in: what the next run starts with.
    pub(super) header: SessionHeader,
    /// Shared with `Session` (what it lists); changed only here.
    pub(super) settings: Arc<Mutex<SessionSettings>>,
    pub(super) deps: Arc<SessionDeps>,
    pub(super) log: Arc<EventLog>,
    pub(super) shared: Arc<SessionShared>,
    /// What the SessionStart hooks gave, until the first prompt takes it.
    pub(super) session_start: agentd_agent::hooks::PendingStart,
    pub(super) active: Arc<Mutex<Option<ActiveRun>>>,
    pub(super) recent_requests: VecDeque<(String, String)>,
    pub(super) tasks: TaskTracker,
    /// The task of the last run started, awaited before the next run starts.
    pub(super) previous_run: Option<tokio::task::JoinHandle<()>>,
    pub(super) run_finished: broadcast::Sender<()>,
    /// Shared with `Session`: decremented once a command is handled.
    pub(super) unhandled_commands: Arc<AtomicUsize>,
    /// Says the actor has ended when it is dropped (`Session::close_and_wait`).
    pub(super) _stopped: tokio_util::sync::DropGuard,
    /// Fired when the session closes (deleted, unloaded, daemon stopping).
    pub(super) closing: CancellationToken,
    /// The MCP servers the session holds while it is loaded (released when the actor ends).
    pub(super) mcp: crate::session::mcp::SessionMcp,
    /// Runs started by task notifications since the user's last input, and their cap.
    pub(super) notification_chain: crate::session::notification_chain::NotificationChain,
}

impl Actor {
    pub(super) async fn run(mut self, mut commands: mpsc::Receiver<Box<Command>>) {
        use futures::FutureExt;
        while let Some(command) = commands.recv().await {
            // A command that panics (the hook logged it) loses its answer, not the session.
            // Boxed: handling a command is a big future (a compaction, a run's start), and
            // inline it would make every idle session's task as big.
            let handled = std::panic::AssertUnwindSafe(Box::pin(self.handle(*command)))
                .catch_unwind()
                .await;
            if let Err(payload) = handled {
                tracing::error!(
                    session = %self.header.id,
                    "a session command panicked: {}; the session keeps serving",
                    agentd_core::logging::panic_message(&*payload)
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
            Command::Compact { focus, reply } => {
                let result = self.compact(focus).await;
                let _ = reply.send(result);
            }
            Command::Update { params, reply } => {
                let result = self.update(params).await;
                let _ = reply.send(result);
            }
            Command::Hold { reply, release } => {
                if let Some(run_id) = self.active_run_id() {
                    let _ = reply.send(Err(SessionError::Conflict(format!(
                        "a run is active on this session ({run_id}); rewind once it has finished (runFinished), or cancel it first"
                    ))));
                    return;
                }
                if let Some(previous) = self.previous_run.take() {
                    let _ = previous.await;
                }
                if reply.send(Ok(())).is_ok() {
                    let _ = release.await;
                }
            }
            Command::Resume {
                run_id,
                plan,
                options,
            } => self.resume(run_id, plan, options).await,
        }
    }

    /// Go on with `run_id` after a restart, with the options its `runStarted` recorded (its
    /// tool narrowing, step limit, model…); when it cannot even start (the session's model is
    /// gone from the configuration), it is recorded as interrupted with the reason.
    async fn resume(
        &mut self,
        run_id: String,
        plan: agentd_agent::resume::Resumption,
        recorded: Option<protocol::event::RunStartOptions>,
    ) {
        let options = RunOptions::resumed(recorded.as_ref());
        let opening = super::run_assembly::Opening::Resume {
            run_id: run_id.clone(),
            plan,
        };
        if let Err(err) = self.launch_run(opening, options).await {
            tracing::warn!(session = %self.header.id, run = %run_id, "cannot resume the run: {err}");
            let why = format!("the run could not be resumed after the restart: {err}");
            let repaired = crate::session::recovery::repair_interrupted_run(
                &self.log,
                &self.shared,
                &run_id,
                Vec::new(),
                Vec::new(),
                why,
            )
            .await;
            if let Err(err) = repaired {
                tracing::error!(session = %self.header.id, "cannot record the run interrupted: {err:#}");
            }
            self.shared.lock().run_id = None;
            crate::session::resume::clear_active(&self.deps.paths, &self.header.id).await;
        }
    }

    /// The run that still takes steers and follow-ups. A run clears this itself, under the
    /// queues' lock, once it has decided to end.
    pub(super) fn active_run_id(&self) -> Option<String> {
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
        if text.trim().is_empty() && options.images.is_empty() {
            return Err(SessionError::InvalidParams(
                "the prompt is empty".to_owned(),
            ));
        }
        // The user said something: task notifications may start runs again.
        self.notification_chain.user_input();
        let result = match self.active_run_id() {
            Some(run_id) if queue_if_busy && !options.images.is_empty() => {
                return Err(SessionError::Conflict(format!(
                    "a run is active on this session ({run_id}) and a queued follow-up carries no images; send the images with a prompt once the run ends"
                )));
            }
            Some(_) if queue_if_busy => {
                let (run_id, queued) = self
                    .follow_up(text, client_request_id.clone(), None, true)
                    .await?;
                SessionPromptResult { run_id, queued }
            }
            Some(run_id) => {
                return Err(SessionError::Conflict(format!(
                    "a run is already active on this session ({run_id}); steer it, queue a follow-up, or cancel it first"
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
            self.hold(text, from_task);
            return Ok((String::new(), true));
        }
        if from_task
            && let crate::session::notification_chain::Admission::Hold { warning } =
                self.notification_chain.admit()
        {
            self.hold(text, from_task);
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
    /// message (at most `MAX_HELD_MESSAGES`, the oldest dropped). A task's notification
    /// (`from_task`) stays owed in its task's record until a run takes it.
    fn hold(&mut self, text: String, from_task: bool) {
        let task_id = from_task
            .then(|| crate::session::subagent::notification_task_id(&text).map(str::to_owned))
            .flatten();
        let mut state = self.shared.lock();
        if state.held.len() >= agentd_agent::sink::MAX_HELD_MESSAGES {
            state.held.pop_front();
            self.notification_chain.dropped_oldest();
            tracing::warn!(session = %self.header.id, "too many held notifications; the oldest is dropped (its task keeps the result)");
        }
        state.held.push_back(text);
        self.notification_chain.held(task_id);
    }
}
