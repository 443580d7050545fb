//! Windows: a named pipe (`\\.\pipe\agentd-<user>`) whose DACL grants the user alone, a peer
//! check on the client's token user, console control events for a stop, no systemd and no
//! process hardening to do (another user's process cannot open ours without privileges).

use std::io;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use interprocess::local_socket::traits::StreamCommon as _;
use interprocess::local_socket::{GenericFilePath, ListenerOptions, ToFsName};
use interprocess::os::windows::local_socket::ListenerOptionsExt;
use interprocess::os::windows::security_descriptor::SecurityDescriptor;
use tokio_util::sync::CancellationToken;
use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, LocalFree};
use windows_sys::Win32::Security::Authorization::ConvertSidToStringSidW;
use windows_sys::Win32::Security::{
    EqualSid, GetTokenInformation, TOKEN_QUERY, TOKEN_USER, TokenUser,
};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, OpenProcess, OpenProcessToken, PROCESS_QUERY_LIMITED_INFORMATION,
};

use crate::session::SessionManager;

/// A pipe needs no directory; only a pipe name is accepted.
pub fn prepare_endpoint(socket: &Path) -> Result<()> {
    if !agentd_core::paths::is_pipe_path(socket) {
        bail!(
            "{} is not a named pipe; on Windows agentd listens on \\\\.\\pipe\\NAME (--socket or AGENTD_SOCKET)",
            socket.display()
        );
    }
    Ok(())
}

/// A pipe disappears with its last handle: nothing to remove.
pub fn remove_endpoint(_socket: &Path) {}

/// No systemd on Windows.
pub fn notify_ready() {}

/// No systemd on Windows.
pub fn notify_stopping() {}

/// No socket activation on Windows.
pub fn activated_listener() -> Result<Option<interprocess::local_socket::tokio::Listener>> {
    Ok(None)
}

/// Nothing to raise: handles are not limited like Unix descriptors.
pub fn raise_open_file_limit() {}

/// Nothing to do: a process of the same user may open the daemon's whatever is set, and other
/// users' processes cannot without privileges.
pub fn harden_process() {}

/// A pipe of that name answering belongs to a live daemon (or to someone squatting the name):
/// refuse to start. One that does not answer is gone already.
pub async fn remove_stale_endpoint(socket: &Path) -> Result<()> {
    super::refuse_if_answered(socket).await?;
    Ok(())
}

/// Creates the pipe (its first instance, so a squatter's existing pipe makes this fail) with
/// a DACL that grants the current user, and nobody else, access.
pub fn bind(socket: &Path) -> Result<interprocess::local_socket::tokio::Listener> {
    let sddl = format!("D:P(A;;GA;;;{})", current_user_sid()?);
    let wide: Vec<u16> = sddl.encode_utf16().chain(std::iter::once(0)).collect();
    let descriptor = widestring::U16CStr::from_slice(&wide)
        .map_err(|err| anyhow::anyhow!("the pipe's security descriptor: {err}"))
        .and_then(|text| {
            SecurityDescriptor::deserialize(text).context("the pipe's security descriptor")
        })?;
    let name = socket.to_fs_name::<GenericFilePath>()?;
    ListenerOptions::new()
        .name(name)
        .security_descriptor(descriptor)
        .try_overwrite(false)
        .create_tokio()
        .with_context(|| format!("cannot listen on {}", socket.display()))
}

/// The stop-event listener; [`SignalListener::close`] ends it.
pub struct SignalListener(tokio::task::JoinHandle<()>);

impl SignalListener {
    pub fn close(&self) {
        self.0.abort();
    }
}

/// Ctrl-C, Ctrl-Break, the console closing and the system shutting down stop the daemon
/// gracefully; a second one exits at once. (No SIGHUP: `agentctl daemon reload` and the
/// file watch reload the configuration.)
pub fn spawn_signal_listener(
    shutdown: CancellationToken,
    _sessions: Arc<SessionManager>,
) -> Result<SignalListener> {
    use tokio::signal::windows;
    let mut ctrl_c = windows::ctrl_c().context("cannot watch ctrl-c")?;
    let mut ctrl_break = windows::ctrl_break().context("cannot watch ctrl-break")?;
    let mut close = windows::ctrl_close().context("cannot watch the console closing")?;
    let mut system_shutdown =
        windows::ctrl_shutdown().context("cannot watch the system shutting down")?;
    let task = tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                _ = ctrl_c.recv() => "ctrl-c",
                _ = ctrl_break.recv() => "ctrl-break",
                _ = close.recv() => "console closed",
                _ = system_shutdown.recv() => "system shutdown",
            };
            if shutdown.is_cancelled() {
                tracing::warn!(event, "second stop event: exiting now");
                std::process::exit(1);
            }
            tracing::info!(event, "stop event received; shutting down");
            shutdown.cancel();
        }
    });
    Ok(SignalListener(task))
}

/// Refuses a client whose process runs as another user than the daemon (the DACL already
/// keeps them out; this is defence in depth): the refusal to send.
pub fn check_peer(stream: &interprocess::local_socket::tokio::Stream) -> Result<(), String> {
    let pid = match stream.peer_creds().map(|creds| creds.pid()) {
        Ok(Some(pid)) => pid,
        Ok(None) | Err(_) => {
            tracing::warn!("cannot tell the client's process; refusing the connection");
            return Err("connection refused: this daemon cannot tell who the client is".to_owned());
        }
    };
    match same_user_as_us(pid) {
        Ok(true) => Ok(()),
        Ok(false) => {
            tracing::warn!(pid, "refused a connection from another user");
            Err(format!(
                "connection refused: this daemon serves only its own user, not the user of process {pid}"
            ))
        }
        Err(err) => {
            tracing::warn!(pid, %err, "cannot read the client's user; refusing the connection");
            Err(format!(
                "connection refused: cannot tell the user of process {pid}: {err}"
            ))
        }
    }
}

/// A process token's `TOKEN_USER`, in a buffer aligned for it.
struct TokenUserBuffer(Vec<u64>);

impl TokenUserBuffer {
    /// The user of the process `process` (a handle with query rights).
    fn of(process: HANDLE) -> io::Result<Self> {
        let mut token: HANDLE = std::ptr::null_mut();
        // SAFETY: a process handle with query rights and a place for the token handle.
        if unsafe { OpenProcessToken(process, TOKEN_QUERY, &mut token) } == 0 {
            return Err(io::Error::last_os_error());
        }
        let mut len = 0u32;
        // SAFETY: asks the size only (a null buffer of length 0).
        unsafe { GetTokenInformation(token, TokenUser, std::ptr::null_mut(), 0, &mut len) };
        let words = usize::try_from(len).unwrap_or(0).div_ceil(8).max(1);
        let mut buffer = vec![0u64; words];
        // SAFETY: a buffer of at least `len` bytes, aligned for TOKEN_USER.
        let ok = unsafe {
            GetTokenInformation(token, TokenUser, buffer.as_mut_ptr().cast(), len, &mut len)
        };
        let error = io::Error::last_os_error();
        // SAFETY: the token handle was opened above and is closed once.
        unsafe { CloseHandle(token) };
        if ok == 0 {
            return Err(error);
        }
        Ok(Self(buffer))
    }

    fn sid(&self) -> windows_sys::Win32::Security::PSID {
        // SAFETY: the buffer holds a TOKEN_USER that GetTokenInformation wrote.
        unsafe { (*self.0.as_ptr().cast::<TOKEN_USER>()).User.Sid }
    }
}

/// The daemon's own user.
fn our_user() -> io::Result<TokenUserBuffer> {
    // SAFETY: the pseudo handle of the current process needs no closing.
    TokenUserBuffer::of(unsafe { GetCurrentProcess() })
}

/// Whether the process `pid` runs as the daemon's user.
fn same_user_as_us(pid: u32) -> io::Result<bool> {
    let ours = our_user()?;
    // SAFETY: opens a process by id for querying only.
    let process = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if process.is_null() {
        return Err(io::Error::last_os_error());
    }
    let theirs = TokenUserBuffer::of(process);
    // SAFETY: the handle was opened above and is closed once.
    unsafe { CloseHandle(process) };
    let theirs = theirs?;
    // SAFETY: two valid SIDs from the tokens' TOKEN_USER.
    Ok(unsafe { EqualSid(ours.sid(), theirs.sid()) } != 0)
}

/// The daemon user's SID as text (`S-1-5-21-…`), for the pipe's DACL.
fn current_user_sid() -> Result<String> {
    let user = our_user().context("cannot read the daemon's user")?;
    let mut text: *mut u16 = std::ptr::null_mut();
    // SAFETY: a valid SID and a place for the string the system allocates.
    if unsafe { ConvertSidToStringSidW(user.sid(), &mut text) } == 0 {
        return Err(io::Error::last_os_error()).context("cannot write the daemon's user SID");
    }
    let mut len = 0;
    // SAFETY: the system returned a NUL-terminated wide string.
    while unsafe { *text.add(len) } != 0 {
        len += 1;
    }
    // SAFETY: `len` characters were just read there.
    let sid = String::from_utf16_lossy(unsafe { std::slice::from_raw_parts(text, len) });
    // SAFETY: the string was allocated by the system with LocalAlloc and is freed once.
    unsafe { LocalFree(text.cast()) };
    Ok(sid)
}
