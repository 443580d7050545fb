//! Runs one hook command: `sh -c` through the one process wrapper (`ChildProcess`: its own
//! group, killed as a whole on timeout and when the future is dropped, reaped), in the
//! session's cwd with the shell's scrubbed environment plus `CLAUDE_PROJECT_DIR`, a project's
//! hook in the shell's sandbox. Stdin is written beside the reading, so a hook that never reads
//! it cannot hold us; stdout and stderr are kept up to a cap and the rest is read and dropped,
//! so a hook that floods cannot block on a full pipe either.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::{HookDef, HookEnv};
use agentd_policy::process::{ChildProcess, ProcessSpec};

/// The most bytes of a hook's stdout and of its stderr kept (each); the rest is dropped and
/// said to be. A hook's answer is a line of JSON or a few lines of context.
pub const MAX_HOOK_OUTPUT_BYTES: usize = 256 * 1024;
/// The most bytes written to a hook's stdin (the event's JSON; its big fields are cut first).
pub const MAX_HOOK_STDIN_BYTES: usize = 4 * 1024 * 1024;
/// How long the pipes may stay open once the hook's group is gone (a process that escaped
/// the group and holds them): then reading stops.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(1);

/// How a hook's process ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Ending {
    /// Its exit code (None: killed by a signal).
    Exited(Option<i32>),
    /// It ran past its timeout and was killed with its group.
    TimedOut,
    /// It could not be started (or waited for).
    Failed(String),
}

/// What a hook did.
#[derive(Debug)]
pub(super) struct Ran {
    pub ending: Ending,
    pub stdout: String,
    pub stderr: String,
    /// Whether stdout was longer than [`MAX_HOOK_OUTPUT_BYTES`] (the kept part is its start).
    pub stdout_cut: bool,
    pub stderr_cut: bool,
}

impl Ran {
    pub(super) fn failed(why: String) -> Self {
        Self {
            ending: Ending::Failed(why),
            stdout: String::new(),
            stderr: String::new(),
            stdout_cut: false,
            stderr_cut: false,
        }
    }
}

/// Runs `hook` with `stdin` as its input. Cancel-safe: dropping the future kills the group.
pub(super) async fn run(hook: &HookDef, stdin: Arc<[u8]>, env: &HookEnv) -> Ran {
    let mut spec = ProcessSpec::shell(&hook.command, env.cwd.clone());
    spec.capture_stdin = true;
    spec.env
        .push(("CLAUDE_PROJECT_DIR".into(), env.project_dir.clone().into()));
    if hook.source.sandboxed() {
        spec = match env.sandbox.apply(spec).await {
            Ok(spec) => spec,
            Err(error) => return Ran::failed(format!("cannot sandbox the hook: {error}")),
        };
    }
    let mut child = match ChildProcess::spawn(spec).await {
        Ok(child) => child,
        Err(error) => return Ran::failed(format!("cannot start sh: {error}")),
    };
    let (Some(mut input), Some(mut stdout), Some(mut stderr)) =
        (child.take_stdin(), child.take_stdout(), child.take_stderr())
    else {
        let _ = child.kill().await;
        return Ran::failed("cannot connect to the hook's stdin and output".to_owned());
    };
    let ended = CancellationToken::new();
    let timeout = hook.timeout;
    let waiter = async {
        let ending = tokio::select! {
            status = child.wait() => match status {
                Ok(status) => Ending::Exited(status.code()),
                Err(error) => Ending::Failed(format!("cannot wait for the hook: {error}")),
            },
            () = tokio::time::sleep(timeout) => Ending::TimedOut,
        };
        if ending == Ending::TimedOut {
            let _ = child.kill().await;
        }
        ended.cancel();
        ending
    };
    let writer = async {
        let bytes = &stdin[..stdin.len().min(MAX_HOOK_STDIN_BYTES)];
        tokio::select! {
            // A hook that does not read its input closes the pipe or leaves it full: either
            // way the write ends with the hook, and its result is not ours to judge.
            _ = async {
                let _ = input.write_all(bytes).await;
                let _ = input.shutdown().await;
                drop(input);
            } => {}
            () = ended.cancelled() => {}
        }
    };
    let (ending, (stdout, stdout_cut), (stderr, stderr_cut), ()) = tokio::join!(
        waiter,
        read_bounded(&mut stdout, &ended),
        read_bounded(&mut stderr, &ended),
        writer,
    );
    Ran {
        ending,
        stdout,
        stderr,
        stdout_cut,
        stderr_cut,
    }
}

/// Reads `reader` to its end (or until [`DRAIN_AFTER_EXIT`] after `ended`), keeping the first
/// [`MAX_HOOK_OUTPUT_BYTES`]; whether more came.
async fn read_bounded(
    reader: &mut (impl AsyncRead + Unpin),
    ended: &CancellationToken,
) -> (String, bool) {
    let mut kept: Vec<u8> = Vec::new();
    let mut cut = false;
    let read = async {
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            match reader.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(read) => {
                    let room = MAX_HOOK_OUTPUT_BYTES.saturating_sub(kept.len());
                    if read > room {
                        cut = true;
                    }
                    kept.extend_from_slice(&chunk[..read.min(room)]);
                }
            }
        }
    };
    let deadline = async {
        ended.cancelled().await;
        tokio::time::sleep(DRAIN_AFTER_EXIT).await;
    };
    tokio::select! {
        () = read => {}
        () = deadline => {}
    }
    (String::from_utf8_lossy(&kept).into_owned(), cut)
}
