//! `agentd`: the per-user agent runtime daemon. Parses arguments, sets up logging and runs the
//! daemon library until it is stopped.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// The agentd daemon: owns agent sessions and speaks JSON-RPC over a local socket.
#[derive(Debug, Parser)]
#[command(name = "agentd", version)]
struct Args {
    /// Socket path (default: $AGENTD_SOCKET, else $XDG_RUNTIME_DIR/agentd/agentd.sock).
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
}

fn main() -> ExitCode {
    // `agentd __sandbox-exec …` is run_shell's sandbox helper, not a daemon.
    if let Some(code) = agentd_policy::process::main_if_sandbox_helper() {
        return code;
    }
    let args = Args::parse();
    match agentd::run_main(agentd::daemon::DaemonOptions {
        socket: args.socket,
    }) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // The daemon may not have a log yet; stderr is the one place left to say why.
            #[allow(clippy::print_stderr)]
            {
                eprintln!("agentd: {err:#}");
            }
            ExitCode::FAILURE
        }
    }
}
