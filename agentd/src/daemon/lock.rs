//! Single instance per socket: an exclusive `flock` on a lock file beside the socket. Whoever
//! holds it owns the socket path; the kernel drops the lock when the process dies, so a crash
//! never leaves the path locked.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::{Context, Result, bail};

/// The held lock; released when dropped (or when the process exits).
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
}

impl InstanceLock {
    /// Take the lock or explain who holds it.
    pub fn acquire(path: &Path, socket: &Path) -> Result<InstanceLock> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .with_context(|| format!("cannot open lock file {}", path.display()))?;
        // SAFETY: flock on a valid open descriptor has no memory-safety preconditions.
        let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if locked != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let who = if holder.is_empty() {
                    String::new()
                } else {
                    format!(" (pid {holder})")
                };
                bail!(
                    "agentd is already running{who} on {}; stop it with `agentctl daemon stop` or use another --socket",
                    socket.display()
                );
            }
            return Err(err).with_context(|| format!("cannot lock {}", path.display()));
        }
        file.set_len(0)?;
        file.rewind()?;
        writeln!(file, "{}", std::process::id())?;
        file.flush()?;
        Ok(InstanceLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("s.lock");
        let socket = dir.path().join("s");
        let _first = InstanceLock::acquire(&lock, &socket).unwrap();
        let err = InstanceLock::acquire(&lock, &socket)
            .unwrap_err()
            .to_string();
        assert!(err.contains("already running"), "{err}");
        assert!(err.contains(&std::process::id().to_string()), "{err}");
    }

    #[test]
    fn the_lock_is_free_again_after_drop() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("s.lock");
        let socket = dir.path().join("s");
        drop(InstanceLock::acquire(&lock, &socket).unwrap());
        InstanceLock::acquire(&lock, &socket).unwrap();
    }
}
