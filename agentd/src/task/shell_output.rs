//! A background shell task's output file (`TaskManager::output_path`, mode 0600): stdout and
//! stderr as they come, capped. Until the cap the file only grows; past it the file keeps the
//! head and a rolling tail with an `[… N bytes omitted …]` marker between them, rewritten
//! (atomically, by rename) at most every [`OutputFile::REWRITE_INTERVAL`] and at the end.
//! [`read`] is what `task/output` and `task_output` return.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;

use super::{TaskError, TaskManager};
use agentd_core::truncate::HeadTailBuffer;

/// Default cap on a background shell's output file (`[tasks] shell_output_max_bytes`): big
/// enough for a long build log's start and end, small enough that a runaway `yes` cannot fill
/// the disk.
pub const DEFAULT_SHELL_OUTPUT_MAX_BYTES: usize = 1024 * 1024;
/// The smallest cap: room for a useful head and tail.
pub const MIN_SHELL_OUTPUT_MAX_BYTES: u64 = 1024;
/// The largest cap: one task's file stays a few hundred MiB.
pub const MAX_SHELL_OUTPUT_MAX_BYTES: u64 = 256 * 1024 * 1024;

/// What [`read`] returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellOutput {
    /// The output from the offset asked for (invalid UTF-8 replaced).
    pub text: String,
    /// Where the next read continues: the bytes the command has written so far (kept or
    /// not), as the file shows them now.
    pub next_offset: u64,
    /// Bytes are missing: the output passed the cap (the text holds the marker), or `tail`
    /// left earlier lines out.
    pub truncated: bool,
}

/// The marker's end, as [`HeadTailBuffer::to_text`] writes it (`\n[… N bytes omitted …]\n`).
const OMITTED_MARKER_END: &str = "bytes omitted …]";

/// The output of task `task_id` from byte `after_offset` on; with `tail`, only its last `tail`
/// lines. A task without output yet reads as empty. Err: unknown task, unreadable file.
pub async fn read(
    tasks: &TaskManager,
    task_id: &str,
    after_offset: u64,
    tail: Option<usize>,
) -> Result<ShellOutput, TaskError> {
    if tasks.get(task_id).is_none() {
        return Err(TaskError::NotFound(task_id.to_owned()));
    }
    let path = tasks.output_path(task_id);
    let task = task_id.to_owned();
    tokio::task::spawn_blocking(move || read_file(&path, after_offset, tail))
        .await
        .map_err(|error| error.to_string())
        .and_then(|read| read.map_err(|error| error.to_string()))
        .map_err(|reason| TaskError::Persist {
            task_id: task,
            reason: format!("cannot read its output: {reason}"),
        })
}

/// [`read`] on a path (blocking). Offsets count the bytes the command wrote, so they stay
/// valid when the file is rewritten past the cap: a reader past the head gets the marker of
/// what it missed, then the tail.
pub fn read_file(path: &Path, after_offset: u64, tail: Option<usize>) -> io::Result<ShellOutput> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(error) => return Err(error),
    };
    let (head, omitted, kept_tail) = match split_at_marker(&bytes) {
        Some(parts) => parts,
        None => (&bytes[..], 0, &bytes[..0]),
    };
    let head_end = head.len() as u64;
    let tail_start = head_end + omitted;
    let total = tail_start + kept_tail.len() as u64;
    let start = after_offset.min(total);
    let mut truncated = false;
    let mut text = String::new();
    if start < head_end {
        text.push_str(&String::from_utf8_lossy(&head[start as usize..]));
    }
    if omitted > 0 && start < tail_start {
        truncated = true;
        let missed = tail_start - start.max(head_end);
        text.push_str(&format!("\n[… {missed} {OMITTED_MARKER_END}\n"));
    }
    let from_tail = start.saturating_sub(tail_start) as usize;
    text.push_str(&String::from_utf8_lossy(
        &kept_tail[from_tail.min(kept_tail.len())..],
    ));
    if let Some(lines) = tail {
        let kept = last_lines(&text, lines);
        if kept.len() < text.len() {
            truncated = true;
            text = kept.to_owned();
        }
    }
    Ok(ShellOutput {
        text,
        next_offset: total,
        truncated,
    })
}

/// A cut file's head, the number of bytes cut, and its tail; None for a file not cut. The
/// first well-formed marker is the writer's (the head cannot hold one the writer did not
/// put: it is the command's first bytes, which would have to spell one exactly).
fn split_at_marker(bytes: &[u8]) -> Option<(&[u8], u64, &[u8])> {
    const OPEN: &[u8] = "\n[… ".as_bytes();
    let close = format!(" {OMITTED_MARKER_END}\n");
    let close = close.as_bytes();
    let mut from = 0;
    while let Some(found) = find(&bytes[from..], OPEN) {
        let at = from + found;
        let digits_start = at + OPEN.len();
        let digits_len = bytes[digits_start..]
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .count();
        let after_digits = digits_start + digits_len;
        if digits_len > 0
            && bytes[after_digits..].starts_with(close)
            && let Some(omitted) = std::str::from_utf8(&bytes[digits_start..after_digits])
                .ok()
                .and_then(|digits| digits.parse::<u64>().ok())
        {
            return Some((&bytes[..at], omitted, &bytes[after_digits + close.len()..]));
        }
        from = at + 1;
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// The last `count` lines of `text` (a final newline does not start an empty line).
fn last_lines(text: &str, count: usize) -> &str {
    if count == 0 {
        return "";
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    match body.match_indices('\n').rev().nth(count - 1) {
        Some((at, _)) => &text[at + 1..],
        None => text,
    }
}

/// The writer of one output file.
pub struct OutputFile {
    path: PathBuf,
    /// The head and rolling tail kept once the cap is passed.
    kept: HeadTailBuffer,
    max_bytes: usize,
    /// Appended to until the cap is passed; None from then on (the file is rewritten).
    file: Option<tokio::fs::File>,
    /// The kept text changed since the last rewrite.
    dirty: bool,
    last_rewrite: Option<Instant>,
}

impl OutputFile {
    /// Past the cap, the file is rewritten at most this often (and at the end), so a chatty
    /// command costs a bounded number of rewrites.
    pub const REWRITE_INTERVAL: Duration = Duration::from_millis(250);

    /// Creates (or empties) the file at `path`, mode 0600, capped at `max_bytes`.
    pub async fn create(path: PathBuf, max_bytes: usize) -> io::Result<Self> {
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent).await?;
        }
        let mut options = std::fs::OpenOptions::new();
        agentd_core::platform::create_mode(options.write(true).create(true).truncate(true), 0o600);
        let file = tokio::fs::OpenOptions::from(options).open(&path).await?;
        Ok(Self {
            path,
            kept: HeadTailBuffer::new(max_bytes.max(2)),
            max_bytes: max_bytes.max(2),
            file: Some(file),
            dirty: false,
            last_rewrite: None,
        })
    }

    /// Adds output: appended while under the cap, else kept for the next rewrite.
    pub async fn push(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.kept.push(bytes);
        if let Some(file) = &mut self.file {
            if self.kept.total_bytes() <= self.max_bytes as u64 {
                return file.write_all(bytes).await;
            }
            file.flush().await?;
            self.file = None;
        }
        self.dirty = true;
        if self
            .last_rewrite
            .is_none_or(|at| at.elapsed() >= Self::REWRITE_INTERVAL)
        {
            self.rewrite().await?;
        }
        Ok(())
    }

    /// Writes what is still pending; the file is complete afterwards.
    pub async fn finish(&mut self) -> io::Result<()> {
        if let Some(file) = &mut self.file {
            file.flush().await?;
        }
        if self.dirty {
            self.rewrite().await?;
        }
        Ok(())
    }

    /// Bytes the command wrote, kept or not.
    pub fn total_bytes(&self) -> u64 {
        self.kept.total_bytes()
    }

    async fn rewrite(&mut self) -> io::Result<()> {
        let text = self.kept.to_text();
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || replace_file(&path, text.as_bytes()))
            .await
            .map_err(io::Error::other)??;
        self.dirty = false;
        self.last_rewrite = Some(Instant::now());
        Ok(())
    }
}

/// Replaces `path` with `bytes` (0600, `atomic_file`), so a reader sees the old or the new
/// file, never half of one.
fn replace_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    agentd_core::atomic_file::replace_atomically(path, bytes, 0o600)
}

#[cfg(test)]
#[path = "shell_output_tests.rs"]
mod tests;
