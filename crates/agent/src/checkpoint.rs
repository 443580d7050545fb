//! A run's checkpoints of its workspace (`agentd_work::checkpoint`), recorded as `checkpointed`
//! events: one taken when the run starts (beside its first model call, awaited before its
//! first tool batch that can write), one before each batch that can write, one when a run that
//! could write ends. Only one that differs from the run's previous is recorded, except the
//! start, which every run records so `session/rewind {toRunId}` finds it. A checkpoint that
//! fails costs the run nothing but a warning (once per run); checkpoints that are off cost
//! nothing at all.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::task::JoinHandle;

use agentd_work::checkpoint::{CheckpointError, Checkpoints, Snapshot};
use protocol::checkpoint::CheckpointReason;
use protocol::event::Event;

use super::Run;

/// The most skipped paths a `checkpointed` event names.
const SKIPPED_SHOWN: usize = 20;

type Pending = JoinHandle<Result<Snapshot, CheckpointError>>;

/// What a run needs to take checkpoints.
pub struct RunCheckpoints {
    service: Arc<Checkpoints>,
    workspace: PathBuf,
    /// The start's checkpoint, still being taken.
    start: tokio::sync::Mutex<Option<Pending>>,
    /// The run's last recorded checkpoint.
    last: std::sync::Mutex<Option<String>>,
    /// A batch that can write ran.
    wrote: AtomicBool,
    warned: AtomicBool,
}

impl RunCheckpoints {
    pub fn new(service: Arc<Checkpoints>, workspace: PathBuf) -> Arc<Self> {
        Arc::new(Self {
            service,
            workspace,
            start: tokio::sync::Mutex::new(None),
            last: std::sync::Mutex::new(None),
            wrote: AtomicBool::new(false),
            warned: AtomicBool::new(false),
        })
    }

    fn last(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.last
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Run {
    /// Starts taking the run's first checkpoint (a new run; a resumed one has its own).
    pub(super) async fn begin_checkpoint(&self) {
        let Some(checkpoints) = &self.checkpoints else {
            return;
        };
        let service = Arc::clone(&checkpoints.service);
        let workspace = checkpoints.workspace.clone();
        let pending = tokio::spawn(async move { service.snapshot(&workspace).await });
        *checkpoints.start.lock().await = Some(pending);
    }

    /// Records the start's checkpoint once it is taken (at once if it was).
    async fn settle_start(&self, checkpoints: &RunCheckpoints) -> anyhow::Result<()> {
        let Some(pending) = checkpoints.start.lock().await.take() else {
            return Ok(());
        };
        let taken = pending
            .await
            .unwrap_or_else(|error| Err(CheckpointError::Internal(error.to_string())));
        self.record(checkpoints, taken, CheckpointReason::RunStart)
            .await
    }

    /// Before a tool batch that can write: the start's checkpoint, then one of now.
    pub(super) async fn checkpoint_before_batch(&self) -> anyhow::Result<()> {
        let Some(checkpoints) = &self.checkpoints else {
            return Ok(());
        };
        self.settle_start(checkpoints).await?;
        checkpoints.wrote.store(true, Ordering::Relaxed);
        // Unchanged since the start (the usual first batch): one walk, nothing recorded.
        let taken = checkpoints.service.snapshot(&checkpoints.workspace).await;
        self.record(checkpoints, taken, CheckpointReason::Batch)
            .await
    }

    /// When the run ends: what its last batch left, if it could write.
    pub(super) async fn checkpoint_at_end(&self) {
        let Some(checkpoints) = &self.checkpoints else {
            return;
        };
        let result = async {
            self.settle_start(checkpoints).await?;
            if checkpoints.wrote.load(Ordering::Relaxed) {
                let taken = checkpoints.service.snapshot(&checkpoints.workspace).await;
                self.record(checkpoints, taken, CheckpointReason::RunEnd)
                    .await?;
            }
            anyhow::Ok(())
        }
        .await;
        if let Err(error) = result {
            tracing::warn!(run_id = %self.run_id, "the run's last checkpoint was not recorded: {error:#}");
        }
    }

    async fn record(
        &self,
        checkpoints: &RunCheckpoints,
        taken: Result<Snapshot, CheckpointError>,
        reason: CheckpointReason,
    ) -> anyhow::Result<()> {
        let snapshot = match taken {
            Ok(snapshot) => snapshot,
            Err(CheckpointError::Off(_)) => return Ok(()),
            Err(error) => {
                if !checkpoints.warned.swap(true, Ordering::Relaxed) {
                    self.warn(&[format!(
                        "no checkpoint of the workspace: {error}; diffs and rewinds of this session do not cover this run's changes"
                    )])
                    .await?;
                }
                return Ok(());
            }
        };
        {
            let mut last = checkpoints.last();
            if reason != CheckpointReason::RunStart && last.as_deref() == Some(&snapshot.commit) {
                return Ok(());
            }
            *last = Some(snapshot.commit.clone());
        }
        self.log
            .append(Event::Checkpointed {
                run_id: Some(self.run_id.clone()),
                checkpoint: snapshot.commit,
                reason,
                skipped: snapshot
                    .skipped
                    .iter()
                    .take(SKIPPED_SHOWN)
                    .map(ToString::to_string)
                    .collect(),
            })
            .await?;
        Ok(())
    }
}
