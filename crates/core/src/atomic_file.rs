//! The one way the daemon replaces a file whole: [`replace_atomically`] (and
//! [`replace_atomically_with`] / [`replace_in_dir`] for callers that need more). A reader, or
//! the daemon after a crash, finds the old content or the new, never a torn mix, and nothing
//! planted beside the file is written through. The steps, each for a reason:
//!
//! 1. **A temp file in the target's own directory**: `rename(2)` is atomic only within one
//!    filesystem, and the target's directory is the one place sure to be on the target's.
//!    Its name, `.<name>.<pid>.<n>.tmp`, is unique in this process (a counter) and across
//!    live processes (the pid); it starts with a dot and ends with `.tmp` so loaders can tell
//!    a leftover from a record ([`is_temp_name`]).
//! 2. **Created with `O_CREAT | O_EXCL | O_NOFOLLOW` and the given mode**: `O_EXCL` never
//!    opens something that is already there, so a file or a symlink at the temp name (a
//!    leftover of a killed daemon with the same pid, or planted by someone) is never written
//!    through; such a name is skipped for the next one, at most [`CREATE_ATTEMPTS`] times.
//!    The mode is given at creation (the process umask applies, as with `open(2)`), so the
//!    content is never readable by others, even for an instant. `O_CLOEXEC`: no child
//!    inherits the descriptor.
//! 3. **Every byte written, then `fsync` of the temp file**: the data must be on disk before
//!    the rename makes it the target, or a crash soon after can leave an empty file under the
//!    target's name (delayed allocation).
//! 4. **`rename` over the target**: atomic; a symlink at the target's name is replaced, never
//!    followed.
//! 5. **`fsync` of the directory**: the rename is a change of the directory, and until the
//!    directory is synced a crash can undo it.
//!
//! On any failure before the rename took place the temp file is removed (only one this call
//! created: a name that was taken is left alone) and the target keeps its old content; a
//! failed directory sync is reported, with the new content already in place. Each error keeps
//! its `io::ErrorKind` and names the step that failed; callers add which file it was for.
//! Every step is taken relative to the directory opened first, so a directory on the way
//! swapped for a symlink meanwhile changes nothing. Blocking: call it on the blocking pool.
//!
//! On Windows ([`windows`]) the same steps are taken by path: `CREATE_NEW` for the temp file
//! (never opens what is there), `sync_all`, then `MoveFileExW(MOVEFILE_REPLACE_EXISTING |
//! MOVEFILE_WRITE_THROUGH)` through `std::fs::rename`; a directory cannot be synced there,
//! and there are no mode bits to give.
//!
//! A leaf: std and libc only, nothing else of the crate.

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(unix)]
mod unix;
#[cfg(all(unix, test))]
use unix::replace_through;
#[cfg(unix)]
pub use unix::{c_name, open_at, replace_atomically_with, replace_in_dir, stat_at};

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::replace_atomically_with;

/// Temp names tried before giving up: a taken one is skipped (a leftover of a killed process
/// that had our pid, or something planted); more than a few taken in a row means someone
/// is filling the directory on purpose.
pub const CREATE_ATTEMPTS: u32 = 16;

/// What a caller needs beyond "this content, this mode".
#[derive(Clone, Copy, Default)]
pub struct Options<'a> {
    /// Give the new file the permission bits of the regular file it replaces (a symlink at
    /// the name is not asked); `mode` is then only for a file that is new. Set exactly, not
    /// through the umask: the file keeps what it had.
    pub keep_existing_mode: bool,
    /// Called once the temp file is written and synced, before the rename: an error stops
    /// the replacement there (tests use it to stop as a crash would).
    pub before_rename: Option<&'a dyn Fn() -> io::Result<()>>,
}

/// Replaces the file at `path` with `bytes`; a new file gets `mode` (less the umask). See the
/// module's doc for the steps. Blocking.
pub fn replace_atomically(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    replace_atomically_with(path, bytes, mode, &Options::default())
}

/// The file name of `path` and the directory it is in (`.` for a bare name).
fn name_and_dir(path: &Path) -> io::Result<(&OsStr, &Path)> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        )
    })?;
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    Ok((name, dir))
}

/// Runs `attempt` with fresh temp names for `name` until one was free (step 2 of the
/// module's doc): at most [`CREATE_ATTEMPTS`] times.
fn with_free_temp_name(
    name: &OsStr,
    mut attempt: impl FnMut(&OsStr) -> Result<(), Failure>,
) -> io::Result<()> {
    let mut taken = None;
    for _ in 0..CREATE_ATTEMPTS {
        match attempt(&temp_name(name)) {
            Err(Failure::Taken(error)) => taken = Some(error),
            Err(Failure::Other(error)) => return Err(error),
            Ok(()) => return Ok(()),
        }
    }
    let error = taken.unwrap_or_else(|| io::Error::from(io::ErrorKind::AlreadyExists));
    Err(step(
        &format!("no free temp file name after {CREATE_ATTEMPTS} tries beside"),
        name,
        error,
    ))
}

/// Whether `name` is one of the temp names this writer makes (`.<name>.<pid>.<n>.tmp`), for
/// loaders that remove what a killed writer left.
pub fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".tmp")
}

/// How one attempt failed: the temp name was taken (try another), or anything else.
enum Failure {
    Taken(io::Error),
    Other(io::Error),
}

/// Makes temp names unique within the process (several writers save at once).
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh `.<name>.<pid>.<n>.tmp`.
fn temp_name(name: &OsStr) -> OsString {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut temp = OsString::from(".");
    temp.push(name);
    temp.push(format!(".{}.{n}.tmp", std::process::id()));
    temp
}

/// `error`, same kind, its message prefixed with `what` and `name`.
fn step(what: &str, name: &OsStr, error: io::Error) -> io::Error {
    io::Error::new(
        error.kind(),
        format!("{what} {}: {error}", name.to_string_lossy()),
    )
}

#[cfg(test)]
#[path = "atomic_file_tests.rs"]
mod tests;
