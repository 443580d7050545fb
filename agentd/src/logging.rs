//! Tracing setup: human-readable logs to stderr and to a daily log file in the state directory
//! (`agentd.YYYY-MM-DD.log`, the last [`LOG_DAYS_KEPT`] kept, so a long-lived daemon never
//! fills the disk). The filter comes from `AGENTD_LOG`, else `RUST_LOG`, else `info`.

use std::path::Path;

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

/// Install the global subscriber. Call once, before the runtime starts work.
pub fn init(dir: &Path) -> Result<LogGuard> {
    let filter = std::env::var("AGENTD_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "info".to_owned());
    let filter = EnvFilter::try_new(&filter)
        .with_context(|| format!("invalid log filter {filter:?} in AGENTD_LOG/RUST_LOG"))?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let file = tracing_appender::rolling::Builder::new()
        .rotation(tracing_appender::rolling::Rotation::DAILY)
        .filename_prefix("agentd")
        .filename_suffix("log")
        .max_log_files(LOG_DAYS_KEPT)
        .build(dir)
        .with_context(|| format!("cannot open a log file in {}", dir.display()))?;
    let (file_writer, guard) = tracing_appender::non_blocking(file);
    tracing_subscriber::registry()
        .with(filter)
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .with(
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_writer(file_writer),
        )
        .try_init()
        .context("tracing was already initialised")?;
    Ok(LogGuard { _file: guard })
}
