//! What a sandboxed child does between fork and exec: enter its own mount namespace (and a user
//! namespace when the daemon is not root) where the project's configuration (directories and
//! files, see [`super::protected`]) is made of read-only bind mounts and the daemon's socket is
//! covered by `/dev/null`, then restrict itself with the Landlock ruleset the daemon built. Everything is prepared in the daemon (paths as `CString`s, the id maps as
//! bytes, the ruleset fd); the child only makes system calls, which are async-signal-safe.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// How the child gets the right to mount.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Namespaces {
    /// A mount namespace only: the daemon runs as root (or with `CAP_SYS_ADMIN`).
    MountOnly,
    /// A user namespace that maps the daemon's uid and gid to themselves, and a mount
    /// namespace it owns: what an unprivileged daemon may do where user namespaces are allowed.
    UserAndMount,
}

/// Read-only bind mounts made in a fresh mount namespace of the child.
#[derive(Debug)]
pub(crate) struct ReadOnlyMounts {
    pub(crate) namespaces: Namespaces,
    /// Directories and files to make read-only, each with the flags its mount already has that a
    /// remount inside a user namespace must keep (nosuid, nodev, noexec, atime flags).
    pub(crate) dirs: Vec<(CString, libc::c_ulong)>,
    /// Files covered by a bind mount of `/dev/null` (the daemon's socket: a shell that could
    /// connect to it could approve its own requests or trust its own project).
    pub(crate) masked: Vec<CString>,
    /// `"<uid> <uid> 1"`, written to `/proc/self/uid_map` in a user namespace.
    pub(crate) uid_map: Vec<u8>,
    /// `"<gid> <gid> 1"`, written to `/proc/self/gid_map` in a user namespace.
    pub(crate) gid_map: Vec<u8>,
}

/// Everything a sandboxed child applies to itself before exec.
#[derive(Debug)]
pub struct Confinement {
    /// The read-only mounts, where a mount namespace is available.
    pub(crate) mounts: Option<ReadOnlyMounts>,
    /// The Landlock ruleset (close-on-exec), applied last.
    pub(crate) ruleset: OwnedFd,
}

impl Confinement {
    /// Applies the confinement to the calling process: mounts first (a process Landlock
    /// restricts may not mount), then `no_new_privs` and the ruleset.
    ///
    /// Only async-signal-safe calls: it runs in a forked child of a multi-threaded daemon.
    pub(crate) fn enter(&self) -> io::Result<()> {
        if let Some(mounts) = &self.mounts {
            mounts.enter()?;
        }
        restrict_self(&self.ruleset)
    }
}

impl ReadOnlyMounts {
    /// Unshares the namespaces, makes each path a read-only bind mount of itself and
    /// covers each masked file with `/dev/null`. Only async-signal-safe calls.
    pub(crate) fn enter(&self) -> io::Result<()> {
        match self.namespaces {
            Namespaces::MountOnly => unshare(libc::CLONE_NEWNS)?,
            Namespaces::UserAndMount => {
                unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS)?;
                write_proc(c"/proc/self/setgroups", b"deny")?;
                write_proc(c"/proc/self/uid_map", &self.uid_map)?;
                write_proc(c"/proc/self/gid_map", &self.gid_map)?;
            }
        }
        // Nothing done here may reach the daemon's namespace.
        mount(None, c"/", libc::MS_REC | libc::MS_PRIVATE)?;
        for (dir, kept_flags) in &self.dirs {
            mount(Some(dir), dir, libc::MS_BIND | libc::MS_REC)?;
            mount(
                None,
                dir,
                libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | kept_flags,
            )?;
        }
        for file in &self.masked {
            mount(Some(c"/dev/null"), file, libc::MS_BIND)?;
        }
        Ok(())
    }
}

/// `no_new_privs`, then `landlock_restrict_self(ruleset, 0)`. Async-signal-safe.
fn restrict_self(ruleset: &OwnedFd) -> io::Result<()> {
    // SAFETY: prctl and a raw system call on a file descriptor this process owns.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::syscall(
            libc::SYS_landlock_restrict_self,
            ruleset.as_raw_fd(),
            0 as libc::c_uint,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn unshare(flags: libc::c_int) -> io::Result<()> {
    // SAFETY: unshare only changes this (single-threaded, forked) process's namespaces.
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn mount(source: Option<&CStr>, target: &CStr, flags: libc::c_ulong) -> io::Result<()> {
    let source = source.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: the strings are NUL-terminated and live across the call; no data argument.
    let result = unsafe {
        libc::mount(
            source,
            target.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// open, one write, close: the id map files take their content in one write.
fn write_proc(path: &CStr, content: &[u8]) -> io::Result<()> {
    // SAFETY: open, write and close are async-signal-safe; the buffer outlives the call.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, content.as_ptr().cast(), content.len());
        let error = io::Error::last_os_error();
        libc::close(fd);
        if usize::try_from(written).ok() != Some(content.len()) {
            return Err(error);
        }
    }
    Ok(())
}
