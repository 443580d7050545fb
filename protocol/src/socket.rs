//! Where the daemon listens, as a pure function of the environment, so the daemon and every
//! client agree on the path without sharing code that does I/O.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Where clients and the daemon meet on this platform: [`resolve_socket_path`] on Unix,
/// [`resolve_pipe_path`] on Windows.
pub fn resolve_endpoint(
    explicit: Option<&Path>,
    env: impl Fn(&str) -> Option<OsString>,
    uid: u32,
    temp_dir: &Path,
) -> PathBuf {
    if cfg!(windows) {
        resolve_pipe_path(explicit, env)
    } else {
        resolve_socket_path(explicit, env, uid, temp_dir)
    }
}

/// The named pipe on Windows: an explicit override (a `--socket` flag) wins, then
/// `AGENTD_SOCKET`, then `\\.\pipe\agentd-<USERNAME>` (a backslash in the name made `_`,
/// since a pipe name cannot hold one after the prefix).
pub fn resolve_pipe_path(
    explicit: Option<&Path>,
    env: impl Fn(&str) -> Option<OsString>,
) -> PathBuf {
    let non_empty = |name: &str| env(name).filter(|value| !value.is_empty());
    if let Some(path) = explicit {
        return path.to_path_buf();
    }
    if let Some(path) = non_empty("AGENTD_SOCKET") {
        return PathBuf::from(path);
    }
    let user = non_empty("USERNAME")
        .map(|name| name.to_string_lossy().replace(['\\', '/'], "_"))
        .unwrap_or_else(|| "user".to_owned());
    PathBuf::from(format!(r"\\.\pipe\agentd-{user}"))
}

/// Resolve the socket path: an explicit override (a `--socket` flag) wins, then
/// `AGENTD_SOCKET`, then `$XDG_RUNTIME_DIR/agentd/agentd.sock`, then
/// `<temp_dir>/agentd-<uid>/agentd.sock`.
pub fn resolve_socket_path(
    explicit: Option<&Path>,
    env: impl Fn(&str) -> Option<OsString>,
    uid: u32,
    temp_dir: &Path,
) -> PathBuf {
    let non_empty = |name: &str| env(name).filter(|value| !value.is_empty());
    if let Some(path) = explicit {
        path.to_path_buf()
    } else if let Some(path) = non_empty("AGENTD_SOCKET") {
        PathBuf::from(path)
    } else if let Some(runtime) = non_empty("XDG_RUNTIME_DIR") {
        PathBuf::from(runtime).join("agentd").join("agentd.sock")
    } else {
        temp_dir.join(format!("agentd-{uid}")).join("agentd.sock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn the_pipe_is_named_by_the_user_unless_overridden() {
        let pipe = resolve_pipe_path(None, env(&[("USERNAME", r"DOMAIN\bob")]));
        assert_eq!(pipe, PathBuf::from(r"\\.\pipe\agentd-DOMAIN_bob"));
        assert_eq!(
            resolve_pipe_path(None, env(&[])),
            PathBuf::from(r"\\.\pipe\agentd-user")
        );
        let given = env(&[("AGENTD_SOCKET", r"\\.\pipe\mine"), ("USERNAME", "bob")]);
        assert_eq!(
            resolve_pipe_path(None, given),
            PathBuf::from(r"\\.\pipe\mine")
        );
        assert_eq!(
            resolve_pipe_path(Some(Path::new("x")), env(&[])),
            PathBuf::from("x")
        );
    }

    #[test]
    fn precedence_is_flag_then_env_then_runtime_dir_then_tmp() {
        let tmp = Path::new("/tmp");
        let all = [
            ("AGENTD_SOCKET", "/a.sock"),
            ("XDG_RUNTIME_DIR", "/run/user/7"),
        ];
        assert_eq!(
            resolve_socket_path(Some(Path::new("/flag.sock")), env(&all), 7, tmp),
            PathBuf::from("/flag.sock")
        );
        assert_eq!(
            resolve_socket_path(None, env(&all), 7, tmp),
            PathBuf::from("/a.sock")
        );
        assert_eq!(
            resolve_socket_path(None, env(&all[1..]), 7, tmp),
            PathBuf::from("/run/user/7/agentd/agentd.sock")
        );
        assert_eq!(
            resolve_socket_path(None, env(&[("XDG_RUNTIME_DIR", "")]), 7, tmp),
            PathBuf::from("/tmp/agentd-7/agentd.sock")
        );
    }
}
