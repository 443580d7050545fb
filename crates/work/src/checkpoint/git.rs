//! The `git` command as the checkpoint store drives it: its own `GIT_DIR` and the workspace as
//! its work tree, no system or global configuration (no fsmonitor, hooks, filters, external
//! diffs or textconv a user's or a repository's config could name), a fixed identity and date
//! (a checkpoint's commit id is a pure function of its tree and message), the C locale, every
//! call bounded in time and in output, and started through `process` like every child.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use agentd_policy::process::{ChildProcess, ProcessSpec, StderrMode, scrubbed_env};

/// How long one git call may take before it is killed: a checkpoint that takes this long is
/// not worth waiting for (the run goes on without it, with a warning).
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The most of a failing call's stderr kept for its error.
const STDERR_KEPT: usize = 2048;

/// Why a git call failed, in words for a person.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot start git: {0}")]
    Spawn(std::io::Error),
    #[error("git {command} failed: {message}")]
    Failed { command: String, message: String },
    #[error("git {command} took longer than {}s and was stopped", CALL_TIMEOUT.as_secs())]
    TimedOut { command: String },
    #[error("git {command} printed more than {limit} bytes")]
    TooMuchOutput { command: String, limit: usize },
}

/// One store's git: its directory and the work tree it snapshots.
#[derive(Clone, Debug)]
pub(crate) struct Git {
    pub git_dir: PathBuf,
    pub work_tree: PathBuf,
}

impl Git {
    fn env(&self) -> Vec<(OsString, OsString)> {
        let mut env = scrubbed_env();
        env.retain(|(name, _)| name != "LANG" && !name.to_string_lossy().starts_with("LC_"));
        let fixed: [(&str, &OsStr); 14] = [
            ("GIT_DIR", self.git_dir.as_os_str()),
            ("GIT_WORK_TREE", self.work_tree.as_os_str()),
            ("GIT_CONFIG_NOSYSTEM", OsStr::new("1")),
            ("GIT_CONFIG_GLOBAL", OsStr::new("/dev/null")),
            ("GIT_TERMINAL_PROMPT", OsStr::new("0")),
            ("GIT_OPTIONAL_LOCKS", OsStr::new("0")),
            ("GIT_AUTHOR_NAME", OsStr::new("agentd")),
            ("GIT_AUTHOR_EMAIL", OsStr::new("agentd@localhost")),
            ("GIT_AUTHOR_DATE", OsStr::new("@0 +0000")),
            ("GIT_COMMITTER_NAME", OsStr::new("agentd")),
            ("GIT_COMMITTER_EMAIL", OsStr::new("agentd@localhost")),
            ("GIT_COMMITTER_DATE", OsStr::new("@0 +0000")),
            ("LC_ALL", OsStr::new("C")),
            ("GIT_NO_REPLACE_OBJECTS", OsStr::new("1")),
        ];
        env.extend(
            fixed
                .into_iter()
                .map(|(name, value)| (OsString::from(name), value.to_os_string())),
        );
        env
    }

    fn spec(&self, args: &[&OsStr], stdin: bool) -> ProcessSpec {
        ProcessSpec {
            program: "git".into(),
            args: args.iter().map(|arg| arg.to_os_string()).collect(),
            cwd: self.work_tree.clone(),
            env: self.env(),
            capture_stdin: stdin,
            capture_stdout: true,
            stderr: StderrMode::Capture,
            confinement: None,
            verbatim_args: false,
        }
    }

    /// Runs `git args…` with `input` on its stdin (None: no stdin), and returns its stdout
    /// (at most `limit` bytes, else an error). A non-zero exit is an error with its stderr.
    pub(crate) async fn run(
        &self,
        args: &[&str],
        input: Option<Vec<u8>>,
        limit: usize,
    ) -> Result<Vec<u8>, GitError> {
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        self.run_os(&args, input, limit).await
    }

    /// As [`Git::run`], with arguments that may not be UTF-8.
    pub(crate) async fn run_os(
        &self,
        args: &[&OsStr],
        input: Option<Vec<u8>>,
        limit: usize,
    ) -> Result<Vec<u8>, GitError> {
        let command = args
            .first()
            .map(|arg| arg.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut child = ChildProcess::spawn(self.spec(args, input.is_some()))
            .await
            .map_err(GitError::Spawn)?;
        let stdin = child.take_stdin();
        let stdout = child.take_stdout();
        let stderr = child.take_stderr();
        let talk = async {
            let feed = async {
                if let (Some(mut stdin), Some(input)) = (stdin, input) {
                    // A git that stopped reading (it failed) is reported by its exit.
                    let _ = stdin.write_all(&input).await;
                    let _ = stdin.shutdown().await;
                }
            };
            let (_, out, err) = tokio::join!(
                feed,
                read_bounded(stdout, limit),
                read_bounded(stderr, STDERR_KEPT)
            );
            let status = child.wait().await;
            (out, err, status)
        };
        let (out, err, status) = match tokio::time::timeout(CALL_TIMEOUT, talk).await {
            Ok(done) => done,
            // Dropping the child kills its group.
            Err(_) => return Err(GitError::TimedOut { command }),
        };
        let Some(out) = out else {
            return Err(GitError::TooMuchOutput { command, limit });
        };
        let status = status.map_err(GitError::Spawn)?;
        if !status.success() {
            let stderr = err.unwrap_or_default();
            let message = String::from_utf8_lossy(&stderr).trim().to_owned();
            let message = if message.is_empty() {
                format!("exit status {status}")
            } else {
                message
            };
            return Err(GitError::Failed { command, message });
        }
        Ok(out)
    }

    /// Starts `git args…` with stdin and stdout pipes, for a caller that streams both
    /// (`cat-file --batch`).
    pub(crate) async fn start(&self, args: &[&str]) -> Result<ChildProcess, GitError> {
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        let mut spec = self.spec(&args, true);
        spec.stderr = StderrMode::Null;
        ChildProcess::spawn(spec).await.map_err(GitError::Spawn)
    }
}

/// All of `reader` if it is at most `limit` bytes (None past it; the rest is drained so the
/// writer is not blocked).
async fn read_bounded(
    reader: Option<impl tokio::io::AsyncRead + Unpin>,
    limit: usize,
) -> Option<Vec<u8>> {
    let mut reader = reader?;
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut over = false;
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                if !over && bytes.len() + read <= limit {
                    bytes.extend_from_slice(&chunk[..read]);
                } else {
                    over = true;
                    bytes = Vec::new();
                }
            }
        }
    }
    (!over).then_some(bytes)
}

/// Whether `git` can be run here, and its version line (else why not), asked once.
pub(crate) async fn probe(any_dir: &Path) -> Result<String, String> {
    let git = Git {
        git_dir: any_dir.join("probe-none"),
        work_tree: any_dir.to_path_buf(),
    };
    match git.run(&["--version"], None, 4096).await {
        Ok(out) => Ok(String::from_utf8_lossy(&out).trim().to_owned()),
        Err(GitError::Spawn(error)) if error.kind() == std::io::ErrorKind::NotFound => {
            Err("git is not installed (no `git` on the daemon's PATH); install git and restart the daemon to have checkpoints".to_owned())
        }
        Err(error) => Err(format!("{error}; checkpoints are off")),
    }
}
