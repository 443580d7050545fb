//! Tracing setup: human-readable logs to stderr and to `agentd.log` in the state directory.
//! The filter comes from `AGENTD_LOG`, else `RUST_LOG`, else `info`.

use std::path::Path;

use anyhow::{Context, Result};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Keeps the background log writer alive; flushes on drop.
pub struct LogGuard {
    _file: tracing_appender::non_blocking::WorkerGuard,
}

/// Install the global subscriber. Call once, before the runtime starts work.
pub fn init(log_file: &Path) -> Result<LogGuard> {
    let filter = std::env::var("AGENTD_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "info".to_owned());
    let filter = EnvFilter::try_new(&filter)
        .with_context(|| format!("invalid log filter {filter:?} in AGENTD_LOG/RUST_LOG"))?;
    let dir = log_file.parent().context("log file has no directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_file)
        .with_context(|| format!("cannot open log file {}", log_file.display()))?;
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
