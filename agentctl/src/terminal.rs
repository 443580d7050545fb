//! Single key presses from the terminal for the approval prompt: stdin in non-canonical,
//! no-echo mode while prompting (always restored on drop), and a blocking reader thread that
//! hands keys to the async event loop so events keep flowing while the prompt waits.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::mpsc;

/// How often the reader thread looks at its stop flag while no key arrives: bounds how long
/// it outlives the prompt (the runtime waits for it at exit).
const KEY_POLL_MS: libc::c_int = 100;

/// Keys buffered between the reader thread and the event loop.
const KEY_BUFFER: usize = 64;

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

/// Bytes read from stdin on a blocking thread until dropped.
pub struct KeyReader {
    keys: mpsc::Receiver<u8>,
    /// Tells the thread to stop; it notices within `KEY_POLL_MS`.
    stop: Arc<AtomicBool>,
}

impl KeyReader {
    pub fn start() -> KeyReader {
        let (sender, keys) = mpsc::channel(KEY_BUFFER);
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = stop.clone();
        // Not awaited: it cannot be interrupted inside poll, so it ends itself once `stop` is
        // set (at most KEY_POLL_MS later) or the receiver is gone.
        drop(tokio::task::spawn_blocking(move || {
            read_keys(&sender, &thread_stop)
        }));
        KeyReader { keys, stop }
    }

    /// The next key; `None` when stdin ended or failed.
    pub async fn next(&mut self) -> Option<u8> {
        self.keys.recv().await
    }
}

impl Drop for KeyReader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn read_keys(sender: &mpsc::Sender<u8>, stop: &AtomicBool) {
    let mut buf = [0u8; 16];
    while !stop.load(Ordering::Relaxed) {
        let mut pollfd = libc::pollfd {
            fd: libc::STDIN_FILENO,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut pollfd, 1, KEY_POLL_MS) };
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
        if read == 0 {
            return;
        }
        for &key in buf.iter().take(read.unsigned_abs()) {
            if sender.blocking_send(key).is_err() {
                return;
            }
        }
    }
}

/// Stderr's terminal width in columns: the terminal's own size, else `$COLUMNS`; `None` when
/// neither says (then nothing is redrawn in place).
pub fn stderr_width() -> Option<usize> {
    // SAFETY: an all-zero winsize is a valid value for the ioctl to overwrite.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one winsize into `size`, which is valid and writable.
    let known = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut size) } == 0
        && size.ws_col > 0;
    if known {
        return Some(usize::from(size.ws_col));
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|columns| columns.trim().parse::<usize>().ok())
        .filter(|columns| *columns > 0)
}

/// A prompt's hold on the terminal: raw keys and their reader, both undone on drop.
pub struct PromptInput {
    // Field order: stop reading before the terminal goes back to canonical mode.
    pub keys: KeyReader,
    _raw: RawKeys,
}

impl PromptInput {
    pub fn start() -> io::Result<PromptInput> {
        let raw = RawKeys::enable()?;
        Ok(PromptInput {
            keys: KeyReader::start(),
            _raw: raw,
        })
    }
}
