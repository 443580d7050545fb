//! The agentd daemon library: everything but argument parsing lives here so tests can drive it.

// Test code writes its fixtures with `std::fs::write` and starts plain children; the
// disallowed-methods rules of clippy.toml are for the daemon's own code, which the non-test
// build of this crate checks (clippy has no `allow-*-in-tests` setting for this lint).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod agent;
pub mod agents;
pub mod allocator;
pub mod answerers;
pub mod approval;
pub mod atomic_file;
pub mod config;
pub mod config_edit;
pub mod context;
pub mod conversation;
pub mod daemon;
pub mod frontmatter;
pub mod llm;
pub mod logging;
pub mod mcp;
pub mod memory;
pub mod paths;
pub mod permission;
pub mod process;
pub mod regular_file;
pub mod rpc;
pub mod server;
pub mod session;
pub mod skills;
pub mod state;
pub mod store;
pub mod task;
pub mod test_seam;
#[cfg(test)]
mod test_support;
pub mod text_position;
pub mod tools;
pub mod truncate;
pub mod trust;
pub mod wire;
pub mod workspace;

/// Set up logging and the runtime, then run the daemon until it stops.
pub fn run_main(options: daemon::DaemonOptions) -> anyhow::Result<()> {
    let paths = paths::Paths::resolve(options.socket.as_deref())?;
    let _log_guard = logging::init(&paths.log_dir)?;
    logging::install_panic_hook();
    // Before any thread or tool starts: tools must not read the daemon's memory or environment.
    daemon::harden_process();
    test_seam::init_from_env();
    allocator::configure();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("agentd")
        .build()?;
    let result = runtime.block_on(daemon::run(options));
    if let Err(err) = &result {
        tracing::error!("{err:#}");
    }
    // Don't wait for stray blocking work (a stuck tool) forever.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    result
}
