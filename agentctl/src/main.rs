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
    runtime.block_on(agentctl::run(cli))
}
