//! Unix: a socket file (0600, in a directory checked to be ours), SIGTERM/SIGINT/SIGHUP,
//! systemd, `prctl` hardening.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use interprocess::local_socket::{GenericFilePath, ListenerOptions, ToFsName};
use interprocess::os::unix::local_socket::ListenerOptionsExt;
use tokio_util::sync::CancellationToken;

use crate::session::SessionManager;

/// Makes sure the socket's directory exists and is safe, and that nothing but a socket is at
/// the socket's path.
pub fn prepare_endpoint(socket: &Path) -> Result<()> {
    let socket_dir = socket
        .parent()
        .context("the socket path has no parent directory")?;
    agentd_core::paths::prepare_socket_dir(socket_dir)?;
    existing_socket(socket)?;
    Ok(())
}

/// Removes the socket file at the end of a stop (the listener may have done it already).
pub fn remove_endpoint(socket: &Path) {
    match std::fs::remove_file(socket) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => tracing::warn!(%err, "cannot remove the socket file"),
    }
}

/// Under systemd (Type=notify) says the daemon is ready; elsewhere nothing.
pub fn notify_ready() {
    notify_systemd(&[sd_notify::NotifyState::Ready]);
}

/// Under systemd says the daemon is stopping; elsewhere nothing.
pub fn notify_stopping() {
    notify_systemd(&[sd_notify::NotifyState::Stopping]);
}

/// The stop-signal listener; [`SignalListener::close`] ends it.
pub struct SignalListener(signal_hook_tokio::Handle);

impl SignalListener {
    pub fn close(&self) {
        self.0.close();
    }
}

/// Refuses connections from other users (the socket is 0600, this is defence in depth): the
/// refusal to send when the peer's uid is not ours (or unknown).
pub fn check_peer(stream: &interprocess::local_socket::tokio::Stream) -> Result<(), String> {
    use interprocess::local_socket::traits::StreamCommon as _;
    let ours = agentd_core::platform::current_uid();
    let theirs = match stream.peer_creds() {
        Ok(creds) => match creds.euid() {
            Some(uid) if uid == ours => return Ok(()),
            Some(uid) => {
                tracing::warn!(uid, "refused a connection from another user");
                uid.to_string()
            }
            None => return Ok(()),
        },
        Err(err) => {
            tracing::warn!(%err, "cannot read peer credentials; refusing the connection");
            "unknown".to_owned()
        }
    };
    Err(format!(
        "connection refused: this daemon serves only uid {ours}, not uid {theirs}"
    ))
}

/// Whether a socket file is at `socket`. Refuses a path that holds anything else (a regular
/// file, a directory, a symlink): it is somebody's, and the daemon never removes it.
fn existing_socket(socket: &Path) -> Result<bool> {
    use std::os::unix::fs::FileTypeExt;
    let meta = match std::fs::symlink_metadata(socket) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => {
            return Err(err).with_context(|| format!("cannot inspect {}", socket.display()));
        }
    };
    if !meta.file_type().is_socket() {
        bail!(
            "{} exists and is not a socket ({}); agentd will not replace it: move it away or choose another socket path (--socket or AGENTD_SOCKET)",
            socket.display(),
            agentd_core::regular_file::kind_of(&meta.file_type())
        );
    }
    Ok(true)
}

/// A socket file nobody answers on is left over from a crash: remove it. One that answers
/// belongs to a live daemon that does not hold our lock (another version): refuse. Anything
/// that is not a socket is refused, never removed.
pub async fn remove_stale_endpoint(socket: &Path) -> Result<()> {
    if !existing_socket(socket)? {
        return Ok(());
    }
    super::refuse_if_answered(socket).await?;
    tracing::info!(socket = %socket.display(), "removing stale socket");
    std::fs::remove_file(socket)
        .with_context(|| format!("cannot remove stale socket {}", socket.display()))
}

/// The listening socket systemd passed by socket activation (`systemd/agentd.socket`), if any.
pub fn activated_listener() -> Result<Option<interprocess::local_socket::tokio::Listener>> {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = sd_notify::listen_fds()
        .context("systemd passed unusable LISTEN_FDS/LISTEN_PID variables")?;
    let Some(fd) = fds.next() else {
        return Ok(None);
    };
    // SAFETY: systemd passed this descriptor to this process (LISTEN_PID matched) and nothing
    // else takes ownership of it.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let listener = interprocess::os::unix::uds_local_socket::tokio::Listener::try_from(owned)
        .context("the socket systemd passed is not a listening Unix socket")?;
    Ok(Some(interprocess::local_socket::tokio::Listener::from(
        listener,
    )))
}

/// Keep tools (processes of the same user) out of the daemon: not dumpable, so `/proc/<pid>/`
/// `environ`, `mem` and `maps` become root's and ptrace is refused (the provider keys in the
/// daemon's environment stay private), and no core file that would hold them. Codex does the
/// same. What the daemon reads of `/proc` is other processes' `stat` and `environ` (its own
/// entry is never read), and `stat` stays readable to all. A failure is logged, not fatal.
pub fn harden_process() {
    // SAFETY: prctl with PR_SET_DUMPABLE only changes this process's attributes.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        tracing::warn!(
            error = %std::io::Error::last_os_error(),
            "cannot make the daemon non-dumpable; tools may read its environment and memory"
        );
    }
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: setrlimit only reads the struct passed.
    if unsafe { libc::setrlimit(libc::RLIMIT_CORE, &no_core) } != 0 {
        tracing::warn!(
            error = %std::io::Error::last_os_error(),
            "cannot disable core dumps of the daemon"
        );
    }
}

/// Each loaded session keeps its log open and each client holds a socket: raise the soft limit
/// on open files to the hard limit, as long-lived servers do, so hundreds of sessions fit.
pub fn raise_open_file_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 || limit.rlim_cur >= limit.rlim_max
        {
            return;
        }
        let wanted = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) != 0 {
            tracing::debug!("cannot raise the open-file limit");
        }
    }
}

fn notify_systemd(state: &[sd_notify::NotifyState<'_>]) {
    if let Err(err) = sd_notify::notify(state) {
        tracing::debug!(%err, "cannot notify systemd");
    }
}

pub fn bind(socket: &Path) -> Result<interprocess::local_socket::tokio::Listener> {
    use std::os::unix::fs::PermissionsExt;
    let name = socket.to_fs_name::<GenericFilePath>()?;
    let listener = ListenerOptions::new()
        .name(name)
        .mode(0o600)
        .try_overwrite(false)
        .create_tokio()
        .with_context(|| format!("cannot listen on {}", socket.display()))?;
    // `mode` is applied through the umask on some systems; set it explicitly too.
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot make {} private (0600)", socket.display()))?;
    Ok(listener)
}

/// SIGTERM and SIGINT stop the daemon gracefully; SIGHUP reads config.toml again.
pub fn spawn_signal_listener(
    shutdown: CancellationToken,
    sessions: Arc<SessionManager>,
) -> Result<SignalListener> {
    use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook_tokio::Signals::new([SIGTERM, SIGINT, SIGHUP])
        .context("cannot install signal handlers")?;
    let handle = SignalListener(signals.handle());
    tokio::spawn(async move {
        while let Some(signal) = signals.next().await {
            if signal == SIGHUP {
                tracing::info!("SIGHUP received; reading the configuration again");
                sessions
                    .reload_config(crate::session::config_reload::ReloadTrigger::Signal)
                    .await;
                continue;
            }
            if shutdown.is_cancelled() {
                tracing::warn!(signal, "second stop signal: exiting now");
                std::process::exit(1);
            }
            tracing::info!(signal, "stop signal received; shutting down");
            shutdown.cancel();
        }
    });
    Ok(handle)
}
