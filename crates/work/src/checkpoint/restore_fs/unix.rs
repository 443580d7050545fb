//! Unix: every step relative to an open directory (`openat` with `O_NOFOLLOW`, `symlinkat`,
//! `unlinkat`).

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;

use agentd_core::atomic_file::{Options, c_name, open_at, replace_in_dir, stat_at};

use super::EntryMode;

/// The workspace directory, open.
pub(crate) struct Root(OwnedFd);

impl Root {
    pub(crate) fn open(path: &Path) -> io::Result<Root> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(path)?;
        Ok(Root(OwnedFd::from(dir)))
    }

    /// The directory of `relative` (its parent components), opened without following links;
    /// missing ones are made when `create` is set. The file's name in it.
    fn parent_of<'a>(&self, relative: &'a Path, create: bool) -> io::Result<(OwnedFd, &'a OsStr)> {
        let (names, name) = super::split_plain(relative)?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        let mut dir = open_at(self.0.as_fd(), OsStr::new("."), flags, 0)?;
        for part in names {
            dir = match open_at(dir.as_fd(), part, flags, 0) {
                Ok(next) => next,
                Err(error) if error.raw_os_error() == Some(libc::ENOENT) && create => {
                    mkdir_at(dir.as_fd(), part)?;
                    open_at(dir.as_fd(), part, flags, 0)?
                }
                Err(error) if matches!(error.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
                    return Err(io::Error::other(format!(
                        "{} is in the way (a symlink or a file where a directory was)",
                        part.to_string_lossy()
                    )));
                }
                Err(error) => return Err(error),
            };
        }
        Ok((dir, name))
    }

    /// Writes `content` at `relative` as `mode`, replacing what is there (a file or a link; a
    /// directory is refused).
    pub(crate) fn write(&self, relative: &Path, mode: EntryMode, content: &[u8]) -> io::Result<()> {
        let (dir, name) = self.parent_of(relative, true)?;
        let existing = match stat_at(dir.as_fd(), name) {
            Ok(stat) => Some(stat),
            Err(error) if error.raw_os_error() == Some(libc::ENOENT) => None,
            Err(error) => return Err(error),
        };
        if let Some(stat) = &existing
            && stat.st_mode & libc::S_IFMT == libc::S_IFDIR
        {
            return Err(io::Error::other("a directory is in the way"));
        }
        match mode {
            EntryMode::Symlink => {
                if existing.is_some() {
                    unlink_at(dir.as_fd(), name, 0)?;
                }
                symlink_at(content, dir.as_fd(), name)
            }
            EntryMode::File | EntryMode::Executable => {
                let was_file = existing
                    .as_ref()
                    .is_some_and(|stat| stat.st_mode & libc::S_IFMT == libc::S_IFREG);
                let new_mode = if mode == EntryMode::Executable {
                    0o777
                } else {
                    0o666
                };
                let options = Options {
                    keep_existing_mode: was_file,
                    ..Default::default()
                };
                replace_in_dir(dir.as_fd(), name, content, new_mode, &options)?;
                if let (true, Some(stat)) = (was_file, existing) {
                    // The content's old permissions, with the executable bits as recorded.
                    let old = stat.st_mode & 0o7777;
                    let read = old & 0o444;
                    let wanted = match mode {
                        EntryMode::Executable => old | (read >> 2),
                        _ => old & !0o111,
                    };
                    if wanted != old {
                        chmod_at(dir.as_fd(), name, wanted)?;
                    }
                }
                Ok(())
            }
        }
    }

    /// Removes the file or link at `relative` (gone already: fine), then each parent left
    /// empty that `keep_dir` does not keep, up to the workspace.
    pub(crate) fn remove(
        &self,
        relative: &Path,
        keep_dir: &dyn Fn(&Path) -> bool,
    ) -> io::Result<()> {
        let (dir, name) = match self.parent_of(relative, false) {
            Ok(found) => found,
            Err(error) if error.raw_os_error() == Some(libc::ENOENT) => return Ok(()),
            Err(error) => return Err(error),
        };
        match stat_at(dir.as_fd(), name) {
            Ok(stat) if stat.st_mode & libc::S_IFMT == libc::S_IFDIR => {
                return Err(io::Error::other("a directory is there now; left alone"));
            }
            Ok(_) => unlink_at(dir.as_fd(), name, 0)?,
            Err(error) if error.raw_os_error() == Some(libc::ENOENT) => {}
            Err(error) => return Err(error),
        }
        drop(dir);
        let mut parent = relative.parent();
        while let Some(dir) = parent.filter(|dir| !dir.as_os_str().is_empty()) {
            if keep_dir(dir) {
                break;
            }
            let Ok((holder, name)) = self.parent_of(dir, false) else {
                break;
            };
            // Fails (and stops) unless the directory is empty.
            if unlink_at(holder.as_fd(), name, libc::AT_REMOVEDIR).is_err() {
                break;
            }
            parent = dir.parent();
        }
        Ok(())
    }
}

fn mkdir_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    let name = c_name(name)?;
    // SAFETY: a valid directory fd and a NUL-terminated name.
    if unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o777) } != 0 {
        let error = io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EEXIST) {
            return Err(error);
        }
    }
    Ok(())
}

fn unlink_at(dir: BorrowedFd<'_>, name: &OsStr, flags: libc::c_int) -> io::Result<()> {
    let name = c_name(name)?;
    // SAFETY: a valid directory fd and a NUL-terminated name.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn symlink_at(target: &[u8], dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    let target = std::ffi::CString::new(target)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a link target with a NUL"))?;
    let name = c_name(name)?;
    // SAFETY: NUL-terminated strings and a valid directory fd.
    if unsafe { libc::symlinkat(target.as_ptr(), dir.as_raw_fd(), name.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn chmod_at(dir: BorrowedFd<'_>, name: &OsStr, mode: u32) -> io::Result<()> {
    let name = c_name(name)?;
    // SAFETY: a valid directory fd and a NUL-terminated name.
    if unsafe { libc::fchmodat(dir.as_raw_fd(), name.as_ptr(), mode as libc::mode_t, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
