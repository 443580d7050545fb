//! Runs that survive a restart. While a run is active its session has a marker file in
//! `active-runs/` of the state dir (created as the run starts, removed once it has ended;
//! empty, not synced: it must outlive the process, not the machine). A graceful stop suspends
//! active runs (`runSuspended`) instead of ending them; a crash leaves them as they were. At
//! the next start every marked session is loaded and its run goes on (`runResumed`, the plan
//! in `agentd_agent::resume`), at most [`MAX_RESUMES`] times; a session loaded later without a
//! marker (its marker was lost) has its run recorded interrupted, as before. A background
//! subagent's child goes on with its task (`subagent::resume_background_tasks`); the markers
//! of other children are dropped.

use std::path::{Path, PathBuf};

use futures::StreamExt;
use std::time::{Duration, SystemTime};

use agentd_agent::resume::{MAX_RESUMES, RecordedApproval, Resumption};
use agentd_core::paths::Paths;
use agentd_policy::approval::Resolution;

use crate::store::LoadedSession;

/// Sessions loaded at once to resume their runs at startup.
const RESUMING_AT_ONCE: usize = 16;

/// The marker directory's name in the state dir.
const ACTIVE_RUNS_DIR: &str = "active-runs";

fn marker(paths: &Paths, session_id: &str) -> PathBuf {
    paths.state_dir.join(ACTIVE_RUNS_DIR).join(session_id)
}

/// Note that `session_id` has an active run (a failure is logged: the run then does not
/// resume after a crash, it is recorded interrupted).
pub(crate) async fn mark_active(paths: &Paths, session_id: &str) {
    let path = marker(paths, session_id);
    let written = tokio::task::spawn_blocking(move || create_marker(&path)).await;
    match written {
        Ok(Ok(())) => {}
        Ok(Err(err)) => {
            tracing::warn!(session = %session_id, "cannot mark the run active, it will not resume after a crash: {err}");
        }
        Err(err) => tracing::warn!(session = %session_id, "cannot mark the run active: {err}"),
    }
}

fn create_marker(path: &Path) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    agentd_core::platform::create_mode(
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true),
        0o600,
    )
    .open(path)
    .map(drop)
}

/// Note that `session_id` has no active run any more.
pub(crate) async fn clear_active(paths: &Paths, session_id: &str) {
    let path = marker(paths, session_id);
    let removed = tokio::task::spawn_blocking(move || std::fs::remove_file(&path)).await;
    if let Ok(Err(err)) = removed
        && err.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(session = %session_id, "cannot clear the active-run marker: {err}");
    }
}

/// The sessions marked active (blocking: at startup, on the blocking pool). Names that are
/// not session ids are skipped.
pub(crate) fn marked_sessions(paths: &Paths) -> Vec<String> {
    let dir = paths.state_dir.join(ACTIVE_RUNS_DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| protocol::id::is_session_id(name))
        .collect()
}

/// Why the unfinished run of `loaded` does not go on, or how it goes on. `approval_timeout`
/// is the session's; an approval's timeout counts from when it was asked, less the time the
/// daemon was down (from the file's last write to `now`).
pub(crate) fn plan(
    loaded: &LoadedSession,
    approval_timeout: Duration,
    now: SystemTime,
) -> Result<Resumption, String> {
    let progress = &loaded.progress;
    if progress.resumes >= MAX_RESUMES {
        return Err(format!(
            "the daemon stopped while this run was active; it was resumed {MAX_RESUMES} times already and is not resumed again (the daemon may be crashing in it): prompt again to continue"
        ));
    }
    let stopped_at = loaded.modified.unwrap_or(now).min(now);
    let mut approvals: Vec<RecordedApproval> = progress
        .answered
        .iter()
        .map(|answer| RecordedApproval::Answered {
            tool_call_id: answer.tool_call_id.clone(),
            resolution: Resolution {
                decision: answer.decision,
                decided_by: answer.decided_by.clone(),
                reason: answer.reason.clone(),
            },
        })
        .collect();
    for approval in &progress.pending {
        let asked_at = humantime::parse_rfc3339(&approval.requested_at).unwrap_or(stopped_at);
        let waited = stopped_at.duration_since(asked_at).unwrap_or_default();
        approvals.push(RecordedApproval::Pending {
            approval: Box::new(approval.clone()),
            remaining: approval_timeout.saturating_sub(waited),
        });
    }
    Resumption::plan(
        &loaded.history,
        progress.resumes + 1,
        progress.steps,
        approvals,
    )
    .ok_or_else(|| "the daemon stopped before this run's prompt was recorded".to_owned())
}

impl super::SessionManager {
    /// Load every session marked active, so that its run goes on. The markers are read
    /// before the daemon serves (a client's request may load such a session first: it then
    /// goes on all the same); the sessions load in the background. Off (`[sessions]
    /// resume_after_restart = false`), the markers are dropped and those runs are recorded
    /// interrupted when their sessions load.
    pub async fn resume_marked_runs(self: &std::sync::Arc<Self>) {
        let enabled = self
            .deps
            .config
            .snapshot()
            .map(|config| config.resume_after_restart)
            .unwrap_or(true);
        let paths = self.deps.paths.clone();
        let marked = tokio::task::spawn_blocking(move || marked_sessions(&paths))
            .await
            .unwrap_or_default();
        // Background subagents' children go on with their tasks, each once it has a slot.
        let marked = super::subagent::resume_background_tasks(self, marked, enabled);
        let mut resumable = Vec::new();
        let mut dropped = Vec::new();
        for session_id in marked {
            // Only top-level sessions go on here: no other child goes on.
            let top_level = self
                .read_slots()
                .get(&session_id)
                .map(|slot| slot.header.task_id.is_none());
            if enabled && top_level == Some(true) {
                resumable.push(session_id);
            } else {
                dropped.push(session_id);
            }
        }
        if let Ok(mut set) = self.resumable.lock() {
            set.extend(resumable.iter().cloned());
        }
        let manager = std::sync::Arc::clone(self);
        self.tasks.spawn(async move {
            for session_id in dropped {
                clear_active(&manager.deps.paths, &session_id).await;
            }
            // A few at a time: each load reads its file on the blocking pool.
            futures::stream::iter(resumable)
                .for_each_concurrent(RESUMING_AT_ONCE, |session_id| {
                    let manager = &manager;
                    async move {
                        if let Err(err) = manager.get(&session_id).await {
                            tracing::warn!(session = %session_id, "cannot resume the session's run: {err}");
                        }
                    }
                })
                .await;
        });
    }

    /// `session_id`'s run goes on when it loads (a resumed task's child, once it has a slot).
    pub(super) fn mark_resumable(&self, session_id: &str) {
        if let Ok(mut resumable) = self.resumable.lock() {
            resumable.insert(session_id.to_owned());
        }
    }

    /// Whether `session_id`'s run goes on as it loads (asked once).
    pub(super) fn take_resumable(&self, session_id: &str) -> bool {
        self.resumable
            .lock()
            .map(|mut resumable| resumable.remove(session_id))
            .unwrap_or(false)
    }
}

impl super::SessionManager {
    /// The first step of a graceful stop: suspend the active runs of top-level sessions and of
    /// background subagents' children, so they resume at the next start (unless `[sessions] resume_after_restart = false`: then
    /// they are stopped as interrupted by the rest of the stop). Within `budget`.
    pub async fn suspend_runs(&self, budget: Duration) {
        let enabled = self
            .deps
            .config
            .snapshot()
            .map(|config| config.resume_after_restart)
            .unwrap_or(true);
        if !enabled {
            return;
        }
        let sessions: Vec<std::sync::Arc<super::Session>> = self
            .read_slots()
            .values()
            .filter(|slot| match &slot.header.task_id {
                None => true,
                Some(task_id) => self.deps.tasks.get(task_id).is_some_and(|task| {
                    task.background && task.status == protocol::task::TaskStatus::Running
                }),
            })
            .filter_map(|slot| slot.loaded.get())
            .collect();
        let suspend =
            futures::future::join_all(sessions.iter().map(|session| session.suspend_and_wait()));
        match tokio::time::timeout(budget, suspend).await {
            Ok(suspended) => {
                let count = suspended.into_iter().filter(|suspended| *suspended).count();
                if count > 0 {
                    tracing::info!("suspended {count} active runs; they resume at the next start");
                }
            }
            Err(_) => tracing::warn!("some runs were not suspended in time"),
        }
    }
}
