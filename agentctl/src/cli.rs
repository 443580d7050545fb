//! The command line: every subcommand and flag of `agentctl`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// agentctl: talk to the agentd daemon (starting it when needed).
#[derive(Debug, Parser)]
#[command(name = "agentctl", version, propagate_version = true)]
pub struct Cli {
    /// Socket path (default: $AGENTD_SOCKET, else $XDG_RUNTIME_DIR/agentd/agentd.sock).
    #[arg(long, global = true, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Do not start the daemon when nothing answers on the socket.
    #[arg(long, global = true)]
    pub no_start: bool,
    /// Print exactly one JSON object on stdout (machine-readable).
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the daemon's status (starts the daemon if needed).
    Status,
    /// Start, stop or inspect the daemon.
    Daemon {
        #[command(subcommand)]
        action: DaemonAction,
    },
}

#[derive(Debug, Subcommand)]
pub enum DaemonAction {
    /// Start the daemon in the background (does nothing if it is running).
    Start,
    /// Stop the daemon gracefully (does nothing if it is not running).
    Stop,
    /// Say whether the daemon is running, without starting it.
    Status,
}
