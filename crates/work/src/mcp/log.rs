//! What a stdio MCP server writes on stderr: each line goes to tracing, to the server's log
//! file under the manager's log dir (0700 dir, 0600 file, rotated once past a size bound) and
//! to a bounded in-memory tail that a `failed` status carries. Stderr is read in large chunks
//! and the record has a budget of bytes per second: what a flooding server writes beyond it is
//! read and dropped, and the log says once per second how much ("dropped N bytes of stderr"),
//! so a server writing stderr in a tight loop costs the daemon neither a core nor the disk.
//! A server's `notifications/message` (stdio or HTTP) goes to the same file, marked as such,
//! so `agentctl mcp logs` shows it.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

/// Bounds of one server's stderr record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StderrLimits {
    /// Lines kept in memory for `Failed.stderr_tail`: enough to show why a start failed.
    pub(crate) tail_lines: usize,
    /// A longer line is cut (in the tail, the file and tracing); a server writing without
    /// newlines cannot grow the daemon's memory.
    pub(crate) max_line_bytes: usize,
    /// Past this size the log file is renamed to `<name>.log.1` (replacing the older one) and a
    /// new file starts: at most twice this on disk per server.
    pub(crate) max_file_bytes: u64,
    /// Bytes of stderr recorded per second (in [`BUDGET_INTERVAL`]s); the rest is dropped and
    /// counted. Far above what a server says about itself, far below what a loop writes.
    pub max_bytes_per_second: usize,
}

impl Default for StderrLimits {
    fn default() -> Self {
        Self {
            tail_lines: 20,
            max_line_bytes: 4096,
            max_file_bytes: 1024 * 1024,
            max_bytes_per_second: 64 * 1024,
        }
    }
}

/// The interval `max_bytes_per_second` is counted over, and how often a drop is said.
pub(crate) const BUDGET_INTERVAL: Duration = Duration::from_secs(1);

/// One read of stderr: a flood is taken a pipe's worth at a time, not line by line.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// While a server is over its budget, the wait between two reads: the pipe fills meanwhile,
/// so each read takes a pipe's worth and the daemon wakes at most about 100 times a second
/// for a flood (a server writing faster waits on its pipe, as it would on a slow terminal).
const OVER_BUDGET_PAUSE: Duration = Duration::from_millis(10);

/// One server's stderr record, shared by its successive processes.
#[derive(Debug)]
pub(crate) struct ServerLog {
    server: String,
    path: PathBuf,
    limits: StderrLimits,
    tail: Mutex<VecDeque<String>>,
    /// The log file, shared by the stderr record and `notifications/message`, so one writer
    /// counts its size and rotates it.
    file: tokio::sync::Mutex<LogFile>,
}

/// The log file's state.
#[derive(Debug)]
enum LogFile {
    /// Not opened yet (or again, for a new process after a failure).
    Closed,
    Open(OpenLog),
    /// Opening or writing failed: lines reach tracing (and the tail) only.
    Failed,
}

impl ServerLog {
    /// The record of server `server` in `dir`, file `<file_stem>.log`.
    pub(crate) fn new(
        server: &str,
        dir: &Path,
        file_stem: &str,
        limits: StderrLimits,
    ) -> Arc<Self> {
        Arc::new(Self {
            server: server.to_owned(),
            path: dir.join(format!("{file_stem}.log")),
            limits,
            tail: Mutex::new(VecDeque::new()),
            file: tokio::sync::Mutex::new(LogFile::Closed),
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The last lines, oldest first, joined by newlines.
    pub(crate) fn tail(&self) -> String {
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
    pub(crate) fn clear_tail(&self) {
        self.tail
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clear();
    }

    /// Reads `stderr` in chunks until it ends, recording each line within the budget. The
    /// file is opened once per process (and shared with the server's log messages); if it
    /// cannot be, lines still reach tracing and the tail.
    pub(crate) async fn record(self: Arc<Self>, mut stderr: impl AsyncRead + Unpin, pid: u32) {
        {
            // Opened anew for each process (a deleted or failed file is made again).
            let mut file = self.file.lock().await;
            if let LogFile::Open(open) = &mut *file {
                let _ = open.file.flush().await;
            }
            *file = LogFile::Closed;
            self.ensure_open(&mut file).await;
        }
        let mut sink = Sink { log: &self, pid };
        let mut lines = LineSplitter::new(self.limits.max_line_bytes);
        let mut budget = Budget::new(self.limits.max_bytes_per_second, Instant::now());
        let mut chunk = vec![0u8; READ_CHUNK_BYTES];
        loop {
            if budget.dropped > 0 {
                tokio::time::sleep(OVER_BUDGET_PAUSE).await;
            }
            let read = tokio::select! {
                read = stderr.read(&mut chunk) => read,
                // A drop is said when its interval ends, even if the server went quiet.
                () = tokio::time::sleep_until(budget.window_end()), if budget.dropped > 0 => {
                    if let Some(dropped) = budget.roll(Instant::now()) {
                        sink.dropped(dropped).await;
                    }
                    continue;
                }
            };
            let read = match read {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            if let Some(dropped) = budget.roll(Instant::now()) {
                sink.dropped(dropped).await;
            }
            let data = &chunk[..read];
            let kept = budget.take(data.len());
            for line in lines.push(&data[..kept]) {
                sink.line(line).await;
            }
            if kept < data.len() {
                // The rest of this line and everything up to the next interval is dropped;
                // recording starts again at a line's start.
                if let Some(line) = lines.cut() {
                    sink.line(line).await;
                }
                lines.resync();
            }
        }
        if let Some(line) = lines.finish() {
            sink.line(line).await;
        }
        if budget.dropped > 0 {
            sink.dropped(budget.dropped).await;
        }
        if let LogFile::Open(open) = &mut *self.file.lock().await {
            let _ = open.file.flush().await;
        }
    }

    /// Opens the file if it is closed; a failure is said once and leaves it `Failed`.
    async fn ensure_open(&self, file: &mut LogFile) {
        if matches!(file, LogFile::Closed) {
            *file = match self.open().await {
                Ok(open) => LogFile::Open(open),
                Err(error) => {
                    tracing::warn!(server = %self.server, path = %self.path.display(), "cannot open the MCP server's log: {error:#}");
                    LogFile::Failed
                }
            };
        }
    }

    /// Appends `line` to the file (flushed when `flush`), unless it failed.
    async fn write(&self, line: &str, flush: bool) {
        let mut file = self.file.lock().await;
        self.ensure_open(&mut file).await;
        if let LogFile::Open(open) = &mut *file {
            let mut written = self.append(open, line).await;
            if written.is_ok() && flush {
                written = open.file.flush().await.map_err(Into::into);
            }
            if let Err(error) = written {
                tracing::warn!(server = %self.server, "cannot write the MCP server's log: {error:#}");
                *file = LogFile::Failed;
            }
        }
    }

    /// Records a `notifications/message` of the server: `[level logger] text`, each line of
    /// `text` cut to `max_line_bytes`.
    pub(crate) async fn server_message(&self, level: &str, logger: Option<&str>, text: &str) {
        let mut lines = LineSplitter::new(self.limits.max_line_bytes);
        let prefix = match logger {
            Some(logger) => format!("[{level} {logger}] "),
            None => format!("[{level}] "),
        };
        let mut recorded = lines.push(format!("{prefix}{text}\n").as_bytes());
        recorded.extend(lines.finish());
        for line in recorded {
            tracing::debug!(target: "agentd::mcp", server = %self.server, "{line}");
            self.write(&line, true).await;
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
                // A rotation (the full log moved aside to `.1`), not a replacement of a
                // state file: nothing is written through the rename.
                #[allow(clippy::disallowed_methods)]
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

/// Where recorded lines go: tracing, the tail and the file (until a write fails).
struct Sink<'a> {
    log: &'a ServerLog,
    pid: u32,
}

impl Sink<'_> {
    async fn line(&mut self, line: String) {
        let (log, pid) = (self.log, self.pid);
        tracing::info!(target: "agentd::mcp", server = %log.server, pid, "{line}");
        log.push_tail(&line);
        log.write(&line, false).await;
    }

    /// The notice of bytes dropped over the budget (in the file and tracing, not the tail,
    /// which keeps the server's own words).
    async fn dropped(&mut self, bytes: u64) {
        let log = self.log;
        let notice = format!(
            "[agentd: dropped {bytes} bytes of stderr: over the budget of {} bytes per second]",
            log.limits.max_bytes_per_second
        );
        tracing::warn!(server = %log.server, pid = self.pid, "{notice}");
        log.write(&notice, false).await;
    }
}

/// Bytes recorded in the current interval and bytes dropped in it.
struct Budget {
    per_interval: usize,
    window_start: Instant,
    used: usize,
    dropped: u64,
}

impl Budget {
    fn new(per_interval: usize, now: Instant) -> Self {
        Self {
            per_interval,
            window_start: now,
            used: 0,
            dropped: 0,
        }
    }

    fn window_end(&self) -> Instant {
        self.window_start + BUDGET_INTERVAL
    }

    /// Starts a new interval once the current one is over; the bytes it dropped, if any.
    fn roll(&mut self, now: Instant) -> Option<u64> {
        if now < self.window_end() {
            return None;
        }
        let dropped = std::mem::take(&mut self.dropped);
        self.window_start = now;
        self.used = 0;
        (dropped > 0).then_some(dropped)
    }

    /// How many of `len` new bytes may be recorded; the rest count as dropped.
    fn take(&mut self, len: usize) -> usize {
        let kept = len.min(self.per_interval.saturating_sub(self.used));
        self.used += kept;
        self.dropped += (len - kept) as u64;
        kept
    }
}

/// Cuts chunks into lines of at most `max_line_bytes` (a longer one ends in ` […]` and the
/// rest of it is skipped), carrying an unfinished line over to the next chunk.
struct LineSplitter {
    max_line_bytes: usize,
    partial: Vec<u8>,
    /// Skipping to the next newline: the rest of a cut line, or bytes after a drop.
    skipping: bool,
}

impl LineSplitter {
    fn new(max_line_bytes: usize) -> Self {
        Self {
            max_line_bytes,
            partial: Vec::new(),
            skipping: false,
        }
    }

    /// The lines `data` completes.
    fn push(&mut self, mut data: &[u8]) -> Vec<String> {
        let mut lines = Vec::new();
        while !data.is_empty() {
            let newline = data.iter().position(|&byte| byte == b'\n');
            let (piece, rest) = match newline {
                Some(at) => (&data[..at], &data[at + 1..]),
                None => (data, &[][..]),
            };
            data = rest;
            if self.skipping {
                self.skipping = newline.is_none();
                continue;
            }
            let room = self.max_line_bytes.saturating_sub(self.partial.len());
            if piece.len() > room {
                self.partial.extend_from_slice(&piece[..room]);
                lines.extend(self.cut());
                self.skipping = newline.is_none();
            } else {
                self.partial.extend_from_slice(piece);
                if newline.is_some() {
                    lines.push(self.take_line(""));
                }
            }
        }
        lines
    }

    /// The unfinished line, marked as cut (None when there is none).
    fn cut(&mut self) -> Option<String> {
        (!self.partial.is_empty()).then(|| self.take_line(" […]"))
    }

    /// Skip to the next newline: what follows a drop starts mid-line.
    fn resync(&mut self) {
        self.partial.clear();
        self.skipping = true;
    }

    /// The last line, when the stream ended without a newline.
    fn finish(&mut self) -> Option<String> {
        (!self.partial.is_empty()).then(|| self.take_line(""))
    }

    fn take_line(&mut self, suffix: &str) -> String {
        let text = String::from_utf8_lossy(&self.partial);
        let mut line = text.trim_end_matches('\r').to_owned();
        line.push_str(suffix);
        self.partial.clear();
        line
    }
}

#[derive(Debug)]
struct OpenLog {
    file: tokio::fs::File,
    size: u64,
}

/// Opens (creating 0600) `path` for appending, in a private (0700) directory. Blocking.
fn open_private_append(path: &Path) -> anyhow::Result<std::fs::File> {
    if let Some(dir) = path.parent() {
        agentd_core::paths::prepare_private_dir(dir)?;
    }
    agentd_core::regular_file::open_with(
        path,
        agentd_core::platform::create_mode(
            std::fs::OpenOptions::new().append(true).create(true),
            agentd_core::paths::PRIVATE_FILE_MODE,
        ),
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
            ..StderrLimits::default()
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

    /// A flood is recorded up to the budget of its interval, the rest read, dropped and
    /// counted in one notice.
    #[tokio::test]
    async fn a_flood_is_recorded_up_to_the_budget_and_the_drop_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let limits = StderrLimits {
            max_bytes_per_second: 1000,
            max_file_bytes: 1024 * 1024,
            ..StderrLimits::default()
        };
        let log = ServerLog::new("srv", dir.path(), "srv-x", limits);
        // 5000 lines of 10 bytes: one read.
        let flood: Vec<u8> = (0..5000)
            .flat_map(|n| format!("line{n:05}\n").into_bytes())
            .collect();
        log.clone().record(&flood[..], 1).await;
        let text = std::fs::read_to_string(log.path()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let expected: Vec<String> = (0..100).map(|n| format!("line{n:05}")).collect();
        assert_eq!(
            lines[..100],
            expected[..],
            "1000 bytes of budget: 100 lines"
        );
        assert_eq!(
            lines[100..],
            ["[agentd: dropped 49000 bytes of stderr: over the budget of 1000 bytes per second]"]
        );
        assert_eq!(log.tail().lines().last(), Some("line00099"));
    }

    /// The budget starts over each interval and hands back what the last one dropped.
    #[test]
    fn the_budget_starts_over_each_interval() {
        let start = Instant::now();
        let mut budget = Budget::new(100, start);
        assert_eq!(budget.take(60), 60);
        assert_eq!(budget.take(60), 40);
        assert_eq!(budget.take(10), 0);
        assert_eq!(budget.roll(start + BUDGET_INTERVAL / 2), None);
        assert_eq!(budget.roll(start + BUDGET_INTERVAL), Some(30));
        assert_eq!(budget.take(60), 60);
        assert_eq!(
            budget.roll(start + BUDGET_INTERVAL * 3),
            None,
            "nothing dropped"
        );
    }

    /// Lines across chunks, a cut line, and the resync after a drop.
    #[test]
    fn the_splitter_carries_cuts_and_resyncs() {
        let mut lines = LineSplitter::new(8);
        assert_eq!(lines.push(b"one\ntw"), ["one"]);
        assert_eq!(lines.push(b"o\nlong-long"), ["two", "long-lon […]"]);
        assert_eq!(lines.push(b"-line\nok\n"), ["ok"]);
        assert_eq!(lines.push(b"half"), Vec::<String>::new());
        assert_eq!(lines.cut().as_deref(), Some("half […]"));
        lines.resync();
        assert_eq!(lines.push(b"dropped tail\nnext\nlast"), ["next"]);
        assert_eq!(lines.finish().as_deref(), Some("last"));
    }
}
