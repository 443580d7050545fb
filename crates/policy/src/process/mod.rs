//! The one wrapper for child processes: explicit cwd and environment, null stdin, the child in
//! its own process group (stdin a pipe for MCP servers), the whole group killed (SIGKILL to -pgid) on stop and on drop, and the
//! child reaped. Nothing in agentd spawns a process any other way.
//!
//! The group does not outlive its leader: when the leader exits, whatever it left running in the
//! background (`sleep 30 &`) is killed too, and so is what left the group (`setsid … &`) but
//! still carries the child's marker, so no pipe stays open and nothing is orphaned. Nothing
//! outlives the daemon either: see [`supervisor`] (death signal, markers, records, reaping).
//!
//! Children are started from async tasks only (never from the blocking pool): the death signal
//! fires when the thread that started the child exits, and tokio's worker threads live as long
//! as the daemon.

#[cfg(unix)]
mod confine;
mod platform;
#[cfg(unix)]
mod procfs;
pub mod protected;
#[cfg(unix)]
pub mod sandbox;
#[cfg(windows)]
#[path = "sandbox_windows.rs"]
pub mod sandbox;
mod sandbox_config;
#[cfg(unix)]
pub mod sandbox_exec;
pub mod shell_program;
pub mod supervisor;
/// Helpers for tests of children, here and in the crates above (`test-support` feature).
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};

use process_wrap::tokio::{ChildWrapper, CommandWrap};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::task::JoinHandle;

/// Environment variables a child keeps from the daemon's environment; everything else (API keys,
/// tokens, secrets) is dropped.
pub const KEPT_ENV_VARS: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "TERM", "SHELL", "TMPDIR", "TZ",
];

/// What to do with the child's stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StderrMode {
    /// A pipe the caller takes with [`ChildProcess::take_stderr`].
    Capture,
    /// Each line is logged with `tracing` (long-lived helpers such as MCP servers).
    Tracing,
    Null,
}

/// How to start a child process. Nothing is inherited implicitly: cwd and env are explicit.
#[derive(Clone, Debug)]
pub struct ProcessSpec {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    /// The child's entire environment (plus its `AGENTD_PROCESS` marker).
    pub env: Vec<(OsString, OsString)>,
    /// Whether stdin is a pipe (taken with [`ChildProcess::take_stdin`]; MCP servers) or null.
    pub capture_stdin: bool,
    /// Whether stdout is a pipe (taken with [`ChildProcess::take_stdout`]) or null.
    pub capture_stdout: bool,
    pub stderr: StderrMode,
    /// The sandbox the child enters before exec (`run_shell` only), see [`sandbox`].
    pub confinement: Option<std::sync::Arc<sandbox::Confinement>>,
    /// Windows: `args` go on the command line as written, without the quoting of the C
    /// runtime's rules (for `cmd.exe`, which reads its line its own way); no effect on Unix.
    pub verbatim_args: bool,
}

impl ProcessSpec {
    /// `script` run by this platform's shell (`sh -c` on Unix; on Windows see
    /// [`shell_program`]) in `cwd` with the scrubbed environment, stdout and stderr captured.
    pub fn shell(script: &str, cwd: PathBuf) -> Self {
        let invocation = shell_program::invocation(script);
        Self {
            program: invocation.program,
            args: invocation.args,
            verbatim_args: invocation.verbatim,
            cwd,
            env: scrubbed_env(),
            capture_stdin: false,
            capture_stdout: true,
            stderr: StderrMode::Capture,
            confinement: None,
        }
    }
}

/// The daemon's environment reduced to [`KEPT_ENV_VARS`] and `LC_*`.
pub fn scrubbed_env() -> Vec<(OsString, OsString)> {
    scrub_env(std::env::vars_os())
}

/// `vars` reduced to [`KEPT_ENV_VARS`] and `LC_*`.
pub(crate) fn scrub_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    vars.into_iter()
        .filter(|(name, _)| {
            name.to_str()
                .is_some_and(|name| KEPT_ENV_VARS.contains(&name) || name.starts_with("LC_"))
        })
        .collect()
}

/// A running child process and its process group.
///
/// Dropping it kills the whole group and what escaped it; the leader is then reaped by tokio
/// (kill-on-drop), and members whose parent died by the daemon (a child subreaper, see
/// [`supervisor::reap_orphans`]) or, outside the daemon, by init.
#[derive(Debug)]
pub struct ChildProcess {
    child: Box<dyn ChildWrapper>,
    /// The leader's pid, which is the group id (the leader made the group).
    pgid: i32,
    /// Set once the group has been killed after the leader was reaped: the pgid may be reused
    /// from then on, so it is never signalled again.
    group_finished: bool,
    /// `AGENTD_PROCESS=<owner>.<n>`, in the environment of everything this child starts.
    marker: String,
    /// The group's record in the state dir, removed once the group is dead.
    record: Option<PathBuf>,
    /// Processes killed after the leader because they had left the group (`setsid … &`).
    escaped_killed: usize,
    stderr_logger: Option<JoinHandle<()>>,
}

impl ChildProcess {
    /// Starts the child in its own group, marked and recorded (see [`supervisor`]).
    pub async fn spawn(spec: ProcessSpec) -> io::Result<Self> {
        let (marker_name, marker_value) = supervisor::new_marker();
        let marker = format!("{marker_name}={marker_value}");
        // The one wrapper for children: this is where they are made (clippy.toml).
        #[allow(clippy::disallowed_methods)]
        let mut command = tokio::process::Command::new(&spec.program);
        platform::add_args(&mut command, &spec.args, spec.verbatim_args);
        command
            .current_dir(&spec.cwd)
            .env_clear()
            .envs(spec.env.iter().map(|(name, value)| (name, value)))
            .env(marker_name, marker_value)
            .stdin(if spec.capture_stdin {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(if spec.capture_stdout {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stderr(match spec.stderr {
                StderrMode::Capture | StderrMode::Tracing => Stdio::piped(),
                StderrMode::Null => Stdio::null(),
            });
        platform::prepare(&mut command, spec.confinement.clone())?;
        let mut wrapped = CommandWrap::from(command);
        platform::wrap(&mut wrapped);
        let mut child = wrapped.spawn()?;
        let pid = child
            .id()
            .ok_or_else(|| io::Error::other("child exited before its pid was read"))?;
        let pgid = i32::try_from(pid).map_err(io::Error::other)?;
        let stderr_logger = match spec.stderr {
            StderrMode::Tracing => child.stderr().take().map(|stderr| {
                let program = spec.program.to_string_lossy().into_owned();
                tokio::spawn(log_lines(stderr, program, pid))
            }),
            _ => None,
        };
        tracing::debug!(pid, program = ?spec.program, cwd = %spec.cwd.display(), "spawned child");
        let mut process = Self {
            child,
            pgid,
            group_finished: false,
            marker,
            record: None,
            escaped_killed: 0,
            stderr_logger,
        };
        process.record = tokio::task::spawn_blocking(move || platform::record(pgid))
            .await
            .ok()
            .flatten();
        Ok(process)
    }

    /// How many processes that had left the group were killed after the leader exited.
    pub fn escaped_killed(&self) -> usize {
        self.escaped_killed
    }

    /// The leader's pid (also the process group id).
    pub fn pid(&self) -> u32 {
        self.pgid.unsigned_abs()
    }

    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin().take()
    }

    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout().take()
    }

    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr().take()
    }

    /// Waits for the leader to exit, then kills what is left of its group and what escaped it.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        // The leader only (see `platform::wait_leader`); what it left is killed right below.
        let status = platform::wait_leader(&mut self.child).await?;
        if !self.group_finished {
            self.finish_group();
            let marker = self.marker.clone();
            let pgid = self.pgid;
            let record = self.record.take();
            let cleanup = tokio::task::spawn_blocking(move || {
                let killed = platform::kill_escaped(&marker, pgid);
                remove_record(record);
                killed
            });
            self.escaped_killed += cleanup.await.unwrap_or(0);
        }
        Ok(status)
    }

    /// Kills the whole group and reaps the leader.
    pub async fn kill(&mut self) -> io::Result<ExitStatus> {
        if !self.group_finished {
            platform::kill_group(self.child.as_mut(), self.pgid);
        }
        self.wait().await
    }

    /// SIGTERM to the whole group (a polite stop; [`ChildProcess::kill`] follows after a
    /// grace). Nothing once the group is finished.
    pub fn terminate(&mut self) {
        if !self.group_finished {
            platform::terminate_group(self.child.as_mut(), self.pgid);
        }
    }

    fn finish_group(&mut self) {
        if !self.group_finished {
            platform::kill_group(self.child.as_mut(), self.pgid);
            self.group_finished = true;
        }
    }
}

impl Drop for ChildProcess {
    /// Only reached when a caller is dropped mid-run (an aborted task): the cleanup is done
    /// here, synchronously; a `/proc` scan and an unlink are short.
    fn drop(&mut self) {
        if !self.group_finished {
            platform::kill_group(self.child.as_mut(), self.pgid);
            platform::kill_escaped(&self.marker, self.pgid);
            remove_record(self.record.take());
        }
        if let Some(logger) = self.stderr_logger.take() {
            logger.abort();
        }
    }
}

#[cfg(unix)]
use platform::try_in_child;

/// When agentd was started as the sandbox's helper (`agentd __sandbox-exec`, Linux), runs it
/// and returns its exit code; None for an ordinary start (always, where there is no helper).
pub fn main_if_sandbox_helper() -> Option<std::process::ExitCode> {
    #[cfg(unix)]
    return sandbox_exec::main_if_helper();
    #[cfg(not(unix))]
    None
}

fn remove_record(record: Option<PathBuf>) {
    if let Some(record) = record
        && let Err(error) = std::fs::remove_file(&record)
        && error.kind() != io::ErrorKind::NotFound
    {
        tracing::warn!(%error, record = %record.display(), "cannot remove a process record");
    }
}

async fn log_lines(stderr: ChildStderr, program: String, pid: u32) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(target: "agentd::child", pid, program = %program, "{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{process_is_dead, wait_until_dead};
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn env_is_exactly_the_given_one_and_cwd_is_set() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = ProcessSpec::shell("pwd; env", dir.path().to_path_buf());
        spec.env = scrub_env([
            ("PATH".into(), std::env::var_os("PATH").unwrap()),
            ("LC_ALL".into(), "C".into()),
            ("MY_API_KEY".into(), "sk-secret".into()),
            ("GITHUB_TOKEN".into(), "ghp".into()),
        ]);
        let mut child = ChildProcess::spawn(spec).await.unwrap();
        let mut stdout = child.take_stdout().unwrap();
        let mut text = String::new();
        stdout.read_to_string(&mut text).await.unwrap();
        assert!(child.wait().await.unwrap().success());
        let cwd = dir.path().canonicalize().unwrap();
        assert!(text.starts_with(&format!("{}\n", cwd.display())), "{text}");
        assert!(text.contains("\nLC_ALL=C\n"), "{text}");
        for line in text.lines().skip(1) {
            let name = line.split('=').next().unwrap();
            assert!(
                [
                    "PATH",
                    "LC_ALL",
                    "PWD",
                    "SHLVL",
                    "_",
                    "OLDPWD",
                    supervisor::MARKER_VAR
                ]
                .contains(&name),
                "unexpected variable {name} (sh sets PWD, SHLVL, _)"
            );
        }
    }

    #[tokio::test]
    async fn drop_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let mut spec = ProcessSpec::shell(
            "sleep 30 & echo $! > pid; echo started; wait",
            dir.path().to_path_buf(),
        );
        spec.stderr = StderrMode::Null;
        let mut child = ChildProcess::spawn(spec).await.unwrap();
        let mut stdout = BufReader::new(child.take_stdout().unwrap()).lines();
        assert_eq!(
            stdout.next_line().await.unwrap().as_deref(),
            Some("started")
        );
        let grandchild: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(!process_is_dead(grandchild));
        drop(child);
        wait_until_dead(grandchild).await;
    }

    #[tokio::test]
    async fn leftovers_are_killed_when_the_leader_exits() {
        let dir = tempfile::tempdir().unwrap();
        let spec = ProcessSpec::shell("sleep 30 & echo $!", dir.path().to_path_buf());
        let mut child = ChildProcess::spawn(spec).await.unwrap();
        let mut stdout = child.take_stdout().unwrap();
        let status = child.wait().await.unwrap();
        assert!(status.success());
        // The background sleep held stdout open; killing the group closes it.
        let mut text = String::new();
        stdout.read_to_string(&mut text).await.unwrap();
        wait_until_dead(text.trim().parse().unwrap()).await;
    }

    #[tokio::test]
    async fn stderr_to_tracing_does_not_block_the_child() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = ProcessSpec::shell(
            "for i in $(seq 1 20000); do echo noise >&2; done; echo out",
            dir.path().to_path_buf(),
        );
        spec.stderr = StderrMode::Tracing;
        let mut child = ChildProcess::spawn(spec).await.unwrap();
        assert!(child.take_stderr().is_none());
        let mut stdout = child.take_stdout().unwrap();
        let mut text = String::new();
        stdout.read_to_string(&mut text).await.unwrap();
        assert_eq!(text, "out\n");
        assert!(child.wait().await.unwrap().success());
    }
}
