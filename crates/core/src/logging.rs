//! Tracing setup: human-readable logs to stderr (coloured only on a terminal) and to a daily log file in the state directory
//! (`agentd.YYYY-MM-DD.log`, the last [`LOG_DAYS_KEPT`] kept, so a long-lived daemon never
//! fills the disk). The state directory is made private (0700) and the log files are created
//! 0600 whatever the umask ([`private_daily`]). The filter comes from `AGENTD_LOG`, else `RUST_LOG`, else `info`.
//!
//! The panic hook logs every panic through tracing, with a backtrace, so it reaches the daily
//! log file even when stderr goes nowhere (an auto-started daemon), and counts it for
//! `daemon/status`.

mod private_daily;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Daily log files kept in the state directory.
pub const LOG_DAYS_KEPT: usize = 7;

/// Keeps the background log writer alive; flushes on drop.
pub struct LogGuard {
    _file: tracing_appender::non_blocking::WorkerGuard,
}

/// Log lines waiting for the file writer at most.
const LOG_LINES_QUEUED: usize = 4096;

/// Install the global subscriber. Call once, before the runtime starts work.
pub fn init(dir: &Path) -> Result<LogGuard> {
    let filter = std::env::var("AGENTD_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "info".to_owned());
    let filter = EnvFilter::try_new(&filter)
        .with_context(|| format!("invalid log filter {filter:?} in AGENTD_LOG/RUST_LOG"))?;
    // The first to touch the state dir (the log dir is the state dir): private from here on.
    let tightened = crate::paths::prepare_private_dir(dir)?;
    let build = || {
        tracing_appender::rolling::Builder::new()
            .rotation(tracing_appender::rolling::Rotation::DAILY)
            .filename_prefix(private_daily::PREFIX)
            .filename_suffix(private_daily::SUFFIX)
            .max_log_files(LOG_DAYS_KEPT)
            .build(dir)
            .with_context(|| format!("cannot open a log file in {}", dir.display()))
    };
    let file = private_daily::PrivateDaily::new(dir, build)
        .with_context(|| format!("cannot open a log file in {}", dir.display()))?;
    // The writer's queue is made whole at start: the default 128,000 lines are 4 MiB of the
    // daemon's resident memory before anything is logged. A burst past this many waiting lines
    // drops lines (lossy, as the default is), never blocks the daemon.
    let (file_writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_LINES_QUEUED)
        .lossy(true)
        .finish(file);
    tracing_subscriber::registry()
        .with(filter)
        .with(
            tracing_subscriber::fmt::layer()
                .with_ansi(stderr_takes_colour())
                .with_writer(std::io::stderr),
        )
        .with(
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_writer(file_writer),
        )
        .try_init()
        .context("tracing was already initialised")?;
    if tightened {
        tracing::info!(dir = %dir.display(), "made the state directory private (0700)");
    }
    Ok(LogGuard { _file: guard })
}

/// Colours on stderr only for a person at a terminal: a pipe, a file or journald gets plain
/// text (`NO_COLOR` turns them off everywhere).
fn stderr_takes_colour() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Panics since the process started. Process-wide because the panic hook is: every panic of
/// any thread counts, whether a `catch_unwind` boundary turned it into an error or not.
static PANICS: AtomicU64 = AtomicU64::new(0);

/// Panics since the daemon started (`daemon/status`).
pub fn panic_count() -> u64 {
    PANICS.load(Ordering::Relaxed)
}

/// Replace the default panic hook (which prints to stderr only) with one that counts the panic
/// and logs it at error level with its location, thread and a backtrace. Call after `init`.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        PANICS.fetch_add(1, Ordering::Relaxed);
        let backtrace = std::backtrace::Backtrace::force_capture();
        let location = info
            .location()
            .map(|at| format!("{}:{}:{}", at.file(), at.line(), at.column()))
            .unwrap_or_else(|| "an unknown place".to_owned());
        let thread = std::thread::current();
        tracing::error!(
            thread = thread.name().unwrap_or("unnamed"),
            "panic at {location}: {}; this is a bug, please report it\nbacktrace:\n{backtrace}",
            panic_message(info.payload()),
        );
    }));
}

/// The text a panic was raised with (`panic!("…")`), or a placeholder for other payloads.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}
