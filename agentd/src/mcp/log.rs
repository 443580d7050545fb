//! What a stdio MCP server writes on stderr: each line goes to tracing, to the server's log
//! file under the manager's log dir (0700 dir, 0600 file, rotated once past a size bound) and
//! to a bounded in-memory tail that a `failed` status carries.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};

/// Bounds of one server's stderr record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StderrLimits {
    /// Lines kept in memory for `Failed.stderr_tail`: enough to show why a start failed.
    pub tail_lines: usize,
    /// A longer line is cut (in the tail, the file and tracing); a server writing without
    /// newlines cannot grow the daemon's memory.
    pub max_line_bytes: usize,
    /// Past this size the log file is renamed to `<name>.log.1` (replacing the older one) and a
    /// new file starts: at most twice this on disk per server.
    pub max_file_bytes: u64,
}

impl Default for StderrLimits {
    fn default() -> Self {
        Self {
            tail_lines: 20,
            max_line_bytes: 4096,
            max_file_bytes: 1024 * 1024,
        }
    }
}

/// One server's stderr record, shared by its successive processes.
#[derive(Debug)]
pub struct ServerLog {
    server: String,
    path: PathBuf,
    limits: StderrLimits,
    tail: Mutex<VecDeque<String>>,
}

impl ServerLog {
    /// The record of server `server` in `dir`, file `<file_stem>.log`.
    pub fn new(server: &str, dir: &Path, file_stem: &str, limits: StderrLimits) -> Arc<Self> {
        Arc::new(Self {
            server: server.to_owned(),
            path: dir.join(format!("{file_stem}.log")),
            limits,
            tail: Mutex::new(VecDeque::new()),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The last lines, oldest first, joined by newlines.
    pub fn tail(&self) -> String {
        let tail = self
            .tail
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        tail.iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Forgets the tail (a new start after `restart`).
    pub fn clear_tail(&self) {
        self.tail
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clear();
    }

    /// Reads `stderr` line by line until it ends, recording each line. The file is opened
    /// once per process; if it cannot be, lines still reach tracing and the tail.
    pub async fn record(self: Arc<Self>, stderr: impl AsyncRead + Unpin, pid: u32) {
        let mut file = match self.open().await {
            Ok(file) => Some(file),
            Err(error) => {
                tracing::warn!(server = %self.server, path = %self.path.display(), "cannot open the MCP server's log: {error:#}");
                None
            }
        };
        let mut reader = BufReader::new(stderr);
        let mut buffer = Vec::new();
        loop {
            buffer.clear();
            let limit = u64::try_from(self.limits.max_line_bytes).unwrap_or(u64::MAX);
            match (&mut reader)
                .take(limit)
                .read_until(b'\n', &mut buffer)
                .await
            {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let cut = buffer.last() != Some(&b'\n');
            if cut {
                // Skip the rest of an overlong line.
                let mut rest = Vec::new();
                loop {
                    rest.clear();
                    match (&mut reader).take(limit).read_until(b'\n', &mut rest).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) if rest.last() == Some(&b'\n') => break,
                        Ok(_) => {}
                    }
                }
            }
            let text = String::from_utf8_lossy(&buffer);
            let mut line = text.trim_end_matches(['\n', '\r']).to_owned();
            if cut {
                line.push_str(" […]");
            }
            tracing::info!(target: "agentd::mcp", server = %self.server, pid, "{line}");
            self.push_tail(&line);
            if let Some(open) = file.as_mut()
                && let Err(error) = self.append(open, &line).await
            {
                tracing::warn!(server = %self.server, "cannot write the MCP server's log: {error:#}");
                file = None;
            }
        }
        if let Some(mut open) = file {
            let _ = open.file.flush().await;
        }
    }

    fn push_tail(&self, line: &str) {
        let mut tail = self
            .tail
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if tail.len() >= self.limits.tail_lines {
            tail.pop_front();
        }
        if self.limits.tail_lines > 0 {
            tail.push_back(line.to_owned());
        }
    }

    async fn open(&self) -> anyhow::Result<OpenLog> {
        let path = self.path.clone();
        let file = tokio::task::spawn_blocking(move || open_private_append(&path)).await??;
        let size = file.metadata()?.len();
        Ok(OpenLog {
            file: tokio::fs::File::from_std(file),
            size,
        })
    }

    async fn append(&self, open: &mut OpenLog, line: &str) -> anyhow::Result<()> {
        let bytes = line.len() as u64 + 1;
        if open.size + bytes > self.limits.max_file_bytes {
            open.file.flush().await?;
            let path = self.path.clone();
            let file = tokio::task::spawn_blocking(move || {
                let mut rotated = path.clone().into_os_string();
                rotated.push(".1");
                std::fs::rename(&path, &rotated)?;
                open_private_append(&path)
            })
            .await??;
            open.file = tokio::fs::File::from_std(file);
            open.size = 0;
        }
        open.file.write_all(line.as_bytes()).await?;
        open.file.write_all(b"\n").await?;
        open.size += bytes;
        Ok(())
    }
}

struct OpenLog {
    file: tokio::fs::File,
    size: u64,
}

/// Opens (creating 0600) `path` for appending, in a private (0700) directory. Blocking.
fn open_private_append(path: &Path) -> anyhow::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        crate::paths::prepare_private_dir(dir)?;
    }
    crate::regular_file::open_with(
        path,
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(crate::paths::PRIVATE_FILE_MODE),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[tokio::test]
    async fn lines_reach_the_tail_and_a_private_file_that_rotates() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("mcp");
        let limits = StderrLimits {
            tail_lines: 2,
            max_line_bytes: 8,
            max_file_bytes: 20,
        };
        let log = ServerLog::new("srv", &logs, "srv-x", limits);
        let input: &[u8] = b"one\ntwo\nthree\na-very-long-line\nfive\n";
        log.clone().record(input, 1).await;
        assert_eq!(log.tail(), "a-very-l […]\nfive");
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&logs), 0o700);
        assert_eq!(mode(log.path()), 0o600);
        let current = std::fs::read_to_string(log.path()).unwrap();
        let rotated = std::fs::read_to_string(logs.join("srv-x.log.1")).unwrap();
        assert_eq!(
            format!("{rotated}{current}"),
            "one\ntwo\nthree\na-very-l […]\nfive\n"
        );
        assert!(current.len() as u64 <= 20, "{current:?}");
    }
}
