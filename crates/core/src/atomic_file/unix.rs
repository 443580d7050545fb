//! The Unix steps of the writer: everything relative to an open directory (`openat`,
//! `renameat`, `fsync` of the directory).

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use super::{Failure, Options, name_and_dir, step, with_free_temp_name};

/// As [`replace_atomically`], with [`Options`]. Blocking.
pub fn replace_atomically_with(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    options: &Options<'_>,
) -> io::Result<()> {
    let (name, dir) = name_and_dir(path)?;
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
    with_free_temp_name(name, |temp| {
        replace_through(dir, temp, name, bytes, mode, options)
    })
}

/// One attempt through the temp name `temp`: steps 2 to 5 of the module's doc.
pub(super) fn replace_through(
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
