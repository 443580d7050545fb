//! Tasks: the daemon's background work, subagents (child sessions with their own context) and
//! background shell commands. `TaskManager` keeps every task's record (persisted under
//! `<state>/tasks/`, so `task/list` works across restarts; a task pending or running when the
//! daemon stopped is `interrupted` at the next start, never re-run, unless it is a background
//! subagent that resumes: `resume`), announces changes, holds
//! each running task's stop token, and hands out run slots (a cap on running subagents with a
//! queue; at most one writing agent per workspace unless configured).
//! A task's end is written before it is announced (retried a few times; one that still
//! cannot be written is announced `notPersisted`).
//! `record` is the record (`TaskRecord`, converted to the wire's `TaskInfo` in one place),
//! `store` keeps the records on disk, `slots` the run slots, `listing` pages them,
//! `retention` prunes old finished ones, `stall` marks tasks that make no progress, and
//! `notifications` keeps what a parent session is still owed.

mod for_tools;
mod listing;
mod notifications;
mod persist;
mod record;
mod resume;
mod retention;
pub mod session_stop;
mod settings;
pub mod shell;
pub mod shell_output;
mod slots;
mod stall;
pub mod store;
pub mod view;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use protocol::task::{TaskKind, TaskStatus};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

pub use for_tools::BackgroundShellStarter;
pub use listing::{DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT};
pub use persist::FINAL_WRITE_RETRY_DELAYS;
pub use record::TaskRecord;
pub use settings::{
    DEFAULT_KEEP_FINISHED, DEFAULT_KEEP_FINISHED_DAYS, DEFAULT_MAX_NOTIFICATION_RUNS,
    DEFAULT_MAX_RUNNING, DEFAULT_STALL_SECS, MAX_MAX_NOTIFICATION_RUNS, MAX_MAX_RUNNING, Retention,
    TaskLimits, TaskSettings, TasksSection,
};

/// A description defaults to the first line of the prompt or command, cut to this many chars.
pub const MAX_DESCRIPTION_CHARS: usize = 80;

/// What starts a task.
#[derive(Clone, Debug, PartialEq)]
pub struct NewTask {
    pub kind: TaskKind,
    pub parent_session_id: Option<String>,
    pub agent_type: Option<String>,
    /// None: the first line of `prompt`, at most [`MAX_DESCRIPTION_CHARS`].
    pub description: Option<String>,
    /// The subagent's prompt, or the shell command.
    pub prompt: String,
    /// Canonical workspace.
    pub cwd: PathBuf,
    /// A subagent that runs in the background (its end is a notification, or nobody's: a
    /// client's `task/start`): it resumes after a restart. A foreground child's result was its
    /// parent's tool call, which the parent's own resume marks interrupted.
    pub background: bool,
}

/// Which tasks `list` returns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskFilter {
    pub parent_session_id: Option<String>,
    pub status: Option<TaskStatus>,
    /// Finished tasks too (by default only pending and running ones).
    pub all: bool,
}

/// A change of one task, for the parent session's stream and the daemon stream.
#[derive(Clone, Debug, PartialEq)]
pub enum TaskChange {
    Started(TaskRecord),
    Updated(TaskRecord),
    Finished(TaskRecord),
    /// It made no progress for `[tasks] stall_secs` (the record says `stalled`; clients see
    /// it as an update, the parent's Notification hooks hear of it).
    Stalled(TaskRecord),
    /// A background subagent found running at start goes on (`interrupted` → `running`).
    Resumed(TaskRecord),
}

impl TaskChange {
    /// The record after the change.
    pub fn record(&self) -> &TaskRecord {
        match self {
            TaskChange::Started(task)
            | TaskChange::Updated(task)
            | TaskChange::Finished(task)
            | TaskChange::Stalled(task)
            | TaskChange::Resumed(task) => task,
        }
    }
}

/// Why a task operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    #[error("no task {}", protocol::error::echo(.0))]
    NotFound(String),
    #[error("task {} has already ended ({status})", protocol::error::echo(task_id))]
    Finished { task_id: String, status: String },
    #[error("cannot record task {}: {reason}", protocol::error::echo(task_id))]
    Persist { task_id: String, reason: String },
    #[error("unknown cursor {}; list again without one", protocol::error::echo(.0))]
    UnknownCursor(String),
}

/// A run slot: held while a subagent runs; dropping it lets the next pending task start.
pub struct TaskSlot {
    _grant: slots::Grant,
}

/// Every task of the daemon.
pub struct TaskManager {
    dir: PathBuf,
    limits: TaskLimits,
    changes: broadcast::Sender<TaskChange>,
    /// Every record, in creation order (loaded once at start; `list` never reads the disk).
    records: Mutex<Records>,
    /// Serialises the writes of one task's record (striped by task id: `WRITE_STRIPES`), so
    /// its file always ends with the latest record while other tasks' writes go on.
    writes: Vec<tokio::sync::Mutex<()>>,
    /// Writes of `update_deferred`, the retention pass and the stall watchdog, waited for at
    /// shutdown (the last two end when `stopping` fires).
    writers: tokio_util::task::TaskTracker,
    /// Wakes the retention pass (a task finished).
    prune_wake: tokio::sync::Notify,
    slots: Arc<slots::Slots>,
    /// Set at shutdown: every stop token handed out afterwards is already cancelled.
    stopping: CancellationToken,
    /// A running task let go of its stop token without an end (`suspended`): wakes `shutdown`.
    released: tokio::sync::Notify,
}

#[derive(Default)]
struct Records {
    order: Vec<String>,
    by_id: HashMap<String, TaskRecord>,
    /// Stop tokens of tasks that have not finished.
    tokens: HashMap<String, CancellationToken>,
    /// Versions of records not yet known to be on disk as they are: a change bumps one, a
    /// write that took it in catches up, so a write with nothing new (two changes on the way
    /// to a start, written by the first write) is skipped. A finished task's entry goes once
    /// its end is written.
    versions: HashMap<String, Versions>,
    /// When each running task last made progress (for the stall watchdog).
    progress: HashMap<String, tokio::time::Instant>,
    /// Background subagents found running at start (recorded `interrupted`) that may still
    /// resume: never pruned until they resumed or were given up (`resume`).
    resumable: std::collections::HashSet<String>,
}

/// The version of a task's record in memory, and the version last written.
#[derive(Clone, Copy, Debug, Default)]
struct Versions {
    changed: u64,
    written: u64,
}

impl Records {
    /// `task_id`'s record changed in memory.
    fn bump(&mut self, task_id: &str) {
        match self.versions.get_mut(task_id) {
            Some(versions) => versions.changed += 1,
            None => {
                self.versions.insert(
                    task_id.to_owned(),
                    Versions {
                        changed: 1,
                        written: 0,
                    },
                );
            }
        }
    }
}

impl TaskManager {
    /// Capacity of the change channel; a lagging receiver misses changes, never blocks a task.
    pub const CHANGES_CAPACITY: usize = 1024;

    /// The manager of the tasks recorded under `<state_dir>/tasks/`: records of tasks that
    /// were pending or running are marked `interrupted`. Blocking (reads the records).
    /// Unreadable records are logged and left on disk; a tasks dir that cannot be made is
    /// logged, and records are then kept in memory only (each write reports its failure).
    pub fn load(state_dir: &Path, limits: TaskLimits) -> Arc<Self> {
        let (changes, _) = broadcast::channel(Self::CHANGES_CAPACITY);
        let dir = state_dir.join("tasks");
        let loaded = store::load_records(&dir).unwrap_or_else(|err| {
            tracing::warn!("cannot read the task records: {err:#}");
            store::Loaded::default()
        });
        for (path, reason) in &loaded.unreadable {
            tracing::warn!(path = %path.display(), "skipping a task record: {reason}");
        }
        let now = now_rfc3339();
        let mut records = Records::default();
        for mut record in loaded.records {
            if !record.status.is_finished() {
                if resume::may_resume(&record) {
                    records.resumable.insert(record.task_id.clone());
                }
                record.status = TaskStatus::Interrupted;
                record.finished_at = Some(now.clone());
                record.error = Some(INTERRUPTED_ERROR.to_owned());
                if let Err(err) = store::write_record(&dir, &record) {
                    tracing::warn!("cannot mark task {} interrupted: {err:#}", record.task_id);
                }
            }
            records.order.push(record.task_id.clone());
            records.by_id.insert(record.task_id.clone(), record);
        }
        Arc::new(Self {
            dir,
            limits,
            changes,
            records: Mutex::new(records),
            writes: (0..WRITE_STRIPES)
                .map(|_| tokio::sync::Mutex::new(()))
                .collect(),
            writers: tokio_util::task::TaskTracker::new(),
            prune_wake: tokio::sync::Notify::new(),
            slots: slots::Slots::new(limits),
            stopping: CancellationToken::new(),
            released: tokio::sync::Notify::new(),
        })
    }

    /// The limits it was made with.
    pub fn limits(&self) -> TaskLimits {
        self.limits
    }

    /// A new task id, for `create_as`.
    pub fn new_id() -> String {
        format!("task_{}", uuid::Uuid::new_v4().simple())
    }

    /// Records a new `pending` task and announces it; returns its record.
    pub async fn create(&self, new: NewTask) -> Result<TaskRecord, TaskError> {
        self.create_as(TaskManager::new_id(), new).await
    }

    /// `create` under an id from [`TaskManager::new_id`] (known before the record is, so
    /// what the task needs can be made at the same time).
    pub async fn create_as(&self, task_id: String, new: NewTask) -> Result<TaskRecord, TaskError> {
        let description = new
            .description
            .as_deref()
            .map(str::trim)
            .filter(|description| !description.is_empty())
            .map(|description| cut_chars(first_line(description), MAX_DESCRIPTION_CHARS))
            .unwrap_or_else(|| cut_chars(first_line(&new.prompt), MAX_DESCRIPTION_CHARS));
        let record = TaskRecord {
            task_id: task_id.clone(),
            kind: new.kind,
            status: TaskStatus::Pending,
            parent_session_id: new.parent_session_id,
            child_session_id: None,
            agent_type: new.agent_type,
            description,
            cwd: new.cwd.to_string_lossy().into_owned(),
            created_at: now_rfc3339(),
            started_at: None,
            finished_at: None,
            result: None,
            error: None,
            exit_code: None,
            usage: Default::default(),
            notification_pending: false,
            not_persisted: false,
            stalled: false,
            background: new.background,
        };
        {
            let mut records = self.lock();
            records.order.push(task_id.clone());
            records.by_id.insert(task_id.clone(), record.clone());
            records.bump(&task_id);
            records
                .tokens
                .insert(task_id.clone(), self.stopping.child_token());
        }
        if let Err(reason) = self.persist(&task_id).await {
            let mut records = self.lock();
            records.order.retain(|id| id != &task_id);
            records.by_id.remove(&task_id);
            records.tokens.remove(&task_id);
            records.versions.remove(&task_id);
            return Err(TaskError::Persist { task_id, reason });
        }
        let _ = self.changes.send(TaskChange::Started(record.clone()));
        Ok(record)
    }

    /// Changes a task's record with `change`, persists it and announces it (`Finished` when
    /// its status became a finished one). Err: unknown task. A finished record does not change
    /// any more: the change is ignored and the record returned as it is.
    pub async fn update(
        &self,
        task_id: &str,
        change: impl FnOnce(&mut TaskRecord) + Send,
    ) -> Result<TaskRecord, TaskError> {
        let Some((mut record, finished_now)) = self.change_record(task_id, change, true)? else {
            return self
                .get(task_id)
                .ok_or_else(|| TaskError::NotFound(task_id.to_owned()));
        };
        if !finished_now {
            if let Err(reason) = self.persist(task_id).await {
                tracing::warn!("cannot record task {task_id}: {reason}");
            }
        } else if let Err(reason) =
            persist::write_with_retries(&FINAL_WRITE_RETRY_DELAYS, || self.persist(task_id)).await
        {
            // Announced all the same (the task did end), but said: a restart finds the last
            // record written (`interrupted`), without this result.
            tracing::warn!(
                task_id,
                "the end of task {task_id} could not be recorded after {} attempts, it is announced notPersisted and a restart will find it interrupted: {reason}",
                FINAL_WRITE_RETRY_DELAYS.len() + 1
            );
            let mut records = self.lock();
            if let Some(kept) = records.by_id.get_mut(task_id) {
                kept.not_persisted = true;
                record = kept.clone();
            }
        }
        if finished_now {
            self.prune_wake.notify_one();
        }
        let change = if finished_now {
            TaskChange::Finished(record.clone())
        } else {
            TaskChange::Updated(record.clone())
        };
        let _ = self.changes.send(change);
        Ok(record)
    }

    /// Like `update`, but the record is written in the background: the change is in memory
    /// and announced when this returns. For steps on the way to a task's start (its child
    /// session, `running`), which must not hold up the child's first model call; a crash
    /// before the write leaves the earlier record, which is `interrupted` at restart anyway.
    /// A task's end is always recorded with `update`.
    pub fn update_deferred(
        self: &Arc<Self>,
        task_id: &str,
        change: impl FnOnce(&mut TaskRecord) + Send,
    ) -> Result<TaskRecord, TaskError> {
        // Never an end: that is written before it is announced (`update`).
        let Some((record, _)) = self.change_record(task_id, change, false)? else {
            return self
                .get(task_id)
                .ok_or_else(|| TaskError::NotFound(task_id.to_owned()));
        };
        let _ = self.changes.send(TaskChange::Updated(record.clone()));
        let manager = Arc::clone(self);
        let id = task_id.to_owned();
        self.writers.spawn(async move {
            if let Err(reason) = manager.persist(&id).await {
                tracing::warn!("cannot record task {id}: {reason}");
            }
        });
        Ok(record)
    }

    /// Applies `change` to the record of `task_id` in memory, stamping `startedAt` and (when
    /// `may_end`) `finishedAt`; a change to a finished status is undone when `may_end` is
    /// false. None: the record had already ended and is left as it is. Returns the record and
    /// whether it ended now (its stop token is then dropped).
    fn change_record(
        &self,
        task_id: &str,
        change: impl FnOnce(&mut TaskRecord),
        may_end: bool,
    ) -> Result<Option<(TaskRecord, bool)>, TaskError> {
        let mut records = self.lock();
        let Some(record) = records.by_id.get_mut(task_id) else {
            return Err(TaskError::NotFound(task_id.to_owned()));
        };
        if record.status.is_finished() {
            return Ok(None);
        }
        let before = record.status;
        change(record);
        if record.status.is_finished() && !may_end {
            record.status = before;
        }
        if record.status == TaskStatus::Running && record.started_at.is_none() {
            record.started_at = Some(now_rfc3339());
        }
        let finished_now = record.status.is_finished();
        if finished_now && record.finished_at.is_none() {
            record.finished_at = Some(now_rfc3339());
        }
        if finished_now {
            record.stalled = false;
        }
        let started_now = before != TaskStatus::Running && record.status == TaskStatus::Running;
        let record = record.clone();
        records.bump(task_id);
        if finished_now {
            records.tokens.remove(task_id);
            records.progress.remove(task_id);
        } else if started_now {
            records
                .progress
                .insert(task_id.to_owned(), tokio::time::Instant::now());
        }
        Ok(Some((record, finished_now)))
    }

    pub fn get(&self, task_id: &str) -> Option<TaskRecord> {
        self.lock().by_id.get(task_id).cloned()
    }

    /// Changes of every task.
    pub fn changes(&self) -> broadcast::Receiver<TaskChange> {
        self.changes.subscribe()
    }

    /// The token `stop` cancels for a running task (a subagent's run, a shell's process).
    /// A finished or unknown task's token is already cancelled.
    pub fn stop_token(&self, task_id: &str) -> CancellationToken {
        match self.lock().tokens.get(task_id) {
            Some(token) => token.clone(),
            None => {
                let token = CancellationToken::new();
                token.cancel();
                token
            }
        }
    }

    /// Stops a task: cancels its token; the task's runner records `cancelled` when it has
    /// stopped. Err: unknown or already finished.
    pub async fn stop(&self, task_id: &str) -> Result<TaskRecord, TaskError> {
        let records = self.lock();
        let Some(record) = records.by_id.get(task_id) else {
            return Err(TaskError::NotFound(task_id.to_owned()));
        };
        if record.status.is_finished() {
            return Err(TaskError::Finished {
                task_id: task_id.to_owned(),
                status: record.status.as_str().to_owned(),
            });
        }
        if let Some(token) = records.tokens.get(task_id) {
            token.cancel();
        }
        Ok(record.clone())
    }

    /// Where a task's output is kept (a shell's capped output; a subagent's final message).
    pub fn output_path(&self, task_id: &str) -> PathBuf {
        self.dir.join(format!("{task_id}.out"))
    }

    /// Waits for a run slot for a subagent in `workspace` (read-only agents never wait for a
    /// writer); the task stays `pending` meanwhile.
    pub async fn slot(&self, workspace: &Path, read_only: bool) -> TaskSlot {
        TaskSlot {
            _grant: self.slots.acquire(workspace, read_only).await,
        }
    }

    /// Whether the daemon is stopping (`shutdown` began): results are no longer delivered.
    pub fn is_stopping(&self) -> bool {
        self.stopping.is_cancelled()
    }

    /// How many run slots are held now.
    pub fn running_slots(&self) -> usize {
        self.slots.running()
    }

    /// Stops every running task (daemon shutdown): subagent runs cancelled, shell groups
    /// killed, and their runners record them `interrupted` (nobody stopped them); background
    /// subagents whose runs were suspended first (`suspended`) stay `running`, to resume. Tasks created
    /// afterwards get a stop token already cancelled. Waits at most [`SHUTDOWN_WAIT`] for the
    /// runners to record how they ended; those that did not are `interrupted` at next start.
    pub async fn shutdown(&self) {
        let mut changes = self.changes.subscribe();
        self.stopping.cancel();
        let wait = async {
            while !self.lock().tokens.is_empty() {
                tokio::select! {
                    change = changes.recv() => match change {
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => break,
                    },
                    () = self.released.notified() => {}
                }
            }
        };
        if tokio::time::timeout(SHUTDOWN_WAIT, wait).await.is_err() {
            tracing::warn!("some tasks did not stop in time; they will be marked interrupted");
        }
        self.writers.close();
        if tokio::time::timeout(SHUTDOWN_WAIT, self.writers.wait())
            .await
            .is_err()
        {
            tracing::warn!("some task records were not written in time");
        }
    }

    fn lock(&self) -> MutexGuard<'_, Records> {
        self.records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Record writes of different tasks run in parallel across this many locks (one task's
/// writes always share one).
pub const WRITE_STRIPES: usize = 32;

/// How long `shutdown` waits for running tasks to record their end.
pub const SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The error of a task found pending or running at startup.
pub const INTERRUPTED_ERROR: &str = "the daemon stopped while this task was running; it was not \
                                     re-run: start it again if it is still needed";

fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("")
}

fn cut_chars(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

fn now_rfc3339() -> String {
    humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests;

#[cfg(test)]
#[path = "durable_tests.rs"]
mod durable_tests;
