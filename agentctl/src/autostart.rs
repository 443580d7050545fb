//! Starting the daemon on demand: when nothing answers on the socket, spawn `agentd` detached
//! (found next to this binary, else on PATH) and wait, bounded, until `initialize` succeeds.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;

use protocol::daemon::ClientCapabilities;

use crate::client::{ClientError, Connection};

/// How long to wait for a freshly spawned daemon to answer.
pub const START_TIMEOUT: Duration = Duration::from_secs(15);

/// How often to retry connecting while the daemon starts: it answers about 12 ms after it is
/// spawned, so a few milliseconds between tries keep the first request close to that (a
/// failed connect to a missing socket costs microseconds).
const CONNECT_RETRY: Duration = Duration::from_millis(3);

/// Connect to the daemon on `socket`, declaring `capabilities`; if nothing answers and `start`
/// is true, start it first (the connection then says `started_daemon`).
pub async fn connect_or_start(
    socket: &Path,
    start: bool,
    client_name: &str,
    capabilities: ClientCapabilities,
) -> Result<Connection, ClientError> {
    match Connection::connect_declaring(socket, client_name, capabilities.clone()).await {
        Ok(connection) => Ok(connection),
        Err(ClientError::Unreachable { .. }) if start => {
            start_daemon(socket).await?;
            let mut connection =
                Connection::connect_declaring(socket, client_name, capabilities).await?;
            connection.started_daemon = true;
            Ok(connection)
        }
        Err(err) => Err(err),
    }
}

/// The `agentd` binary to start: next to this executable, else `agentd` on PATH.
pub fn daemon_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("AGENTD_BIN").filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    if let Ok(exe) = std::env::current_exe()
        && let Some(dir) = exe.parent()
    {
        let sibling = dir.join("agentd");
        if sibling.is_file() {
            return sibling;
        }
    }
    PathBuf::from("agentd")
}

/// Spawn the daemon detached (own process group, no terminal) and wait until it answers.
pub async fn start_daemon(socket: &Path) -> Result<(), ClientError> {
    let binary = daemon_binary();
    let unreachable = |reason: String| ClientError::Unreachable {
        socket: socket.to_path_buf(),
        reason,
    };
    let mut command = std::process::Command::new(&binary);
    command
        .arg("--socket")
        .arg(socket)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        // Outlives this shell: keep no directory of the user's busy.
        .current_dir(crate::platform::detached_dir());
    // Its own process group: Ctrl-C in this terminal must not reach the daemon.
    crate::platform::detach(&mut command);
    let mut child = tokio::process::Command::from(command)
        .kill_on_drop(false)
        .spawn()
        .map_err(|err| {
            unreachable(format!(
                "cannot start {}: {err}; install agentd next to agentctl or on PATH, or set AGENTD_BIN to its path",
                binary.display()
            ))
        })?;
    // Collect what the daemon says while starting, so a failure can be shown; bounded.
    let mut stderr = child.stderr.take();
    let stderr_reader = tokio::spawn(async move {
        let mut collected = Vec::new();
        if let Some(stderr) = stderr.as_mut() {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                if collected.len() < 64 * 1024 {
                    collected.extend_from_slice(&chunk[..n]);
                }
            }
        }
        String::from_utf8_lossy(&collected).into_owned()
    });

    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(connection) = Connection::connect(socket, "agentctl-autostart").await {
            drop(connection);
            stderr_reader.abort();
            // The daemon runs on; reap it from a detached waiter so it never becomes a zombie
            // of ours while we live.
            tokio::spawn(async move {
                let _ = child.wait().await;
            });
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            let output = stderr_reader.await.unwrap_or_default();
            let reason =
                last_error_line(&output).unwrap_or_else(|| format!("agentd exited with {status}"));
            return Err(unreachable(format!("agentd failed to start: {reason}")));
        }
        if Instant::now() >= deadline {
            return Err(unreachable(format!(
                "agentd did not answer within {}s of starting; see its log",
                START_TIMEOUT.as_secs()
            )));
        }
        tokio::time::sleep(CONNECT_RETRY).await;
    }
}

fn last_error_line(output: &str) -> Option<String> {
    output
        .lines()
        .rev()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(|line| line.strip_prefix("agentd: ").unwrap_or(line).to_owned())
}
