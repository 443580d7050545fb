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
//! A leaf: std and libc only, nothing else of the crate.

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

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

/// As [`replace_atomically`], with [`Options`]. Blocking.
pub fn replace_atomically_with(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    options: &Options<'_>,
) -> io::Result<()> {
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
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(dir)
        .map_err(|error| step("cannot open the directory", dir.as_os_str(), error))?;
    replace_in_dir(dir.as_fd(), name, bytes, mode, options)
}

/// As [`replace_atomically_with`], for the file `name` in the open directory `dir` (which may
/// be an `O_PATH` descriptor): for callers that opened the directory through checks of their
/// own (a workspace's containment). Blocking.
pub fn replace_in_dir(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    bytes: &[u8],
    mode: u32,
    options: &Options<'_>,
) -> io::Result<()> {
    let mut taken = None;
    for _ in 0..CREATE_ATTEMPTS {
        let temp = temp_name(name);
        match replace_through(dir, &temp, name, bytes, mode, options) {
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

/// One attempt through the temp name `temp`: steps 2 to 5 of the module's doc.
fn replace_through(
    dir: BorrowedFd<'_>,
    temp: &OsStr,
    name: &OsStr,
    bytes: &[u8],
    mode: u32,
    options: &Options<'_>,
) -> Result<(), Failure> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
    let mut file = match open_at(dir, temp, flags, mode) {
        Ok(fd) => File::from(fd),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
            return Err(Failure::Taken(error));
        }
        Err(error) => return Err(Failure::Other(step("cannot create", temp, error))),
    };
    let written = write_whole(dir, &mut file, name, bytes, options)
        .map_err(|error| step("cannot write", temp, error))
        .and_then(|()| {
            rename_at(dir, temp, name).map_err(|error| {
                step(
                    &format!("cannot rename {} over", temp.to_string_lossy()),
                    name,
                    error,
                )
            })
        });
    drop(file);
    if let Err(error) = written {
        let _ = unlink_at(dir, temp);
        return Err(Failure::Other(error));
    }
    sync_dir(dir).map_err(|error| Failure::Other(step("cannot sync the directory of", name, error)))
}

/// Writes `bytes` to the new temp `file`, gives it its mode and syncs it; then asks
/// `before_rename`.
fn write_whole(
    dir: BorrowedFd<'_>,
    file: &mut File,
    name: &OsStr,
    bytes: &[u8],
    options: &Options<'_>,
) -> io::Result<()> {
    file.write_all(bytes)?;
    if options.keep_existing_mode
        && let Ok(stat) = stat_at(dir, name)
        && stat.st_mode & libc::S_IFMT == libc::S_IFREG
    {
        file.set_permissions(std::fs::Permissions::from_mode(stat.st_mode & 0o7777))?;
    }
    file.sync_all()?;
    match options.before_rename {
        Some(before_rename) => before_rename(),
        None => Ok(()),
    }
}

/// Syncs `dir` through a descriptor of its own (`dir` may be `O_PATH`, which cannot be synced).
fn sync_dir(dir: BorrowedFd<'_>) -> io::Result<()> {
    let flags = libc::O_RDONLY | libc::O_DIRECTORY;
    File::from(open_at(dir, OsStr::new("."), flags, 0)?).sync_all()
}

/// `error`, same kind, its message prefixed with `what` and `name`.
fn step(what: &str, name: &OsStr, error: io::Error) -> io::Error {
    io::Error::new(
        error.kind(),
        format!("{what} {}: {error}", name.to_string_lossy()),
    )
}

/// `openat(dir, name, flags | O_CLOEXEC, mode)`: a file named relative to a directory already
/// open (the writer here, and `tools`' writes beneath the workspace).
pub fn open_at(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    flags: libc::c_int,
    mode: u32,
) -> io::Result<OwnedFd> {
    let name = c_name(name)?;
    // SAFETY: a valid directory fd and a NUL-terminated name; the mode is passed as the
    // variadic argument `openat` reads when `O_CREAT` is set.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            flags | libc::O_CLOEXEC,
            libc::c_uint::from(mode),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: what `name` in the open directory is, a link
/// itself rather than its target.
pub fn stat_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<libc::stat> {
    let name = c_name(name)?;
    // SAFETY: stat is plain data, filled by the kernel.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid directory fd, a NUL-terminated name and a live stat buffer.
    let result = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut stat,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(stat)
}

fn rename_at(dir: BorrowedFd<'_>, from: &OsStr, to: &OsStr) -> io::Result<()> {
    let (from, to) = (c_name(from)?, c_name(to)?);
    // SAFETY: a valid directory fd and NUL-terminated names.
    let result =
        unsafe { libc::renameat(dir.as_raw_fd(), from.as_ptr(), dir.as_raw_fd(), to.as_ptr()) };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn unlink_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    let name = c_name(name)?;
    // SAFETY: a valid directory fd and a NUL-terminated name.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `name` for a system call; a name with a NUL byte is refused.
pub fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "the path contains a NUL byte"))
}

#[cfg(test)]
#[path = "atomic_file_tests.rs"]
mod tests;
