//! `session/checkpoints`, `session/diff` and `session/rewind`: a session's runs as points to go
//! back to, what they changed, and going back. The points are the `checkpointed` events of the
//! session's log (`store::points`); the files are in the workspace's checkpoint store
//! (`agentd_work::checkpoint`). A rewind holds the session idle while it writes (no run starts
//! meanwhile; one active refuses it), records the workspace as it found it first (the seq a
//! second rewind goes back to, to undo it) and as it left it, then `rewound`. Its conversation
//! part is a fork at the point: the old branch stays as it is.

use std::path::PathBuf;

use agentd_work::checkpoint::{ChangeKind, CheckpointError, RelPath};
use protocol::checkpoint::{
    CheckpointReason, FileChange, FileChangeKind, RewindFailure, RewindPlan, RunCheckpoint,
    SessionCheckpointsParams, SessionCheckpointsResult, SessionDiffParams, SessionDiffResult,
    SessionRewindParams, SessionRewindResult,
};
use protocol::event::Event;
use protocol::session::SessionForkParams;

use super::{Session, SessionError, SessionManager};
use crate::store::points::{self, Points};

/// The most a `session/diff` answer carries of the diff itself.
pub const DIFF_MAX_BYTES: usize = 1024 * 1024;
/// Runs (the newest) whose changed files `session/checkpoints` counts.
const COUNTED_RUNS: usize = 50;

fn checkpoint_error(error: CheckpointError) -> SessionError {
    match error {
        CheckpointError::Off(why) | CheckpointError::Refused(why) => SessionError::Conflict(why),
        other => SessionError::Internal(other.to_string()),
    }
}

fn kind(kind: ChangeKind) -> FileChangeKind {
    match kind {
        ChangeKind::Added => FileChangeKind::Added,
        ChangeKind::Deleted => FileChangeKind::Deleted,
        ChangeKind::Modified => FileChangeKind::Modified,
    }
}

fn shown(paths: &[RelPath]) -> Vec<String> {
    paths.iter().map(RelPath::display).collect()
}

impl SessionManager {
    async fn points(&self, session: &Session) -> Result<Points, SessionError> {
        let written = session
            .log
            .written()
            .await
            .map_err(|err| SessionError::Internal(format!("{err:#}")))?;
        let path = session.log.path().to_owned();
        tokio::task::spawn_blocking(move || {
            crate::store::fork::read_written(&path, written.len).map(|bytes| points::read(&bytes))
        })
        .await
        .map_err(|err| SessionError::Internal(err.to_string()))?
        .map_err(|err| SessionError::Internal(format!("{err:#}")))
    }

    fn workspace(session: &Session) -> PathBuf {
        PathBuf::from(&session.header.cwd)
    }

    /// `session/checkpoints`.
    pub async fn checkpoints(
        &self,
        params: SessionCheckpointsParams,
    ) -> Result<SessionCheckpointsResult, SessionError> {
        let session = self.get(&params.session_id).await?;
        let points = self.points(&session).await?;
        let status = self.deps.checkpoints.status().await;
        let workspace = Self::workspace(&session);
        let counted_from = points.runs.len().saturating_sub(COUNTED_RUNS);
        let mut runs = Vec::with_capacity(points.runs.len());
        for (index, run) in points.runs.iter().enumerate() {
            let start = points.run_start(&run.run_id);
            let end = points.run_end(&run.run_id);
            let changed_files = match (start, end) {
                (Some(start), Some(end))
                    if run.finished && index >= counted_from && status.enabled =>
                {
                    self.deps
                        .checkpoints
                        .changes(&workspace, &start.checkpoint, &end.checkpoint)
                        .await
                        .ok()
                        .map(|changes| changes.len() as u32)
                }
                _ => None,
            };
            runs.push(RunCheckpoint {
                run_id: run.run_id.clone(),
                started_seq: run.started_seq,
                prompt: run.prompt.clone(),
                checkpoint: start.map(|point| point.checkpoint.clone()),
                changed_files,
                finished: run.finished,
            });
        }
        Ok(SessionCheckpointsResult {
            enabled: status.enabled,
            reason: status.reason,
            runs,
        })
    }

    /// `session/diff`: a run's changes (its start to its last checkpoint, or to now while it
    /// runs), or the session's (its first checkpoint to its last, or to now).
    pub async fn diff(&self, params: SessionDiffParams) -> Result<SessionDiffResult, SessionError> {
        let session = self.get(&params.session_id).await?;
        let points = self.points(&session).await?;
        let workspace = Self::workspace(&session);
        let (from, to, running) = match &params.run_id {
            Some(run_id) => {
                let Some(run) = points.runs.iter().find(|run| &run.run_id == run_id) else {
                    return Err(SessionError::NotFound(format!(
                        "run {run_id} is not a run of session {}; session/checkpoints lists its runs",
                        params.session_id
                    )));
                };
                (
                    points.run_start(run_id),
                    points.run_end(run_id),
                    !run.finished,
                )
            }
            None => (
                points.checkpoints.first(),
                points.checkpoints.last(),
                session.shared.lock().run_id.is_some(),
            ),
        };
        let Some(from) = from.map(|point| point.checkpoint.clone()) else {
            let status = self.deps.checkpoints.status().await;
            if let Some(reason) = status.reason {
                return Err(SessionError::Conflict(reason));
            }
            return Ok(SessionDiffResult {
                files: Vec::new(),
                diff: String::new(),
                truncated: false,
                from: None,
                to: None,
            });
        };
        let to = match (running, to) {
            (false, Some(to)) => to.checkpoint.clone(),
            _ => {
                self.deps
                    .checkpoints
                    .snapshot(&workspace)
                    .await
                    .map_err(checkpoint_error)?
                    .commit
            }
        };
        let checkpoints = &self.deps.checkpoints;
        let files = checkpoints
            .changes(&workspace, &from, &to)
            .await
            .map_err(checkpoint_error)?
            .into_iter()
            .map(|change| FileChange {
                path: change.path.display(),
                change: kind(change.kind),
            })
            .collect();
        let (diff, truncated) = checkpoints
            .diff(&workspace, &from, &to, DIFF_MAX_BYTES)
            .await
            .map_err(checkpoint_error)?;
        Ok(SessionDiffResult {
            files,
            diff,
            truncated,
            from: Some(from),
            to: Some(to),
        })
    }

    /// `session/rewind`.
    pub async fn rewind(
        &self,
        params: SessionRewindParams,
    ) -> Result<SessionRewindResult, SessionError> {
        if params.to_run_id.is_some() == params.to_seq.is_some() {
            return Err(SessionError::InvalidParams(
                "give one of toRunId (back to before that run) and toSeq (back to that point)"
                    .to_owned(),
            ));
        }
        if !params.files && !params.conversation {
            return Err(SessionError::InvalidParams(
                "files and conversation are both false: nothing to rewind".to_owned(),
            ));
        }
        let session = self.get(&params.session_id).await?;
        // No run starts until this is dropped; an active one refuses the rewind.
        let hold = session.hold().await?;
        let points = self.points(&session).await?;
        let (target, fork_at) = match (&params.to_run_id, params.to_seq) {
            (Some(run_id), _) => {
                let Some(run) = points.runs.iter().find(|run| &run.run_id == run_id) else {
                    return Err(SessionError::NotFound(format!(
                        "run {run_id} is not a run of session {}",
                        params.session_id
                    )));
                };
                (points.run_start(run_id), run.started_seq.saturating_sub(1))
            }
            (None, Some(seq)) => (points.at_or_before(seq), seq),
            (None, None) => unreachable_point()?,
        };
        let mut result = SessionRewindResult {
            applied: false,
            plan: None,
            target: None,
            current: None,
            undo_seq: None,
            failed: Vec::new(),
            session_id: None,
        };
        if params.files {
            let Some(target) = target.cloned() else {
                let status = self.deps.checkpoints.status().await;
                return Err(SessionError::Conflict(match status.reason {
                    Some(reason) => reason,
                    None => "no checkpoint of the workspace at or before that point (the session ran without checkpoints then); rewind the conversation only (files: false)".to_owned(),
                }));
            };
            self.rewind_files(&session, &points, &target.checkpoint, &params, &mut result)
                .await?;
        }
        drop(hold);
        if params.conversation && params.confirm {
            let fork = self
                .fork(SessionForkParams {
                    session_id: params.session_id.clone(),
                    at_seq: Some(fork_at),
                    title: None,
                })
                .await?;
            result.session_id = Some(fork.session_id);
            result.applied = true;
        }
        Ok(result)
    }

    async fn rewind_files(
        &self,
        session: &Session,
        points: &Points,
        target: &str,
        params: &SessionRewindParams,
        result: &mut SessionRewindResult,
    ) -> Result<(), SessionError> {
        let workspace = Self::workspace(session);
        let checkpoints = &self.deps.checkpoints;
        let current = checkpoints
            .snapshot(&workspace)
            .await
            .map_err(checkpoint_error)?;
        let last = points
            .checkpoints
            .last()
            .map(|point| point.checkpoint.as_str());
        let plan = checkpoints
            .plan(&workspace, target, &current, last)
            .await
            .map_err(checkpoint_error)?;
        result.target = Some(target.to_owned());
        result.current = Some(current.commit.clone());
        result.plan = Some(RewindPlan {
            restore: shown(&plan.restore),
            delete: shown(&plan.delete),
            conflicts: shown(&plan.conflicts),
            skipped: plan.skipped.iter().map(ToString::to_string).collect(),
        });
        if !params.confirm {
            return Ok(());
        }
        if let Some(expect) = &params.expect
            && expect != &current.commit
        {
            return Err(SessionError::Conflict(
                "the workspace changed since the preview; preview the rewind again (without confirm) and confirm what it shows".to_owned(),
            ));
        }
        let record = |checkpoint: String, reason| Event::Checkpointed {
            run_id: None,
            checkpoint,
            reason,
            skipped: Vec::new(),
        };
        let internal = |err: anyhow::Error| SessionError::Internal(format!("{err:#}"));
        let undo_seq = session
            .log
            .append(record(
                current.commit.clone(),
                CheckpointReason::BeforeRewind,
            ))
            .await
            .map_err(internal)?;
        let done = checkpoints
            .apply(&workspace, &plan)
            .await
            .map_err(checkpoint_error)?;
        if let Ok(after) = checkpoints.snapshot(&workspace).await {
            session
                .log
                .append(record(after.commit, CheckpointReason::AfterRewind))
                .await
                .map_err(internal)?;
        }
        session
            .log
            .append(Event::Rewound {
                checkpoint: target.to_owned(),
                restored: done.restored as u32,
                deleted: done.deleted as u32,
                undo_seq,
            })
            .await
            .map_err(internal)?;
        result.applied = true;
        result.undo_seq = Some(undo_seq);
        result.failed = done
            .failed
            .into_iter()
            .map(|(path, error)| RewindFailure { path, error })
            .collect();
        Ok(())
    }
}

fn unreachable_point() -> Result<(Option<&'static points::Point>, u64), SessionError> {
    Err(SessionError::InvalidParams(
        "give one of toRunId and toSeq".to_owned(),
    ))
}
