//! Single instance per socket: an exclusive lock (`File::try_lock`: `flock` on Unix,
//! `LockFileEx` on Windows) on a lock file beside the socket (for a named pipe, in the temp
//! dir). Whoever
//! holds it owns the socket path; the kernel drops the lock when the process dies, so a crash
//! never leaves the path locked. A lock file that exists is one an agentd left (empty or a
//! pid); anything else at that path is someone's file and is never overwritten.

use std::fs::File;
use std::io::{Read, Seek, Write};
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
        use agentd_core::platform;
        let mut file = agentd_core::regular_file::open_with(
            path,
            platform::create_mode(
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false),
                0o600,
            ),
        )
        .with_context(|| format!("cannot use lock file {}", path.display()))?;
        let meta = file.metadata()?;
        let owner = platform::owner_of(&meta);
        if owner != platform::current_uid() {
            bail!(
                "lock file {} belongs to another user (uid {owner}); choose a socket path in a directory of your own",
                path.display(),
            );
        }
        if !looks_like_a_lock_file(&mut file, meta.len()) {
            bail!(
                "{} exists and is not an agentd lock file; agentd will not overwrite it: move it away or choose another socket path",
                path.display()
            );
        }
        if let Err(err) = file.try_lock() {
            if matches!(err, std::fs::TryLockError::WouldBlock) {
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
            return Err(std::io::Error::from(err))
                .with_context(|| format!("cannot lock {}", path.display()));
        }
        file.set_len(0)?;
        file.rewind()?;
        writeln!(file, "{}", std::process::id())?;
        file.flush()?;
        Ok(InstanceLock { _file: file })
    }
}

/// Longest content of a lock file an agentd wrote (a pid and a newline).
const MAX_LOCK_FILE_BYTES: u64 = 32;

/// Whether `file` holds what an agentd writes there: nothing yet, or a pid.
fn looks_like_a_lock_file(file: &mut File, len: u64) -> bool {
    if len > MAX_LOCK_FILE_BYTES {
        return false;
    }
    let mut content = String::new();
    if file.read_to_string(&mut content).is_err() || file.rewind().is_err() {
        return false;
    }
    content
        .trim_end_matches('\n')
        .bytes()
        .all(|b| b.is_ascii_digit())
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
    fn a_file_that_is_not_a_lock_file_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("s.lock");
        let socket = dir.path().join("s");
        std::fs::write(&lock, "my notes\n").unwrap();
        let err = InstanceLock::acquire(&lock, &socket)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not an agentd lock file"), "{err}");
        assert_eq!(std::fs::read_to_string(&lock).unwrap(), "my notes\n");

        std::fs::write(&lock, "12345\n").unwrap();
        let _held = InstanceLock::acquire(&lock, &socket).unwrap();
        assert_eq!(
            std::fs::read_to_string(&lock).unwrap(),
            format!("{}\n", std::process::id())
        );
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
