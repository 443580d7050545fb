//! `[tasks] keep_finished` and `keep_finished_days`: finished records beyond the newest
//! `keep_finished`, or finished longer ago than `keep_finished_days`, are pruned with their
//! output files: at start before any client (`prune_at_start`, on the blocking pool with the
//! load), then as tasks finish (and hourly, for the age). A pass takes at most
//! [`PRUNE_BATCH`] records out of memory and deletes their files on the blocking pool; a pass
//! that hit the bound is followed by another. Never pruned: a task that has not finished, one
//! whose end is not yet on disk, one whose notification its parent is still owed, and one
//! that may still resume after the restart. A
//! subagent's child session is the user's and stays.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::{Retention, TaskManager, TaskRecord, store};

/// The most records one pass prunes: the lock on the records is held for one pass's choice
/// only, and the deletions of one pass are one job of the blocking pool.
pub const PRUNE_BATCH: usize = 256;

/// How often a pass runs with no task finishing, so records age out of a quiet daemon.
pub const PRUNE_EVERY: Duration = Duration::from_secs(3600);

impl TaskManager {
    /// Prunes at start, before any client: blocking (the load's thread deletes the files).
    /// Returns how many records went.
    pub fn prune_at_start(&self, retention: Retention) -> usize {
        let mut total = 0;
        loop {
            let doomed = self.take_prunable(retention, SystemTime::now());
            let count = doomed.len();
            let outputs: Vec<_> = doomed.iter().map(|id| self.output_path(id)).collect();
            remove_files(&self.dir, &doomed, outputs);
            total += count;
            if count < PRUNE_BATCH {
                if total > 0 {
                    tracing::info!(count = total, "pruned old finished task records");
                }
                return total;
            }
        }
    }

    /// Starts the retention passes that follow `prune_at_start` (as tasks finish, and
    /// hourly); they end at shutdown.
    pub fn start_retention(self: &Arc<Self>, retention: Retention) {
        let manager = Arc::downgrade(self);
        let stopping = self.stopping.clone();
        self.writers.spawn(async move {
            loop {
                let Some(tasks) = manager.upgrade() else {
                    return;
                };
                tokio::select! {
                    () = stopping.cancelled() => return,
                    () = tasks.prune_wake.notified() => {}
                    () = tokio::time::sleep(PRUNE_EVERY) => {}
                }
                drop(tasks);
                loop {
                    let Some(tasks) = manager.upgrade() else {
                        return;
                    };
                    let pruned = tasks.prune_once(retention, SystemTime::now()).await;
                    if pruned < PRUNE_BATCH || stopping.is_cancelled() {
                        break;
                    }
                }
            }
        });
    }

    /// One pass at `now`: prunes at most [`PRUNE_BATCH`] records; how many it pruned.
    pub async fn prune_once(&self, retention: Retention, now: SystemTime) -> usize {
        let doomed = self.take_prunable(retention, now);
        if doomed.is_empty() {
            return 0;
        }
        let count = doomed.len();
        let dir = self.dir.clone();
        let outputs: Vec<_> = doomed.iter().map(|id| self.output_path(id)).collect();
        let deleted =
            tokio::task::spawn_blocking(move || remove_files(&dir, &doomed, outputs)).await;
        if deleted.is_err() {
            tracing::warn!("pruning task records stopped early");
        }
        tracing::debug!(count, "pruned finished task records");
        count
    }

    /// Chooses the records to prune at `now` (oldest first, at most [`PRUNE_BATCH`]) and takes
    /// them out of memory.
    fn take_prunable(&self, retention: Retention, now: SystemTime) -> Vec<String> {
        let oldest_kept = retention.max_age.and_then(|age| now.checked_sub(age));
        let mut records = self.lock();
        let finished: Vec<&TaskRecord> = records
            .order
            .iter()
            .filter_map(|id| records.by_id.get(id))
            .filter(|task| task.status.is_finished())
            .collect();
        let over_count = finished.len().saturating_sub(retention.keep_finished);
        let doomed: Vec<String> = finished
            .iter()
            .enumerate()
            .filter(|(_, task)| {
                !task.notification_pending
                    && !records.versions.contains_key(&task.task_id)
                    && !records.tokens.contains_key(&task.task_id)
                    && !records.resumable.contains(&task.task_id)
            })
            .filter(|(index, task)| {
                *index < over_count
                    || oldest_kept.is_some_and(|oldest| finished_before(task, oldest))
            })
            .map(|(_, task)| task.task_id.clone())
            .take(PRUNE_BATCH)
            .collect();
        if doomed.is_empty() {
            return doomed;
        }
        let gone: HashSet<&str> = doomed.iter().map(String::as_str).collect();
        records.order.retain(|id| !gone.contains(id.as_str()));
        for task_id in &doomed {
            records.by_id.remove(task_id);
        }
        doomed
    }
}

/// Deletes the record files of `doomed` and their `outputs` (blocking; a file already gone is
/// no error).
fn remove_files(dir: &std::path::Path, doomed: &[String], outputs: Vec<std::path::PathBuf>) {
    for (task_id, output) in doomed.iter().zip(outputs) {
        for path in [store::record_path(dir, task_id), output] {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => {
                    tracing::warn!(path = %path.display(), "cannot prune a task file: {err}");
                }
            }
        }
    }
}

/// Whether `task` finished before `time` (a record without a readable end time is kept).
fn finished_before(task: &TaskRecord, time: SystemTime) -> bool {
    task.finished_at
        .as_deref()
        .and_then(|at| humantime::parse_rfc3339_weak(at).ok())
        .is_some_and(|finished| finished < time)
}

#[cfg(test)]
#[path = "retention_tests.rs"]
mod tests;
