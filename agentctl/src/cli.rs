//! The command line: every subcommand and flag of `agentctl`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

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
    /// Print exactly one JSON object on stdout (machine-readable); `run` and `attach` print
    /// one event per line (NDJSON) instead.
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
    /// Run a prompt in a new (or given) session and stream the answer.
    ///
    /// Assistant text goes to stdout, tool activity and notes to stderr; the session id is
    /// printed on stderr at the end. Exit codes: 0 completed, 1 failed / step limit /
    /// interrupted, 3 lost the daemon, 130 cancelled. Ctrl-C cancels the run (a second Ctrl-C
    /// quits at once).
    ///
    /// With --json, every event envelope `{sessionId, seq, event}` is printed as one JSON line
    /// (NDJSON) on stdout: the one exception, with `attach`, to "one JSON object per command".
    Run(RunArgs),
    /// Show a session's transcript, then its live events.
    ///
    /// Replays the whole session (user messages as `> text`). Without --follow it stops when
    /// the replay catches up (idle session) or when the active run finishes (exit code as for
    /// `run`). Ctrl-C detaches; the run goes on.
    ///
    /// With --json, every event envelope is printed as one JSON line (NDJSON) on stdout.
    Attach {
        /// The session id (`ses_…`).
        session: String,
        /// Keep following new runs until Ctrl-C.
        #[arg(long)]
        follow: bool,
    },
    /// List, show or delete sessions.
    Sessions {
        #[command(subcommand)]
        action: SessionsAction,
    },
    /// Steer the active run: the message reaches the model after the current tool batch.
    Steer {
        /// The session id (`ses_…`).
        session: String,
        /// The message (`-` reads it from stdin).
        text: String,
    },
    /// Queue a follow-up: delivered when the run would end (starts a run when idle).
    #[command(name = "followup", visible_alias = "follow-up")]
    FollowUp {
        /// The session id (`ses_…`).
        session: String,
        /// The message (`-` reads it from stdin).
        text: String,
    },
    /// Cancel the session's active run.
    Cancel {
        /// The session id (`ses_…`).
        session: String,
    },
}

/// Arguments of `agentctl run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Workspace directory of a new session (default: the current directory).
    #[arg(long, value_name = "DIR", conflicts_with = "session")]
    pub cwd: Option<PathBuf>,
    /// Model of a new session: a model of the default provider, or `provider:model`.
    #[arg(long, value_name = "MODEL", conflicts_with = "session")]
    pub model: Option<String>,
    /// Continue this session instead of creating one.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Title of a new session.
    #[arg(long, value_name = "TITLE", conflicts_with = "session")]
    pub title: Option<String>,
    /// Start the run and exit at once, printing the session and run ids.
    #[arg(long)]
    pub background: bool,
    /// The prompt (`-` reads it from stdin).
    pub prompt: String,
}

#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// Every session, newest first.
    #[command(visible_alias = "ls")]
    List,
    /// One session with its history.
    Show {
        /// The session id (`ses_…`).
        session: String,
    },
    /// Delete a session and its log (cancels its run first).
    #[command(visible_alias = "delete")]
    Rm {
        /// The session id (`ses_…`).
        session: String,
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
