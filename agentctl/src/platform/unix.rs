//! Unix: uids, termios, `TIOCGWINSZ`, `poll` on stdin, SIGINT, process groups.

use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::signal::unix::{Signal, SignalKind, signal};

use super::{KEY_POLL_MS, Stream};

/// The real user id of this process (the socket path is named by it).
pub fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// The terminal's settings before prompting; restored on drop. Only `ICANON` and `ECHO` are
/// cleared: `ISIG` stays, so Ctrl-C still reaches the event loop as SIGINT (which drops this
/// guard on its way out).
pub struct RawKeys {
    saved: libc::termios,
}

impl RawKeys {
    /// Put stdin's terminal in single-key, no-echo mode and discard keys typed before the
    /// prompt appeared (a stray `y` must not approve anything).
    pub fn enable() -> io::Result<RawKeys> {
        let fd = libc::STDIN_FILENO;
        // SAFETY: an all-zero termios is a valid value for tcgetattr to overwrite.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: `saved` is a valid, writable termios; fd is stdin.
        if unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut raw = saved;
        raw.c_lflag &= !(libc::ICANON | libc::ECHO);
        raw.c_cc[libc::VMIN] = 1;
        raw.c_cc[libc::VTIME] = 0;
        // SAFETY: `raw` is a termios derived from the terminal's own settings.
        if unsafe { libc::tcsetattr(fd, libc::TCSANOW, &raw) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: flushing pending input of stdin has no memory-safety preconditions.
        unsafe { libc::tcflush(fd, libc::TCIFLUSH) };
        Ok(RawKeys { saved })
    }
}

impl Drop for RawKeys {
    fn drop(&mut self) {
        // SAFETY: `saved` came from tcgetattr on the same fd.
        unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.saved) };
    }
}

/// Bytes typed on stdin, handed to `deliver` until it returns false, stdin ends or fails, or
/// `stop` is set (noticed within `KEY_POLL_MS`). Blocking: runs on its own thread.
pub fn read_keys(stop: &AtomicBool, deliver: &mut dyn FnMut(&[u8]) -> bool) {
    let mut buf = [0u8; 16];
    while !stop.load(Ordering::Relaxed) {
        let mut pollfd = libc::pollfd {
            fd: libc::STDIN_FILENO,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut pollfd, 1, KEY_POLL_MS as libc::c_int) };
        if ready < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if ready == 0 || stop.load(Ordering::Relaxed) {
            continue;
        }
        // SAFETY: `buf` is valid for `buf.len()` bytes.
        let read = unsafe { libc::read(libc::STDIN_FILENO, buf.as_mut_ptr().cast(), buf.len()) };
        if read < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if read == 0 || !deliver(&buf[..read.unsigned_abs()]) {
            return;
        }
    }
}

/// The columns of the terminal `stream` is, if it is one.
pub fn columns(stream: Stream) -> Option<usize> {
    let fd = match stream {
        Stream::Stdout => libc::STDOUT_FILENO,
        Stream::Stderr => libc::STDERR_FILENO,
    };
    // SAFETY: an all-zero winsize is a valid value for the ioctl to overwrite.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one winsize into `size`, which is valid and writable.
    let known = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) } == 0;
    (known && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

/// The terminal's settings when a chat started, put back on drop even if the line editor was
/// still reading a line (its raw mode would otherwise outlive the process).
pub struct SavedTerminal {
    saved: Option<libc::termios>,
}

impl SavedTerminal {
    pub fn save() -> SavedTerminal {
        // SAFETY: an all-zero termios is a valid value for tcgetattr to overwrite.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: `saved` is a valid, writable termios; fd is stdin.
        let ok = unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut saved) } == 0;
        SavedTerminal {
            saved: ok.then_some(saved),
        }
    }
}

impl Drop for SavedTerminal {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            // SAFETY: `saved` came from tcgetattr on the same fd.
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, saved) };
        }
    }
}

/// Whether stdin is a pipe or a regular file (not a terminal, not `/dev/null`).
pub fn stdin_is_piped() -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let stdin = std::io::stdin();
    let Ok(owned) = stdin.as_fd().try_clone_to_owned() else {
        return false;
    };
    std::fs::File::from(owned)
        .metadata()
        .is_ok_and(|meta| meta.file_type().is_fifo() || meta.file_type().is_file())
}

/// Make the controlling terminal stdin again (after stdin was a pipe). False when there is
/// none.
pub fn reattach_terminal_to_stdin() -> bool {
    let Ok(tty) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
    else {
        return false;
    };
    // SAFETY: both descriptors are open; dup2 replaces fd 0 atomically.
    unsafe { libc::dup2(tty.as_raw_fd(), libc::STDIN_FILENO) >= 0 }
}

/// Start `command` outside this terminal's job control: its own process group, so Ctrl-C
/// here never reaches it.
pub fn detach(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
}

/// Where a detached daemon starts: a directory that always exists and that no unmount waits
/// on.
pub fn detached_dir() -> std::path::PathBuf {
    std::path::PathBuf::from("/")
}

/// Create `dir` (and its parents) readable by this user only.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Open `path` for appending, created readable by this user only when missing.
pub fn open_private_append(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
}

/// Ctrl-C at the terminal (SIGINT), as a stream of wake-ups.
pub struct Interrupts(Signal);

impl Interrupts {
    pub fn listen() -> io::Result<Interrupts> {
        signal(SignalKind::interrupt()).map(Interrupts)
    }

    /// The next Ctrl-C; `None` once no more can arrive.
    pub async fn recv(&mut self) -> Option<()> {
        self.0.recv().await
    }
}
