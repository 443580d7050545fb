//! What clients and the model read of a task: its output from an offset (a shell's capped
//! output file, a subagent's final message) and what to do next with it (how to resume an
//! interrupted task). Shared by the `task/*` methods and the `task_*` tools.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use protocol::task::{TaskKind, TaskStatus};

use super::TaskRecord;

/// Bytes of output one `task/output` answer carries at most: a client reads on from
/// `nextOffset`, and an answer stays far below the line limit.
pub const MAX_OUTPUT_CHUNK_BYTES: usize = 256 * 1024;

/// A piece of a task's output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputChunk {
    pub text: String,
    /// Where the next read continues.
    pub next_offset: u64,
    /// More output is there past `next_offset`.
    pub more: bool,
}

/// Reads a task's output from byte `after_offset`, at most `max_bytes` (cut back to a
/// character boundary). The output file when the task has one; otherwise a finished task's
/// result (or error) as if it were the file. Runs the file I/O on the blocking pool.
pub async fn read_output(
    output_path: PathBuf,
    task: &TaskRecord,
    after_offset: u64,
    max_bytes: usize,
) -> Result<OutputChunk, String> {
    let fallback = fallback_text(task);
    let read =
        tokio::task::spawn_blocking(move || read_file(&output_path, after_offset, max_bytes))
            .await
            .map_err(|err| format!("reading the task output failed: {err}"))?;
    match read {
        Ok(Some(chunk)) => Ok(chunk),
        Ok(None) => Ok(chunk_of(fallback.as_bytes(), after_offset, max_bytes)),
        Err(err) => Err(format!("cannot read the task output: {err}")),
    }
}

/// What the user can do next with a task, when there is something to say.
pub fn hint(task: &TaskRecord) -> Option<String> {
    match (task.status, task.kind) {
        (TaskStatus::Interrupted, TaskKind::Subagent) => Some(match &task.child_session_id {
            Some(child) => format!(
                "the daemon stopped while this task ran; it is never re-run by itself: read its session {child} to see how far it got, then continue there with a prompt or start a new task with the same prompt"
            ),
            None => "the daemon stopped before this task ran; it is never re-run by itself: start a new task with the same prompt".to_owned(),
        }),
        (TaskStatus::Interrupted, TaskKind::Shell) => Some(
            "the daemon stopped while this command ran and it was killed; run the command again if it is still needed".to_owned(),
        ),
        _ => None,
    }
}

/// A task without an output file: a finished subagent's final message or error.
fn fallback_text(task: &TaskRecord) -> String {
    if !task.status.is_finished() {
        return String::new();
    }
    match (&task.result, &task.error) {
        (Some(result), _) if !result.is_empty() => result.clone(),
        (_, Some(error)) => format!("error: {error}"),
        _ => String::new(),
    }
}

/// Ok(None): there is no output file.
fn read_file(
    path: &std::path::Path,
    after_offset: u64,
    max_bytes: usize,
) -> std::io::Result<Option<OutputChunk>> {
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    let len = file.metadata()?.len();
    let start = after_offset.min(len);
    file.seek(SeekFrom::Start(start))?;
    let want = usize::try_from(len - start)
        .unwrap_or(usize::MAX)
        .min(max_bytes);
    let mut bytes = Vec::with_capacity(want);
    file.take(want as u64).read_to_end(&mut bytes)?;
    let end = start + bytes.len() as u64;
    let mut chunk = chunk_of(&bytes, 0, bytes.len());
    chunk.next_offset += start;
    chunk.more = chunk.next_offset < len || end < len;
    Ok(Some(chunk))
}

/// `bytes[after_offset..]`, at most `max_bytes`, ending on a character boundary (a character
/// cut by the limit comes with the next read); invalid UTF-8 is replaced.
fn chunk_of(bytes: &[u8], after_offset: u64, max_bytes: usize) -> OutputChunk {
    let start = usize::try_from(after_offset)
        .unwrap_or(usize::MAX)
        .min(bytes.len());
    let rest = &bytes[start..];
    let mut take = rest.len().min(max_bytes);
    if take < rest.len() {
        // Back up over continuation bytes so a character is never split.
        while take > 0 && (rest[take] & 0b1100_0000) == 0b1000_0000 {
            take -= 1;
        }
        if take == 0 {
            take = rest.len().min(max_bytes);
        }
    }
    OutputChunk {
        text: String::from_utf8_lossy(&rest[..take]).into_owned(),
        next_offset: (start + take) as u64,
        more: start + take < bytes.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_follow_offsets_and_never_split_a_character() {
        let bytes = "aé€b".as_bytes(); // 1 + 2 + 3 + 1 bytes
        let first = chunk_of(bytes, 0, 2);
        assert_eq!(first.text, "a");
        assert_eq!(first.next_offset, 1);
        assert!(first.more);
        let second = chunk_of(bytes, first.next_offset, 4);
        assert_eq!(second.text, "é");
        assert_eq!(second.next_offset, 3);
        let rest = chunk_of(bytes, second.next_offset, 100);
        assert_eq!(rest.text, "€b");
        assert_eq!(rest.next_offset, 7);
        assert!(!rest.more);
        let past = chunk_of(bytes, 50, 100);
        assert_eq!(past.text, "");
        assert_eq!(past.next_offset, 7);
    }

    #[test]
    fn a_file_is_read_from_the_offset_in_pieces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.out");
        std::fs::write(&path, "hello world").unwrap();
        let first = read_file(&path, 0, 5).unwrap().unwrap();
        assert_eq!(
            (first.text.as_str(), first.next_offset, first.more),
            ("hello", 5, true)
        );
        let rest = read_file(&path, 5, 100).unwrap().unwrap();
        assert_eq!(
            (rest.text.as_str(), rest.next_offset, rest.more),
            (" world", 11, false)
        );
        assert_eq!(read_file(&dir.path().join("none"), 0, 5).unwrap(), None);
    }
}
