//! Opening the files the daemon reads from its own directories (session logs, the lock file):
//! regular files only, and never in a way that blocks. A FIFO or a device planted there would
//! otherwise hang the opening thread (a FIFO's `open` waits for a writer).

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::{Context, Result, bail};

/// Open `path` for reading. Opened with `O_NONBLOCK` (a FIFO does not wait for a writer) and
/// `O_NOFOLLOW` (a symlink is not followed out of the directory), then the opened descriptor's
/// own metadata must say "regular file", so nothing swapped in between the check and the open
/// gets through. On a regular file `O_NONBLOCK` changes nothing.
pub fn open(path: &Path) -> Result<File> {
    open_with(path, std::fs::OpenOptions::new().read(true))
}

/// As [`open`], with the caller's options (write, create, mode); the non-blocking and
/// no-follow flags are added here.
pub fn open_with(path: &Path, options: &mut std::fs::OpenOptions) -> Result<File> {
    let file = options
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|err| match err.raw_os_error() {
            Some(libc::ELOOP) => anyhow::anyhow!(
                "{} is a symbolic link; only regular files are used there",
                path.display()
            ),
            _ => anyhow::Error::new(err).context(format!("cannot open {}", path.display())),
        })?;
    let metadata = file
        .metadata()
        .with_context(|| format!("cannot inspect {}", path.display()))?;
    if !metadata.is_file() {
        bail!(
            "{} is not a regular file ({}); remove it or move it away",
            path.display(),
            kind_of(&metadata.file_type())
        );
    }
    Ok(file)
}

/// A short name for what a non-regular file is, for error messages.
pub fn kind_of(file_type: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else if file_type.is_fifo() {
        "a named pipe"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_block_device() || file_type.is_char_device() {
        "a device"
    } else if file_type.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// What [`read_text`] found at a path.
#[derive(Debug, PartialEq, Eq)]
pub struct Text {
    pub text: String,
    /// The file held more than the cap; `text` is its head.
    pub truncated: bool,
}

/// Read a text file that a user or a repository provides (config, project settings, project
/// notes): symlinks are followed (`CLAUDE.md -> AGENTS.md` is common), but the file is opened
/// without blocking and must be a regular file, and at most `max_bytes` are read, so a FIFO,
/// a device or a huge file planted in a repository neither hangs a thread nor fills memory.
/// Invalid UTF-8 is replaced. A missing file keeps its `NotFound` kind for the caller.
pub fn read_text(path: &Path, max_bytes: usize) -> std::io::Result<Text> {
    use std::io::Read;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(std::io::Error::other(format!(
            "{} is {}, not a regular file",
            path.display(),
            kind_of(&metadata.file_type())
        )));
    }
    let mut bytes = Vec::new();
    let limit = u64::try_from(max_bytes)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    file.take(limit).read_to_end(&mut bytes)?;
    let truncated = bytes.len() > max_bytes;
    bytes.truncate(max_bytes);
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
    };
    Ok(Text { text, truncated })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_a_directory_and_a_symlink_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.jsonl");
        crate::test_support::mkfifo(&fifo);
        let err = open(&fifo).unwrap_err().to_string();
        assert!(err.contains("named pipe"), "{err}");

        let err = open(dir.path()).unwrap_err().to_string();
        assert!(err.contains("directory"), "{err}");

        let target = dir.path().join("real.jsonl");
        std::fs::write(&target, "x").unwrap();
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = open(&link).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");

        open(&target).unwrap();
    }

    #[test]
    fn read_text_refuses_a_fifo_and_caps_a_big_file() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("AGENTS.md");
        crate::test_support::mkfifo(&fifo);
        let err = read_text(&fifo, 10).unwrap_err().to_string();
        assert!(err.contains("named pipe"), "{err}");

        let big = dir.path().join("big.md");
        std::fs::write(&big, "x".repeat(100)).unwrap();
        let link = dir.path().join("CLAUDE.md");
        std::os::unix::fs::symlink(&big, &link).unwrap();
        let read = read_text(&link, 10).unwrap();
        assert_eq!(
            read,
            Text {
                text: "x".repeat(10),
                truncated: true
            }
        );
        let read = read_text(&big, 100).unwrap();
        assert!(!read.truncated);

        let missing = read_text(&dir.path().join("none"), 10).unwrap_err();
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
    }
}
