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
    /// The user's skills (`$XDG_CONFIG_HOME/agentd/skills/*/SKILL.md`), offered to every
    /// session after the project's own.
    pub skills_dir: PathBuf,
    /// The user's subagent definitions (`$XDG_CONFIG_HOME/agentd/agents/*.md`), offered to
    /// every session after the project's own.
    pub agents_dir: PathBuf,
    /// The user's command files (`$XDG_CONFIG_HOME/agentd/commands/*.md`), offered as slash
    /// commands after the project's own.
    pub commands_dir: PathBuf,
    /// The user's own notes (`$XDG_CONFIG_HOME/agentd/AGENTS.md`), in every new session's
    /// system prompt before the project's notes.
    pub user_notes: PathBuf,
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
            skills_dir: dirs.config_dir().join("skills"),
            agents_dir: dirs.config_dir().join("agents"),
            commands_dir: dirs.config_dir().join("commands"),
            user_notes: dirs.config_dir().join("AGENTS.md"),
        })
    }
}

/// The socket path clients and the daemon agree on: `--socket`, else `AGENTD_SOCKET`, else
/// `$XDG_RUNTIME_DIR/agentd/agentd.sock`, else `$TMPDIR/agentd-$UID/agentd.sock`.
pub fn socket_path(socket_override: Option<&Path>) -> Result<PathBuf> {
    let path = protocol::socket::resolve_endpoint(
        socket_override,
        |name| std::env::var_os(name),
        crate::platform::current_uid(),
        &std::env::temp_dir(),
    );
    if !is_pipe_path(&path) && path.as_os_str().len() >= MAX_SOCKET_PATH_BYTES {
        bail!(
            "socket path is too long ({} bytes, the limit is {}): {}; set AGENTD_SOCKET to a shorter path",
            path.as_os_str().len(),
            MAX_SOCKET_PATH_BYTES - 1,
            path.display()
        );
    }
    Ok(path)
}

/// The lock file for a socket: `<socket>.lock`, in the same directory; for a named pipe
/// (Windows), which has no directory to put a file in, `<pipe name>.lock` in the temp dir.
pub fn lock_path_for(socket: &Path) -> PathBuf {
    let mut name = socket.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    if is_pipe_path(socket) {
        return std::env::temp_dir().join(name);
    }
    socket.with_file_name(name)
}

/// Whether `path` names a Windows named pipe (`\\.\pipe\…`) rather than a socket file.
pub fn is_pipe_path(path: &Path) -> bool {
    let text = path.to_string_lossy();
    text.len() > PIPE_PREFIX.len()
        && text
            .get(..PIPE_PREFIX.len())
            .is_some_and(|prefix| prefix.eq_ignore_ascii_case(PIPE_PREFIX))
}

/// How every named pipe's path starts.
const PIPE_PREFIX: &str = r"\\.\pipe\";

/// Make sure the socket's directory exists and nobody else can swap the socket inside it,
/// without changing anyone's directory. A directory the daemon creates (and its missing
/// parents) is made private (0700), as tmux does. An existing one keeps its mode (a shared
/// 1777 dir given with `--socket` stays shared); it must be ours, or root's and safe from
/// other users (sticky, or not writable by them): in a shared /tmp another user could have
/// created `agentd-$UID` first to answer in the daemon's place.
pub fn prepare_socket_dir(dir: &Path) -> Result<()> {
    use crate::platform;
    // A bare file name (`--socket agentd.sock`) lives in the current directory.
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    if let Some(parent) = dir.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        platform::dir_mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(parent)
            .with_context(|| format!("cannot create directory {}", parent.display()))?;
    }
    match platform::dir_mode(&mut std::fs::DirBuilder::new(), 0o700).create(dir) {
        Ok(()) => {
            // Ours: private whatever the umask left.
            return platform::set_mode(dir, 0o700)
                .with_context(|| format!("cannot make {} private (0700)", dir.display()));
        }
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(err) => {
            return Err(err).with_context(|| format!("cannot create directory {}", dir.display()));
        }
    }
    let meta = std::fs::symlink_metadata(dir)
        .with_context(|| format!("cannot inspect directory {}", dir.display()))?;
    if !meta.is_dir() {
        bail!(
            "{} is not a directory ({}); choose another socket path (--socket or AGENTD_SOCKET)",
            dir.display(),
            crate::regular_file::kind_of(&meta.file_type())
        );
    }
    let mode = platform::mode_of(&meta);
    let owner = platform::owner_of(&meta);
    let others_may_replace = mode & 0o022 != 0 && mode & 0o1000 == 0;
    if owner != platform::current_uid() && (owner != 0 || others_may_replace) {
        bail!(
            "{} belongs to another user (uid {}); remove it or choose a socket path in a directory of your own (--socket or AGENTD_SOCKET)",
            dir.display(),
            owner
        );
    }
    Ok(())
}

/// Make sure one of the daemon's own directories (the state dir, `sessions/`, `processes/`,
/// the data dir) exists and is private (0700): they hold transcripts, logs, process records
/// and the user's memory. Created 0700
/// whatever the umask (missing parents above it, such as `~/.local/state`, get the usual
/// mode). An existing one that belongs to this user is tightened to 0700 (an older agentd made
/// it 0755); one that belongs to another user is refused, never changed. Symlinks are followed:
/// pointing the state dir elsewhere is the user's choice. Returns whether the mode was
/// tightened. Blocking.
pub fn prepare_private_dir(dir: &Path) -> Result<bool> {
    use crate::platform;
    if let Some(parent) = dir.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create directory {}", parent.display()))?;
    }
    match platform::dir_mode(&mut std::fs::DirBuilder::new(), PRIVATE_DIR_MODE).create(dir) {
        Ok(()) => {
            platform::set_mode(dir, PRIVATE_DIR_MODE)
                .with_context(|| format!("cannot make {} private (0700)", dir.display()))?;
            return Ok(false);
        }
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(err) => {
            return Err(err).with_context(|| format!("cannot create directory {}", dir.display()));
        }
    }
    let meta =
        std::fs::metadata(dir).with_context(|| format!("cannot inspect {}", dir.display()))?;
    if !meta.is_dir() {
        bail!(
            "{} is not a directory ({}); move it away so agentd can keep its state there",
            dir.display(),
            crate::regular_file::kind_of(&meta.file_type())
        );
    }
    let owner = platform::owner_of(&meta);
    if owner != platform::current_uid() {
        bail!(
            "{} belongs to another user (uid {owner}); agentd keeps private state there: remove it, or set XDG_STATE_HOME (or XDG_DATA_HOME, for the data dir) to a directory of your own",
            dir.display(),
        );
    }
    if platform::mode_of(&meta) == PRIVATE_DIR_MODE {
        return Ok(false);
    }
    platform::set_mode(dir, PRIVATE_DIR_MODE)
        .with_context(|| format!("cannot make {} private (0700)", dir.display()))?;
    Ok(true)
}

/// The mode of the daemon's own directories: only this user may list or enter them.
pub const PRIVATE_DIR_MODE: u32 = 0o700;

/// The mode of the files the daemon writes there (session files, index, logs, records).
pub const PRIVATE_FILE_MODE: u32 = 0o600;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_paths_are_told_from_socket_paths() {
        assert!(is_pipe_path(Path::new(r"\\.\pipe\agentd-bob")));
        assert!(is_pipe_path(Path::new(r"\\.\PIPE\x")));
        assert!(!is_pipe_path(Path::new(r"\\.\pipe\")));
        assert!(!is_pipe_path(Path::new("/run/user/1/agentd/agentd.sock")));
    }

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
    fn a_created_socket_dir_is_private_and_an_existing_one_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let created = tmp.path().join("a/b");
        prepare_socket_dir(&created).unwrap();
        let mode = |dir: &Path| std::fs::metadata(dir).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(&created), 0o700);
        assert_eq!(mode(&tmp.path().join("a")), 0o700);

        let shared = tmp.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
        prepare_socket_dir(&shared).unwrap();
        assert_eq!(mode(&shared), 0o1777);

        let file = tmp.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let err = prepare_socket_dir(&file).unwrap_err().to_string();
        assert!(err.contains("not a directory"), "{err}");
    }

    #[test]
    fn a_private_dir_is_created_0700_and_an_old_open_one_of_ours_is_tightened() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let mode = |dir: &Path| std::fs::metadata(dir).unwrap().permissions().mode() & 0o7777;
        let created = tmp.path().join("state/agentd");
        assert!(!prepare_private_dir(&created).unwrap());
        assert_eq!(mode(&created), 0o700);
        assert!(!prepare_private_dir(&created).unwrap());

        std::fs::set_permissions(&created, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(prepare_private_dir(&created).unwrap());
        assert_eq!(mode(&created), 0o700);

        let file = tmp.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let err = prepare_private_dir(&file).unwrap_err().to_string();
        assert!(err.contains("not a directory"), "{err}");
    }

    /// A directory of another user is refused and left as it is (one handed to another uid
    /// where the test may chown, else `/`, which is root's).
    #[test]
    fn a_private_dir_of_another_user_is_refused_unchanged() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let theirs = tmp.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o755)).unwrap();
        let dir = match std::os::unix::fs::chown(
            &theirs,
            Some(crate::regular_file::current_uid() + 1),
            None,
        ) {
            Ok(()) => theirs.as_path(),
            Err(_) => Path::new("/"),
        };
        let before = std::fs::metadata(dir).unwrap().permissions();
        let err = prepare_private_dir(dir).unwrap_err().to_string();
        assert!(err.contains("another user"), "{err}");
        assert_eq!(std::fs::metadata(dir).unwrap().permissions(), before);
    }
}
