//! One session as an actor: commands (prompt, steer, follow-up, cancel) go in through a
//! channel and are handled one at a time, so runs of a session are serialised while sessions
//! run concurrently; events come out through the session's `EventLog`. This file holds the
//! handle the daemon keeps (`Session`); the actor's mailbox is in `actor_mailbox.rs`, how it
//! starts in `actor_load.rs`, how it assembles a run in `run_assembly.rs`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::SessionShared;
use super::events::EventLog;
use crate::store::{SessionHeader, SessionSettings};
use agentd_agent::StopReason;
use mailbox::{Actor, Command};
use protocol::session::{
    QueueMessageResult, SessionCompactResult, SessionInfo, SessionPromptResult, SessionStatus,
    SessionUpdateParams,
};

pub use super::error::SessionError;
pub use run_assembly::RunOptions;

#[path = "actor_compact.rs"]
mod compact;
#[path = "actor_load.rs"]
mod load;
#[path = "actor_mailbox.rs"]
mod mailbox;
#[path = "run_assembly.rs"]
mod run_assembly;
#[path = "actor_update.rs"]
mod update;

/// A loaded session: its header, log, shared state and the actor's mailbox.
pub struct Session {
    /// As created (`settings` holds what `session/update` changed since).
    pub header: SessionHeader,
    /// Provider, model, mode and title as they now are; the actor changes them
    /// (`session/update`), runs start with them.
    settings: Arc<Mutex<SessionSettings>>,
    pub log: Arc<EventLog>,
    pub shared: Arc<SessionShared>,
    /// Boxed: a command is big (a prompt's options, an update's params) and the queue's first
    /// block is made with the channel, for every loaded session, idle or not.
    commands: Mutex<Option<mpsc::Sender<Box<Command>>>>,
    /// Fires the active run's cancellation from outside the actor (shutdown, delete).
    active: Arc<Mutex<Option<ActiveRun>>>,
    run_finished: broadcast::Sender<()>,
    /// Commands sent and not yet handled by the actor (eviction waits for zero).
    unhandled_commands: Arc<AtomicUsize>,
    /// Cancelled once the actor task has ended (it holds the drop guard).
    actor_stopped: CancellationToken,
    /// Cancelled by `close`: stops work the actor does itself (a `session/compact` summary).
    closing: CancellationToken,
    /// The run found unfinished when the session loaded, and the log's last seq before the load
    /// appended anything: how that run ended (resumed, or recorded interrupted) is after it.
    pub(crate) loaded_run: Option<LoadedRun>,
}

/// A run the session was in when it loaded (see `Session::loaded_run`).
#[derive(Clone, Debug)]
pub(crate) struct LoadedRun {
    pub(crate) run_id: String,
    pub(crate) after_seq: u64,
}

#[derive(Clone)]
struct ActiveRun {
    run_id: String,
    cancel: CancellationToken,
    stop_reason: Arc<Mutex<Option<StopReason>>>,
    /// Aborts the run's task (a graceful stop suspends the run: it resumes at the next start).
    abort: Arc<Mutex<Option<tokio::task::AbortHandle>>>,
    /// Cancelled once the run's task has ended, finished or aborted.
    ended: CancellationToken,
}

impl ActiveRun {
    fn stop(&self, reason: StopReason) {
        if let Ok(mut slot) = self.stop_reason.lock() {
            slot.get_or_insert(reason);
        }
        self.cancel.cancel();
    }
}

impl Session {
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
            agentd_core::conversation::Message::User { content, .. } => {
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
            usage: agentd_core::conversation::wire::usage(&state.usage),
            preview,
            parent_session_id: self.header.parent_session_id.clone(),
            cost_usd: state.cost_usd,
            forked_from: self.header.forked_from.clone(),
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
        self.compact_focused(None).await
    }

    /// [`Session::compact`], telling the summariser what to keep (`/compact FOCUS`).
    pub async fn compact_focused(
        &self,
        focus: Option<String>,
    ) -> Result<SessionCompactResult, SessionError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Compact { focus, reply }).await?;
        answer.await.map_err(|_| self.no_answer())?
    }

    /// Holds the session idle: no run starts (prompts wait) until the guard is dropped.
    /// Refused while a run is active.
    pub async fn hold(&self) -> Result<oneshot::Sender<()>, SessionError> {
        let (reply, answer) = oneshot::channel();
        let (release, held) = oneshot::channel();
        self.send(Command::Hold {
            reply,
            release: held,
        })
        .await?;
        answer.await.map_err(|_| self.no_answer())??;
        Ok(release)
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

    /// Stop the active run where it is, unfinished, so that it resumes at the next start: its
    /// task is aborted (nothing more of it is written; its tools' processes are killed with
    /// their groups) and `runSuspended` is recorded. Returns whether a run was suspended.
    pub async fn suspend_and_wait(&self) -> bool {
        let Some(active) = self.active.lock().ok().and_then(|a| a.clone()) else {
            return false;
        };
        let abort = active.abort.lock().ok().and_then(|mut abort| abort.take());
        match abort {
            Some(abort) => abort.abort(),
            // Not spawned yet: it ends before it starts.
            None => active.stop(StopReason::Shutdown),
        }
        active.ended.cancelled().await;
        if let Ok(mut slot) = self.active.lock()
            && slot.as_ref().map(|a| a.run_id.as_str()) == Some(active.run_id.as_str())
        {
            *slot = None;
        }
        // A run that finished on its own as it was aborted has recorded its end.
        if self.shared.lock().run_id.as_deref() != Some(active.run_id.as_str()) {
            return false;
        }
        let suspended = self
            .log
            .append(protocol::event::Event::RunSuspended {
                run_id: active.run_id.clone(),
                reason: "the daemon is stopping; the run resumes when it starts again".to_owned(),
            })
            .await;
        if let Err(err) = suspended {
            tracing::warn!(session = %self.header.id, "cannot record the run suspended: {err:#}");
        }
        true
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
        permit.send(Box::new(command));
        Ok(())
    }
}

fn closed() -> SessionError {
    SessionError::Conflict("the session is closing (deleted, or the daemon is stopping)".to_owned())
}
