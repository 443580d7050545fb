//! Where the daemon keeps things: socket, lock, config, state and logs (DESIGN §3), resolved
//! with `directories` (which honours `XDG_*`), each overridable.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// Longest socket path the kernel accepts (`sun_path` is 108 bytes on Linux, 104 on macOS).
pub const MAX_SOCKET_PATH_BYTES: usize = 104;

/// Every path the daemon uses.
#[derive(Clone, Debug)]
pub struct Paths {
    pub socket: PathBuf,
    /// Lock file beside the socket: whoever holds it owns the socket path.
    pub lock: PathBuf,
    pub config: PathBuf,
    pub state_dir: PathBuf,
    pub sessions_dir: PathBuf,
    /// Where the daily log files go (`agentd.YYYY-MM-DD.log`).
    pub log_dir: PathBuf,
    pub data_dir: PathBuf,
}

impl Paths {
    /// Resolve every path from the environment; `socket_override` (the `--socket` flag) wins
    /// over `AGENTD_SOCKET`.
    pub fn resolve(socket_override: Option<&Path>) -> Result<Paths> {
        let dirs = directories::ProjectDirs::from("", "", "agentd")
            .context("cannot determine the home directory; set HOME or XDG_STATE_HOME")?;
        let socket = socket_path(socket_override)?;
        let state_dir = dirs
            .state_dir()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| dirs.data_local_dir().join("state"));
        let config = match std::env::var_os("AGENTD_CONFIG") {
            Some(path) if !path.is_empty() => PathBuf::from(path),
            _ => dirs.config_dir().join("config.toml"),
        };
        Ok(Paths {
            lock: lock_path_for(&socket),
            socket,
            config,
            sessions_dir: state_dir.join("sessions"),
            log_dir: state_dir.clone(),
            state_dir,
            data_dir: dirs.data_dir().to_path_buf(),
        })
    }
}

/// The socket path clients and the daemon agree on: `--socket`, else `AGENTD_SOCKET`, else
/// `$XDG_RUNTIME_DIR/agentd/agentd.sock`, else `$TMPDIR/agentd-$UID/agentd.sock`.
pub fn socket_path(socket_override: Option<&Path>) -> Result<PathBuf> {
    let path = protocol::socket::resolve_socket_path(
        socket_override,
        |name| std::env::var_os(name),
        current_uid(),
        &std::env::temp_dir(),
    );
    if path.as_os_str().len() >= MAX_SOCKET_PATH_BYTES {
        bail!(
            "socket path is too long ({} bytes, the limit is {}): {}; set AGENTD_SOCKET to a shorter path",
            path.as_os_str().len(),
            MAX_SOCKET_PATH_BYTES - 1,
            path.display()
        );
    }
    Ok(path)
}

/// The lock file for a socket: `<socket>.lock`, in the same directory.
pub fn lock_path_for(socket: &Path) -> PathBuf {
    let mut name = socket.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    socket.with_file_name(name)
}

/// The real user id of this process.
pub fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// Create `dir` (and parents) and make sure it is ours and private (0700), as tmux does: in a
/// shared /tmp another user could have created it first.
pub fn ensure_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create directory {}", dir.display()))?;
    let meta = std::fs::symlink_metadata(dir)
        .with_context(|| format!("cannot inspect directory {}", dir.display()))?;
    if !meta.is_dir() {
        bail!("{} is not a directory", dir.display());
    }
    if meta.uid() != current_uid() {
        bail!(
            "{} belongs to another user (uid {}); remove it or set AGENTD_SOCKET",
            dir.display(),
            meta.uid()
        );
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot make {} private (0700)", dir.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_file_sits_beside_the_socket() {
        assert_eq!(
            lock_path_for(Path::new("/run/user/1/agentd/agentd.sock")),
            PathBuf::from("/run/user/1/agentd/agentd.sock.lock")
        );
    }

    #[test]
    fn too_long_socket_path_is_refused_with_advice() {
        let long = PathBuf::from(format!("/tmp/{}/a.sock", "x".repeat(120)));
        let err = socket_path(Some(&long)).unwrap_err().to_string();
        assert!(err.contains("AGENTD_SOCKET"), "{err}");
    }

    #[test]
    fn private_dir_is_made_0700() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
