//! The append side of a session file: whole lines only. A torn tail left by a crash is cut
//! off (or completed) before anything is appended, and a write that fails part-way (disk
//! full) is rolled back to the last good offset, now or before the next write once space
//! returns. Blocking: used from the log's writer task through `spawn_blocking`.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// A session file open for appending whole lines.
#[derive(Debug)]
pub struct LogFile {
    file: File,
    path: PathBuf,
    /// Length of the file up to the end of its last complete line.
    good_len: u64,
    /// A write failed part-way and the rollback failed too: cut back to `good_len` before the
    /// next write.
    needs_rollback: bool,
}

impl LogFile {
    /// Open `path` for appending. `valid_len` is where its last complete line ends (from
    /// loading it); a readable last line that lacks its newline is completed, anything else
    /// after `valid_len` (a torn line) is cut off, so the next entry starts on a fresh line.
    pub fn open(path: &Path, valid_len: u64, missing_newline: bool) -> Result<LogFile> {
        // Regular files only, opened without blocking or following a symlink: the file may
        // have been swapped since it was loaded.
        let file =
            agentd_core::regular_file::open_with(path, std::fs::OpenOptions::new().append(true))
                .with_context(|| format!("cannot open session log {}", path.display()))?;
        let len = file
            .metadata()
            .with_context(|| format!("cannot read {}", path.display()))?
            .len();
        let mut log = LogFile {
            file,
            path: path.to_owned(),
            good_len: len,
            needs_rollback: false,
        };
        if missing_newline {
            log.append_line(b"\n")?;
        } else if len > valid_len {
            log.file
                .set_len(valid_len)
                .with_context(|| format!("cannot cut the torn tail of {}", path.display()))?;
            log.good_len = valid_len;
        }
        Ok(log)
    }

    /// Create a new session file holding `lines` (whole lines) and keep it open for appending;
    /// on failure no file is left behind. Private (0600) whatever the umask.
    pub fn create(path: &Path, lines: &[u8]) -> Result<LogFile> {
        let mut file = open_new(path, std::fs::OpenOptions::new().append(true))?;
        if let Err(err) = write_checked(&mut file, lines) {
            drop(file);
            let _ = std::fs::remove_file(path);
            return Err(err).with_context(|| format!("cannot create {}", path.display()));
        }
        Ok(LogFile {
            file,
            path: path.to_owned(),
            good_len: lines.len() as u64,
            needs_rollback: false,
        })
    }

    /// Where the next line goes: the end of the last complete line written.
    pub fn good_len(&self) -> u64 {
        self.good_len
    }

    /// Append one line (`\n` included). On failure the file is cut back to its last complete
    /// line (now, or before the next write if that fails too), so no fragment is left for the
    /// next line to be glued to.
    pub fn append_line(&mut self, line: &[u8]) -> Result<()> {
        if self.needs_rollback {
            self.file.set_len(self.good_len).with_context(|| {
                format!(
                    "cannot repair {} after an earlier failed write",
                    self.path.display()
                )
            })?;
            self.needs_rollback = false;
        }
        match write_checked(&mut self.file, line) {
            Ok(()) => {
                self.good_len += line.len() as u64;
                Ok(())
            }
            Err(err) => {
                if self.file.set_len(self.good_len).is_err() {
                    self.needs_rollback = true;
                }
                Err(err).with_context(|| format!("cannot write {}", self.path.display()))
            }
        }
    }
}

/// A file that did not exist (a symlink or anything else there is refused), private (0600)
/// and closed on exec (as std opens every file), opened with `options`.
fn open_new(path: &Path, options: &mut std::fs::OpenOptions) -> Result<File> {
    agentd_core::platform::create_mode(
        options.create_new(true),
        agentd_core::paths::PRIVATE_FILE_MODE,
    )
    .open(path)
    .with_context(|| format!("cannot create {}", path.display()))
}

/// `write_all`, through the test-only write fault seam (`test_seam::write_fault`, which fails
/// a write like a full disk: half the line written, then the error).
fn write_checked(file: &mut File, line: &[u8]) -> io::Result<()> {
    if let Some(err) = agentd_core::test_seam::write_fault(line) {
        let half = line.len() / 2;
        file.write_all(&line[..half])?;
        return Err(err);
    }
    file.write_all(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_tail_is_cut_and_a_complete_last_line_gets_its_newline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, "{\"a\":1}\n{\"b\":").unwrap();
        let mut log = LogFile::open(&path, 8, false).unwrap();
        log.append_line(b"{\"c\":3}\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"c\":3}\n"
        );

        std::fs::write(&path, "{\"a\":1}\n{\"b\":2}").unwrap();
        let mut log = LogFile::open(&path, 8, true).unwrap();
        log.append_line(b"{\"c\":3}\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n"
        );
    }
}
