//! Single key presses from the terminal for the approval prompt: stdin in non-canonical,
//! no-echo mode while prompting (always restored on drop), and a blocking reader thread that
//! hands keys to the async event loop so events keep flowing while the prompt waits.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::mpsc;

use crate::platform::{self, RawKeys, Stream};

/// Keys buffered between the reader thread and the event loop.
const KEY_BUFFER: usize = 64;

/// Bytes read from stdin on a blocking thread until dropped.
pub struct KeyReader {
    keys: mpsc::Receiver<u8>,
    /// Tells the thread to stop; it notices within a tenth of a second.
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
    platform::read_keys(stop, &mut |keys| {
        keys.iter().all(|&key| sender.blocking_send(key).is_ok())
    });
}

/// Stderr's terminal width in columns: the terminal's own size, else `$COLUMNS`; `None` when
/// neither says (then nothing is redrawn in place).
pub fn stderr_width() -> Option<usize> {
    width_of(Stream::Stderr)
}

/// Stdout's terminal width in columns, as [`stderr_width`] measures stderr's.
pub fn stdout_width() -> Option<usize> {
    width_of(Stream::Stdout)
}

fn width_of(stream: Stream) -> Option<usize> {
    if let Some(columns) = platform::columns(stream) {
        return Some(columns);
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

/// Asks `question [y/N]` on the terminal (stderr, one line read from stdin); true for y/yes.
pub async fn ask_yes(question: &str) -> bool {
    crate::warn_line!("{question} [y/N] ");
    let answer = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line)
    })
    .await;
    matches!(answer, Ok(Ok(line)) if matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}
