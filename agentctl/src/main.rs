//! `agentctl`: parse the command line and run it.

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = agentctl::cli::Cli::parse_args();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("agentctl: cannot start the async runtime: {err}");
            return ExitCode::from(agentctl::output::EXIT_FAILED);
        }
    };
    let code = runtime.block_on(agentctl::run(cli));
    // What is still running is not waited for: everything the command needed was awaited, and a
    // blocking read left behind (Windows reads a started daemon's stderr pipe, and the console,
    // on blocking threads, which the daemon or the user may keep open for good) must not hold
    // agentctl at exit.
    runtime.shutdown_background();
    code
}
