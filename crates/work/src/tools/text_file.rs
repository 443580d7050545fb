//! Reading workspace files safely for read_file and grep: only regular files are opened (a
//! FIFO, socket or device is refused without blocking), and lines are read with a byte budget,
//! so one huge line never makes the daemon hold more than the budget. Blocking I/O: call it on
//! the blocking pool.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

/// Why a path cannot be read as a text file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenError {
    #[error("is a directory")]
    Directory,
    /// A FIFO, socket or device: reading it could block forever or never end.
    #[error("is a {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Opens `path` for reading only if it is a regular file. The open itself never blocks (it is
/// non-blocking, so a FIFO without a writer does not hang), and the kind is checked on the
/// opened descriptor, so a file swapped for a FIFO after a path check is still refused.
pub(crate) fn open_regular(path: &Path) -> Result<File, OpenError> {
    // A first look by path, so a device is refused without even opening it.
    check_kind(&std::fs::metadata(path)?.file_type())?;
    open_checked(path, agentd_core::platform::non_blocking)
}

/// [`open_regular`] for a file a walk found (and the read filter judged) as a regular file:
/// a symlink put in its place since is refused, not followed, so it cannot lead the search to
/// a file the filter would have withheld.
pub(crate) fn open_found_regular(path: &Path) -> Result<File, OpenError> {
    check_kind(&std::fs::symlink_metadata(path)?.file_type())?;
    open_checked(path, agentd_core::platform::no_follow)
}

fn open_checked(
    path: &Path,
    flags: fn(&mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions,
) -> Result<File, OpenError> {
    let file = flags(std::fs::OpenOptions::new().read(true)).open(path)?;
    check_kind(&file.metadata()?.file_type())?;
    Ok(file)
}

impl OpenError {
    /// The message a tool returns for `shown` (the path as the model gave it).
    pub(crate) fn describe(&self, shown: &str) -> String {
        match self {
            OpenError::Io(error) => format!("cannot open {shown}: {error}"),
            OpenError::Directory => format!("{shown} is a directory"),
            OpenError::NotRegular(_) => {
                format!("{shown} {self}; only regular files are read (it could block forever)")
            }
        }
    }
}

pub(crate) fn check_kind(kind: &std::fs::FileType) -> Result<(), OpenError> {
    if kind.is_dir() {
        return Err(OpenError::Directory);
    }
    if kind.is_file() {
        return Ok(());
    }
    Err(OpenError::NotRegular(
        agentd_core::platform::special_file_name(kind),
    ))
}

/// Lines of a file read with a byte budget per line: at most `keep` bytes of each line are
/// kept, the rest is skipped while looking for the line's end.
pub(crate) struct BoundedLines<R> {
    reader: R,
    keep: usize,
}

/// One line as read: its first bytes (without the line end) and whether more was skipped.
pub(crate) struct Line {
    pub(crate) bytes: Vec<u8>,
    pub(crate) cut: bool,
}

impl<R: BufRead> BoundedLines<R> {
    pub(crate) fn new(reader: R, keep: usize) -> Self {
        Self { reader, keep }
    }

    /// The buffered start of the file (read if needed), to sniff for binary content.
    pub(crate) fn peek(&mut self) -> io::Result<&[u8]> {
        self.reader.fill_buf()
    }

    /// The next line into `line` (cleared first); false at end of file.
    pub(crate) fn next_into(&mut self, line: &mut Line) -> io::Result<bool> {
        line.bytes.clear();
        line.cut = false;
        let mut read_any = false;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(available) => available,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            if available.is_empty() {
                break;
            }
            read_any = true;
            let (chunk, done) = match available.iter().position(|&byte| byte == b'\n') {
                Some(end) => (&available[..end], Some(end + 1)),
                None => (available, None),
            };
            let room = self.keep.saturating_sub(line.bytes.len());
            line.bytes
                .extend_from_slice(&chunk[..chunk.len().min(room)]);
            line.cut |= chunk.len() > room;
            let consumed = done.unwrap_or(available.len());
            self.reader.consume(consumed);
            if done.is_some() {
                break;
            }
        }
        if line.bytes.last() == Some(&b'\r') {
            line.bytes.pop();
        }
        Ok(read_any)
    }
}

impl BoundedLines<BufReader<File>> {
    /// A file opened with [`open_regular`], read in `buffer_bytes` chunks.
    pub(crate) fn from_file(file: File, buffer_bytes: usize, keep: usize) -> Self {
        Self::new(BufReader::with_capacity(buffer_bytes, file), keep)
    }
}

impl Line {
    pub(crate) fn new() -> Self {
        Self {
            bytes: Vec::new(),
            cut: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[u8], keep: usize, buffer: usize) -> Vec<(String, bool)> {
        let mut reader = BoundedLines::new(BufReader::with_capacity(buffer, text), keep);
        let mut line = Line::new();
        let mut out = Vec::new();
        while reader.next_into(&mut line).unwrap() {
            out.push((String::from_utf8_lossy(&line.bytes).into_owned(), line.cut));
        }
        out
    }

    #[test]
    fn lines_keep_at_most_the_budget() {
        let text = b"short\nthis line is long\r\nlast";
        let expected = [("short", false), ("this ", true), ("last", false)];
        for buffer in [1, 3, 64] {
            let got = lines(text, 5, buffer);
            let got: Vec<(&str, bool)> = got.iter().map(|(s, c)| (s.as_str(), *c)).collect();
            assert_eq!(got, expected, "buffer {buffer}");
        }
        assert_eq!(lines(b"a\n\nb\n", 5, 2).len(), 3);
        assert!(lines(b"", 5, 2).is_empty());
    }

    #[test]
    fn fifos_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        agentd_core::test_support::mkfifo(&fifo);
        let error = open_regular(&fifo).unwrap_err();
        assert_eq!(
            error.to_string(),
            "is a named pipe (FIFO), not a regular file"
        );
        let error = open_regular(Path::new("/dev/null")).unwrap_err();
        assert_eq!(error.to_string(), "is a device, not a regular file");
        assert!(matches!(
            open_regular(dir.path()),
            Err(OpenError::Directory)
        ));
    }

    #[test]
    fn a_found_file_is_not_followed_if_it_became_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.txt");
        std::fs::write(&target, "secret\n").unwrap();
        let found = dir.path().join("found.txt");
        std::os::unix::fs::symlink(&target, &found).unwrap();
        assert!(
            open_regular(&found).is_ok(),
            "read_file follows resolved links"
        );
        let error = open_found_regular(&found).unwrap_err();
        assert_eq!(error.to_string(), "is a special file, not a regular file");
        assert!(open_found_regular(&target).is_ok());
    }
}
