//! The agentd daemon library: everything but argument parsing lives here so tests can drive it.

// Test code writes its fixtures with `std::fs::write` and starts plain children; the
// disallowed-methods rules of clippy.toml are for the daemon's own code, which the non-test
// build of this crate checks (clippy has no `allow-*-in-tests` setting for this lint).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

mod allocator;
mod config;
pub mod daemon;
mod extension;

mod rpc;
pub mod server;
mod session;
mod state;
mod store;
pub mod task;
mod wire;

/// Set up logging and the runtime, then run the daemon until it stops.
pub fn run_main(options: daemon::DaemonOptions) -> anyhow::Result<()> {
    let paths = agentd_core::paths::Paths::resolve(options.socket.as_deref())?;
    let _log_guard = agentd_core::logging::init(&paths.log_dir)?;
    agentd_core::logging::install_panic_hook();
    // Before any thread or tool starts: tools must not read the daemon's memory or environment.
    server::os::harden_process();
    agentd_core::test_seam::init_from_env();
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
