//! How a session's actor starts: from its file (read back, an interrupted run repaired) or
//! from a file just created, and the actor task spawned beside the `Session` handle.

use std::collections::VecDeque;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{Actor, Session, SessionError};
use crate::session::events::{DaemonStream, EventLog, LogPosition};
use crate::session::{SessionDeps, SessionShared};
use crate::store::{self, SessionHeader, SessionSettings};

/// Commands queued per session before senders wait.
const COMMAND_QUEUE: usize = 64;

impl Session {
    /// Load a session from its file, resume (`resume`: it was marked active at startup) or
    /// repair an interrupted run, and start its actor.
    pub(in crate::session) async fn load(
        header: SessionHeader,
        deps: Arc<SessionDeps>,
        daemon: DaemonStream,
        tasks: &TaskTracker,
        resume: bool,
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
        let plan = match &loaded.unfinished_run {
            Some(_) if resume => Some(crate::session::resume::plan(
                &loaded,
                approval_timeout(&deps),
                std::time::SystemTime::now(),
            )),
            _ => None,
        };
        let shared = Arc::new(SessionShared::default());
        {
            let mut state = shared.lock();
            state.history = loaded.history;
            state.usage = loaded.usage;
            state.cost_usd = loaded.cost_usd;
            state.remembered_allow_rules = loaded.session_allow_rules;
            state.context = loaded.context;
        }
        shared.loaded_tools.restore(loaded.loaded_tools);
        // Approvals pending at the stop expire first (before the run's end is recorded), but
        // those of a run that goes on: it asks them again.
        let resumed_run = match (&loaded.unfinished_run, &plan) {
            (Some(run_id), Some(Ok(_))) => Some(run_id.clone()),
            _ => None,
        };
        for (run_id, approval_id, tool_call_id) in loaded.unresolved_approvals {
            // The resumed run asks its own again.
            if resumed_run.as_deref() == Some(run_id.as_str()) {
                continue;
            }
            crate::session::recovery::expire_approval(&log, run_id, approval_id, tool_call_id)
                .await
                .map_err(|err| SessionError::Internal(format!("{err:#}")))?;
        }
        let loaded_run = loaded
            .unfinished_run
            .clone()
            .map(|run_id| super::LoadedRun {
                run_id,
                after_seq: loaded.last_seq,
            });
        let resumed = match (loaded.unfinished_run, plan) {
            (Some(run_id), Some(Ok(plan))) => {
                // Its queues as the log left them: delivered by the run as it goes on.
                let mut state = shared.lock();
                state.steers.extend(loaded.queued_steers);
                state.follow_ups.extend(loaded.queued_follow_ups);
                state.run_id = Some(run_id.clone());
                Some((run_id, plan, loaded.progress.options))
            }
            (Some(run_id), plan) => {
                let why = match plan {
                    Some(Err(why)) => why,
                    _ => "the daemon stopped while this run was active".to_owned(),
                };
                crate::session::recovery::repair_interrupted_run(
                    &log,
                    &shared,
                    &run_id,
                    loaded.queued_steers,
                    loaded.queued_follow_ups,
                    why,
                )
                .await
                .map_err(|err| SessionError::Internal(format!("{err:#}")))?;
                None
            }
            (None, _) => None,
        };
        if resumed.is_none() && resume {
            crate::session::resume::clear_active(&deps.paths, &header.id).await;
        }
        let mut session = Session::start(
            header,
            deps,
            log,
            shared,
            settings,
            loaded.request_ids.into_iter().collect(),
            tasks,
            "resume",
        );
        session.loaded_run = loaded_run;
        if let Some((run_id, plan, options)) = resumed {
            session
                .send(super::Command::Resume {
                    run_id,
                    plan,
                    options,
                })
                .await?;
        }
        Ok(session)
    }

    /// A session whose file `log` has just created: nothing to read back or repair.
    pub(in crate::session) fn create(
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
            "startup",
        )
    }

    /// Start the actor of a session whose state is known; `hook_source` is what its
    /// SessionStart hooks are told (`startup` or `resume`).
    // Each argument is a part of the session the two callers build differently.
    #[allow(clippy::too_many_arguments)]
    fn start(
        header: SessionHeader,
        deps: Arc<SessionDeps>,
        log: Arc<EventLog>,
        shared: Arc<SessionShared>,
        settings: Arc<Mutex<SessionSettings>>,
        recent_requests: VecDeque<(String, String)>,
        tasks: &TaskTracker,
        hook_source: &'static str,
    ) -> Session {
        let (commands_tx, commands_rx) = mpsc::channel(COMMAND_QUEUE);
        let active = Arc::new(Mutex::new(None));
        let (run_finished, _) = broadcast::channel(4);
        let unhandled_commands = Arc::new(AtomicUsize::new(0));
        let actor_stopped = CancellationToken::new();
        let closing = CancellationToken::new();
        let notification_cap = deps
            .config
            .snapshot()
            .map(|config| config.tasks.max_notification_runs)
            .unwrap_or(crate::task::DEFAULT_MAX_NOTIFICATION_RUNS);
        // SessionStart hooks run beside the actor (a top-level session's only); their context
        // waits for the first prompt.
        let session_start = agentd_agent::hooks::PendingStart::default();
        if header.parent_session_id.is_none() && header.task_id.is_none() {
            crate::session::hooks::session_start(
                header.clone(),
                Arc::clone(&deps),
                log.clone(),
                session_start.clone(),
                hook_source,
                tasks,
                closing.clone(),
            );
        }
        let actor = Actor {
            session_start,
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
            mcp: crate::session::mcp::SessionMcp::default(),
            notification_chain: crate::session::notification_chain::NotificationChain::new(
                notification_cap,
            ),
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
            loaded_run: None,
        }
    }
}

/// How long an approval of the session's runs waits: the configuration's.
fn approval_timeout(deps: &SessionDeps) -> std::time::Duration {
    let secs = deps
        .config
        .snapshot()
        .map(|config| config.permissions.approval_timeout_secs)
        .unwrap_or(crate::config::DEFAULT_APPROVAL_TIMEOUT_SECS);
    std::time::Duration::from_secs(secs)
}
