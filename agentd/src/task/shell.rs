//! Background shell tasks (`run_shell {runInBackground: true}`): the command runs through the
//! one process wrapper (its own group, the sandbox, the scrubbed environment) while its
//! stdout and stderr go to the task's capped output file; its exit is recorded on the task,
//! with what it created or changed of the project's configuration (`process::protected`).
//! [`ShellTasks`] owns every runner (a `TaskTracker`) and each one's stop token, listed by the
//! session that started it, so `task/stop`, session delete and daemon shutdown kill the whole
//! group. A daemon that is killed takes the groups with it (the death signal and the
//! supervisor's records, see `process::supervisor`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use protocol::task::{TaskKind, TaskStatus};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::shell_output::OutputFile;
use super::{NewTask, TaskManager, TaskRecord};
use agentd_policy::process::protected::Snapshot;
use agentd_policy::process::sandbox::ShellSandbox;
use agentd_policy::process::{ChildProcess, ProcessSpec};

/// What starts a background shell task.
#[derive(Clone, Debug)]
pub struct ShellStart {
    pub command: String,
    /// Canonical workspace, the command's cwd.
    pub cwd: std::path::PathBuf,
    /// The session whose model started it (deleting the session kills it).
    pub session_id: Option<String>,
}

/// How a background command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShellEnding {
    /// The leader exited with this code.
    Exited(i32),
    /// The leader was killed by a signal from outside.
    Signalled(i32),
    /// Stopped (`task/stop`, session delete, shutdown): the whole group was killed.
    Stopped,
    /// The output could not be written or the exit could not be read.
    Failed(String),
}

/// Every background shell of the daemon.
pub struct ShellTasks {
    /// Owns every runner: shutdown waits for them.
    tracker: TaskTracker,
    /// Stop token of each running shell task, with the session that started it.
    running: Mutex<HashMap<String, Running>>,
    /// Cap of each output file (`[tasks] shell_output_max_bytes`).
    output_max_bytes: usize,
    /// Background commands running at once at most: a model starting one per turn in a loop
    /// cannot fill the machine with processes.
    max_running: usize,
}

struct Running {
    session_id: Option<String>,
    stop: CancellationToken,
}

impl ShellTasks {
    /// Default of [`ShellTasks::max_running`].
    pub const DEFAULT_MAX_RUNNING: usize = 32;

    pub fn new(output_max_bytes: usize) -> Arc<Self> {
        Self::with_max_running(output_max_bytes, Self::DEFAULT_MAX_RUNNING)
    }

    pub fn with_max_running(output_max_bytes: usize, max_running: usize) -> Arc<Self> {
        Arc::new(Self {
            tracker: TaskTracker::new(),
            running: Mutex::new(HashMap::new()),
            output_max_bytes,
            max_running,
        })
    }

    /// How many background commands run now.
    pub fn running(&self) -> usize {
        self.running.lock().map_or(0, |running| running.len())
    }

    /// Records a shell task, starts its command and returns its `running` record. The
    /// command's permission was decided before (as for a foreground run_shell). Err: a
    /// message for the model (the task, if recorded, is marked failed).
    pub async fn start(
        self: &Arc<Self>,
        tasks: &Arc<TaskManager>,
        sandbox: &Arc<ShellSandbox>,
        start: ShellStart,
    ) -> Result<TaskRecord, String> {
        // Checked before the task is recorded; two calls racing may pass it together, which
        // only bends the cap by the calls of one batch.
        if self.running() >= self.max_running {
            return Err(format!(
                "{} background commands are running already, the most at once; stop one with \
                 task_stop (see task_list), or run this one in the foreground",
                self.max_running
            ));
        }
        let info = tasks
            .create(NewTask {
                kind: TaskKind::Shell,
                parent_session_id: start.session_id.clone(),
                agent_type: None,
                description: None,
                prompt: start.command.clone(),
                cwd: start.cwd.clone(),
                background: false,
            })
            .await
            .map_err(|error| format!("cannot start a background task: {error}"))?;
        let task_id = info.task_id.clone();
        let fail = |reason: String| {
            let reason_for_record = reason.clone();
            let task_id = task_id.clone();
            async move {
                let _ = tasks
                    .update(&task_id, move |task| {
                        task.status = TaskStatus::Failed;
                        task.finished_at = Some(now());
                        task.error = Some(reason_for_record);
                    })
                    .await;
                reason
            }
        };
        let output = match OutputFile::create(tasks.output_path(&task_id), self.output_max_bytes)
            .await
        {
            Ok(output) => output,
            Err(error) => return Err(fail(format!("cannot create its output file: {error}")).await),
        };
        let spec = ProcessSpec::shell(&start.command, start.cwd.clone());
        let spec = match sandbox.apply(spec).await {
            Ok(spec) => spec,
            Err(error) => {
                return Err(fail(format!(
                    "cannot sandbox the command: {error}; fix the path, or set [sandbox] \
                     enabled = false in the daemon's config.toml to run commands unconfined"
                ))
                .await);
            }
        };
        let snapshot = Snapshot::take_async(&start.cwd).await;
        // Started here, on the tool call's task (a worker thread), never on the blocking pool.
        let child = match ChildProcess::spawn(spec).await {
            Ok(child) => child,
            Err(error) => return Err(fail(format!("cannot start sh: {error}")).await),
        };
        let stop = CancellationToken::new();
        if let Ok(mut running) = self.running.lock() {
            running.insert(
                task_id.clone(),
                Running {
                    session_id: start.session_id.clone(),
                    stop: stop.clone(),
                },
            );
        }
        let info = tasks
            .update(&task_id, |task| {
                task.status = TaskStatus::Running;
                task.started_at = Some(now());
            })
            .await
            .unwrap_or(info);
        let manager_stop = tasks.stop_token(&task_id);
        let this = Arc::clone(self);
        let tasks = Arc::clone(tasks);
        // Each chunk of output is progress for the stall watchdog.
        let on_output = {
            let tasks = Arc::clone(&tasks);
            let task_id = task_id.clone();
            move || tasks.progress(&task_id)
        };
        self.tracker.spawn(async move {
            // `task/stop` cancels the manager's token; session delete and shutdown cancel ours.
            // A panic in the runner is an ending like any other (the child, dropped, takes its
            // group along), never a task left `running`.
            let either = CancellationToken::new();
            let run = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(run_to_file(
                child,
                output,
                either.clone(),
                on_output,
            )));
            let run = async move {
                run.await.unwrap_or_else(|_| {
                    tracing::error!("the runner of a background shell task panicked");
                    ShellEnding::Failed("internal error: its runner failed (a bug)".to_owned())
                })
            };
            tokio::pin!(run);
            let ending = tokio::select! {
                ending = &mut run => ending,
                () = async {
                    tokio::select! {
                        () = stop.cancelled() => {}
                        () = manager_stop.cancelled() => {}
                    }
                } => {
                    either.cancel();
                    run.await
                }
            };
            if let Ok(mut running) = this.running.lock() {
                running.remove(&task_id);
            }
            let protected = Snapshot::report_async(snapshot).await;
            if let Some(report) = &protected {
                tracing::warn!(task_id, "{report}");
            }
            record_ending(&tasks, &task_id, ending, protected).await;
        });
        Ok(info)
    }

    /// Kills the shell tasks `session_id` started (the session is being deleted).
    pub fn stop_for_session(&self, session_id: &str) {
        if let Ok(running) = self.running.lock() {
            for entry in running.values() {
                if entry.session_id.as_deref() == Some(session_id) {
                    entry.stop.cancel();
                }
            }
        }
    }

    /// Kills one shell task; false when it is not running.
    pub fn stop(&self, task_id: &str) -> bool {
        self.running
            .lock()
            .ok()
            .and_then(|running| running.get(task_id).map(|entry| entry.stop.cancel()))
            .is_some()
    }

    /// Kills every shell task and waits (at most `budget`) until each has recorded its end.
    pub async fn shutdown(&self, budget: Duration) {
        if let Ok(running) = self.running.lock() {
            for entry in running.values() {
                entry.stop.cancel();
            }
        }
        self.tracker.close();
        if tokio::time::timeout(budget, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("some background shell tasks did not stop in time");
        }
    }
}

/// Runs `child` to its end (or until `stop`, which kills its whole group), its stdout and
/// stderr into `output`; `on_output` is called for each chunk written.
pub async fn run_to_file(
    mut child: ChildProcess,
    mut output: OutputFile,
    stop: CancellationToken,
    on_output: impl Fn() + Send,
) -> ShellEnding {
    let (Some(stdout), Some(stderr)) = (child.take_stdout(), child.take_stderr()) else {
        let _ = child.kill().await;
        return ShellEnding::Failed("cannot capture the command's output".to_owned());
    };
    // Both pipes feed one bounded channel; the writer is the only one touching the file.
    let (chunks_tx, mut chunks_rx) = tokio::sync::mpsc::channel::<Vec<u8>>(CHUNKS_CAPACITY);
    let pump = |reader: Box<dyn AsyncRead + Send + Unpin>| {
        let chunks_tx = chunks_tx.clone();
        async move {
            let mut reader = reader;
            let mut chunk = vec![0u8; 16 * 1024];
            loop {
                match reader.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(read) => {
                        if chunks_tx.send(chunk[..read].to_vec()).await.is_err() {
                            return;
                        }
                    }
                }
            }
        }
    };
    let pumps = futures::future::join(pump(Box::new(stdout)), pump(Box::new(stderr)));
    drop(chunks_tx);
    let mut write_error = None;
    let writer = async {
        while let Some(chunk) = chunks_rx.recv().await {
            on_output();
            if write_error.is_none()
                && let Err(error) = output.push(&chunk).await
            {
                write_error = Some(error);
            }
        }
    };
    let ended = CancellationToken::new();
    let waiter = async {
        let status = tokio::select! {
            status = child.wait() => Some(status),
            () = stop.cancelled() => {
                let _ = child.kill().await;
                None
            }
        };
        ended.cancel();
        status
    };
    // The group is dead once the waiter is done (the wrapper kills what is left), so the
    // pipes reach their end; a process that escaped every kill cannot hold them past the drain.
    let pumps = async {
        tokio::select! {
            ((), ()) = pumps => {}
            () = async {
                ended.cancelled().await;
                tokio::time::sleep(DRAIN_AFTER_EXIT).await;
            } => {}
        }
    };
    let ((status, ()), ()) =
        futures::future::join(futures::future::join(waiter, pumps), writer).await;
    if let Err(error) = output.finish().await
        && write_error.is_none()
    {
        write_error = Some(error);
    }
    if let Some(error) = write_error {
        return ShellEnding::Failed(format!("cannot write its output: {error}"));
    }
    match status {
        None => ShellEnding::Stopped,
        Some(Err(error)) => ShellEnding::Failed(format!("cannot wait for the command: {error}")),
        Some(Ok(status)) => match (status.code(), agentd_core::platform::exit_signal(&status)) {
            (Some(code), _) => ShellEnding::Exited(code),
            (None, Some(signal)) => ShellEnding::Signalled(signal),
            (None, None) => ShellEnding::Failed("the command ended without a code".to_owned()),
        },
    }
}

/// How long the pipes are still read once the command's group is dead: what a process that
/// escaped every kill writes after that is lost, and the task still ends.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);

/// Chunks of output waiting for the file writer: a slow disk slows the command's pipes
/// instead of growing the daemon's memory.
const CHUNKS_CAPACITY: usize = 64;

/// Records how the task ended: `completed` (exit 0), `failed`, `cancelled`, or `interrupted`
/// (killed because the daemon is stopping), and what the command created or changed of the
/// project's configuration (`protected`, after the result).
async fn record_ending(
    tasks: &TaskManager,
    task_id: &str,
    ending: ShellEnding,
    protected: Option<String>,
) {
    let stopping = tasks.is_stopping();
    let recorded = tasks
        .update(task_id, move |task| {
            task.finished_at = Some(now());
            match ending {
                ShellEnding::Exited(0) => {
                    task.status = TaskStatus::Completed;
                    task.exit_code = Some(0);
                    task.result = Some("exited with code 0".to_owned());
                }
                ShellEnding::Exited(code) => {
                    task.status = TaskStatus::Failed;
                    task.exit_code = Some(code);
                    task.result = Some(format!("exited with code {code}"));
                }
                ShellEnding::Signalled(signal) => {
                    task.status = TaskStatus::Failed;
                    task.result = Some(format!("killed by signal {signal}"));
                }
                // Killed because the daemon is stopping: nobody stopped it, so it is not
                // `cancelled` (a shell cannot be resumed; its output file stays).
                ShellEnding::Stopped if stopping => {
                    task.status = TaskStatus::Interrupted;
                    task.error = Some(super::INTERRUPTED_ERROR.to_owned());
                }
                ShellEnding::Stopped => {
                    task.status = TaskStatus::Cancelled;
                    task.result =
                        Some("stopped; the command and everything it started were killed".into());
                }
                ShellEnding::Failed(reason) => {
                    task.status = TaskStatus::Failed;
                    task.error = Some(reason);
                }
            }
            if let Some(report) = protected {
                let said = if task.error.is_some() {
                    &mut task.error
                } else {
                    &mut task.result
                };
                *said = Some(match said.take() {
                    Some(text) => format!("{text}\n{report}"),
                    None => report,
                });
            }
        })
        .await;
    if let Err(error) = recorded {
        tracing::warn!(task_id, %error, "cannot record the end of a background shell task");
    }
}

fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;
