//! What the daemon does differently per platform: where it listens (a Unix socket, 0600, its
//! peer's uid checked; a named pipe on Windows, its DACL the user's only, its peer's token
//! user checked), stop signals (SIGTERM/SIGINT, SIGHUP to reload; ctrl-c, ctrl-break, close
//! and shutdown events on Windows), systemd's socket activation and notifications, and the
//! process hardening. One implementation per platform with the same functions.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;

/// Refuses to start when a daemon answers at `socket` within two seconds (one that holds no
/// lock of ours: another version); a stale socket or pipe does not answer.
async fn refuse_if_answered(socket: &std::path::Path) -> anyhow::Result<()> {
    use interprocess::local_socket::traits::tokio::Stream as _;
    use interprocess::local_socket::{GenericFilePath, ToFsName};
    let name = socket.to_fs_name::<GenericFilePath>()?;
    let connect = interprocess::local_socket::tokio::Stream::connect(name);
    if let Ok(Ok(_stream)) = tokio::time::timeout(std::time::Duration::from_secs(2), connect).await
    {
        anyhow::bail!(
            "another agentd answers on {}; stop it first (`agentctl daemon stop`)",
            socket.display()
        );
    }
    Ok(())
}
