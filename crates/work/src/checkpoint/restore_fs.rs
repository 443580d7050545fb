//! The file system side of a restore: every path is reached from the workspace directory one
//! component at a time with `O_NOFOLLOW`, so a symlink on the way (one a command made since the
//! checkpoint) is refused, never followed out of the workspace; files are replaced whole
//! through `atomic_file`, links made with `symlinkat`, removals with `unlinkat`. Blocking.

//!
//! On Windows ([`windows`]) the same checks are made by path: each component looked at
//! without following it (`symlink_metadata`) before it is used, files replaced through
//! `atomic_file`; a link swapped in between a look and its use is not caught there.

use std::ffi::OsStr;
use std::io;
use std::path::{Component, Path};

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub(crate) use unix::Root;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::Root;

/// A git tree entry's mode, as restored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EntryMode {
    File,
    Executable,
    Symlink,
}

impl EntryMode {
    pub(crate) fn parse(mode: &[u8]) -> Option<EntryMode> {
        match mode {
            b"100644" => Some(EntryMode::File),
            b"100755" => Some(EntryMode::Executable),
            b"120000" => Some(EntryMode::Symlink),
            _ => None,
        }
    }
}

/// The directories of `relative` and its file name: a plain relative path only (no `..`,
/// no root, not empty).
fn split_plain(relative: &Path) -> io::Result<(Vec<&OsStr>, &OsStr)> {
    let mut names: Vec<&OsStr> = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(name) => names.push(name),
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not a plain relative path",
                ));
            }
        }
    }
    let Some(name) = names.pop() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "an empty path"));
    };
    Ok((names, name))
}
