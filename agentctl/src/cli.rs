//! The command line: every subcommand and flag of `agentctl`.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use protocol::approval::PermissionMode;

use crate::approve_policy::ApprovePolicy;

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
    /// Colours on stderr: `auto` (on a terminal, unless NO_COLOR is set), `always`, `never`.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// The model's reasoning in `run`, `attach` and chat: `brief` (its last line beside the
    /// thinking timer), `full` (all of it, dimmed, as it streams), `off` (the timer only).
    #[arg(long, global = true, value_enum, value_name = "HOW", default_value_t = crate::render::Thinking::Brief)]
    pub thinking: crate::render::Thinking,
    /// Without a command on a terminal: `chat`.
    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// The command line as parsed: the global options (`--socket`, `--no-start`, `--json`,
    /// `--color`) are accepted after every subcommand but listed once, in `agentctl --help`.
    /// Clap lists a `global` option in every subcommand's help; a hidden copy given to each
    /// subcommand first is the one clap passes down instead.
    pub fn command() -> clap::Command {
        let top = <Self as clap::CommandFactory>::command();
        let globals: Vec<clap::Arg> = top
            .get_arguments()
            .filter(|arg| arg.is_global_set())
            .map(|arg| arg.clone().hide(true))
            .collect();
        top.mut_subcommands(|sub| sub.args(globals.iter().cloned()))
    }

    /// Parses the process's arguments; help, version and usage errors exit as clap's do.
    pub fn parse_args() -> Self {
        let matches = Self::command().get_matches();
        match <Self as clap::FromArgMatches>::from_arg_matches(&matches) {
            Ok(cli) => cli,
            Err(err) => err.format(&mut Self::command()).exit(),
        }
    }
}

/// `--color`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the daemon's status (starts the daemon if needed): its default provider, model and
    /// base URL (never keys), the config file and whether it loaded, and a warning when the
    /// daemon runs with other OPENAI_*/ANTHROPIC_*/AGENTD_* variables than this shell.
    Status,
    /// Chat in the current directory: prompts, streaming answers, steers and approvals in one
    /// terminal (`agentctl` alone does the same). `/help` lists the local commands.
    ///
    /// While a run streams, Enter sends a steer and Alt+Enter (or a leading `>>`) a follow-up;
    /// Ctrl-C cancels the run. When idle, Ctrl-C twice or Ctrl-D quits; the session stays.
    Chat(ChatArgs),
    /// List the configured providers and their models (the default one marked `*`).
    Models,
    /// Start, stop or inspect the daemon.
    Daemon {
        #[command(subcommand)]
        action: DaemonAction,
    },
    /// Run a prompt in a new (or given) session and stream the answer.
    ///
    /// Assistant text goes to stdout, tool activity and notes to stderr; the session id is
    /// printed on stderr at the end. Exit codes: 0 completed, 1 failed / step limit /
    /// interrupted, 3 lost the daemon, 4 stopped at a budget, 130 cancelled. Ctrl-C cancels
    /// the run (a second Ctrl-C quits at once).
    ///
    /// A daemon that stops or crashes mid-run (a restart, an upgrade) is waited for, up to
    /// AGENTCTL_RECONNECT_SECS (default 60), and the run followed on once it is back; exit 3
    /// when it does not come back (`agentctl attach` then follows the rest).
    ///
    /// Approvals of the run: on a terminal, an inline prompt (`y` once, `s` session, `a` always,
    /// `n` deny, `c` deny and cancel); otherwise the --approve policy (default `never`).
    ///
    /// With --json, every event envelope `{sessionId, seq, event}` is printed as one JSON line
    /// (NDJSON) on stdout: the one exception, with `attach`, to "one JSON object per command";
    /// the last line is the result object `{"type": "result", sessionId, runId, status,
    /// finalText, usage, steps, denials, error?}`.
    Run(RunArgs),
    /// Write an AGENTS.md for the workspace from a model run (the `/init` command): the model
    /// looks at the repository with its read tools and writes the file (build and test
    /// commands, layout, conventions), or improves the one there. Every write of AGENTS.md is
    /// asked of a person: run it on a terminal (or with `--approve wait` and answer with
    /// `agentctl approve`).
    Init(InitArgs),
    /// Show a session's transcript, then its live events.
    ///
    /// Replays the whole session (user messages as `> text`). Without --follow it stops when
    /// the replay catches up (idle session) or when the active run finishes (exit code as for
    /// `run`). Ctrl-C detaches; the run goes on. A daemon restart is waited out as by `run`.
    ///
    /// On a terminal, attach answers the session's approvals inline like `run` (y/s/a/n/c), so
    /// runs wait for it. Without a terminal (or with --json) it only shows them and does not
    /// make a run wait: a run nobody answers for is denied by its mode. Use
    /// `run --approve wait` to keep approvals pending for `agentctl approve`.
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
    /// Summarise the session's older history now (keeps the last two user turns).
    ///
    /// Exit 1 when a run is active or the summary failed (the history is then kept).
    Compact {
        /// The session id (`ses_…`).
        session: String,
    },
    /// What a run (or the whole session) changed in the workspace, as a coloured unified diff
    /// from the daemon's checkpoints (shell commands' and MCP tools' changes included).
    Diff {
        /// The session id or a prefix (default: the newest session of this directory).
        session: Option<String>,
        /// One run: its number in `agentctl rewind`'s list, or its id.
        #[arg(long, value_name = "N")]
        run: Option<String>,
    },
    /// Go back: the workspace's files (and with --conversation the conversation, as a new
    /// session) to before a run or to a seq. Without --run or --seq, lists the runs.
    ///
    /// Shows what it would restore and remove (and what was changed by hand since), then asks;
    /// --yes does it without asking. A rewind is undone by the `--seq` it prints.
    Rewind {
        /// The session id or a prefix (default: the newest session of this directory).
        session: Option<String>,
        /// Back to before this run: its number in the list, or its id.
        #[arg(long, value_name = "N", conflicts_with = "seq")]
        run: Option<String>,
        /// Back to this seq of the session's log (the last checkpoint at or before it).
        #[arg(long, value_name = "SEQ")]
        seq: Option<u64>,
        /// Also continue the conversation from that point, as a new session.
        #[arg(long)]
        conversation: bool,
        /// Leave the files as they are (with --conversation).
        #[arg(long, requires = "conversation")]
        no_files: bool,
        /// Do it without asking.
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// List pending approvals and runs paused at a budget (of every session, or one).
    Approvals {
        #[command(subcommand)]
        action: ApprovalsAction,
    },
    /// Allow a pending tool call (once, for the session, or always), or let a run paused at a
    /// budget (`bud_…`) continue (with the suggested limit, or `--limit`).
    ///
    /// Exit 1 with the daemon's message when the approval is unknown or already decided.
    Approve {
        /// The approval id (`apr_…`) or budget pause id (`bud_…`); a unique prefix will do.
        approval: String,
        /// Also allow the same tool and specifier for the rest of the session.
        #[arg(long, conflicts_with_all = ["always", "limit"])]
        session: bool,
        /// Allow it from now on: adds an allow rule to the user config (when one is offered).
        #[arg(long, conflicts_with = "limit")]
        always: bool,
        /// For a budget pause: the run's new limit (dollars, tokens or seconds, as the pause
        /// counts), above what it has used; default: the pause's suggested limit.
        #[arg(long, value_name = "N")]
        limit: Option<f64>,
    },
    /// Deny a pending tool call; the model is told and goes on (or the run is cancelled). For
    /// a budget pause (`bud_…`): stop the run (status `budget`).
    ///
    /// Exit 1 with the daemon's message when the approval is unknown or already decided.
    Deny {
        /// The approval id (`apr_…`) or budget pause id (`bud_…`); a unique prefix will do.
        approval: String,
        /// Also cancel the run.
        #[arg(long, conflicts_with = "always")]
        cancel: bool,
        /// Also add a deny rule to the user config: such calls are refused from now on
        /// without asking (offered when a narrow rule exists, like `approve --always`).
        #[arg(long)]
        always: bool,
        /// Why, shown to the model.
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
    },
    /// Trust a project, pinned to the content of its settings and `.mcp.json` files.
    ///
    /// The allow rules, a looser default mode and the MCP servers of each such file apply while
    /// its content is the one trusted; a file new or changed since waits until you trust again.
    /// Deny and ask rules apply whether trusted or not. Prints what was trusted. The project is
    /// DIR's git root, or DIR itself outside a repository.
    Trust {
        /// A directory of the project (default: the current directory).
        dir: Option<PathBuf>,
        /// Only show what trusting would apply (rules, modes, servers with their command
        /// lines, hooks), file by file; trust nothing.
        #[arg(long)]
        show: bool,
    },
    /// Stop trusting a project: only the deny and ask rules of its settings apply again.
    Untrust {
        /// A directory of the project (default: the current directory).
        dir: Option<PathBuf>,
    },
    /// The curated memory (MEMORY.md, USER.md) the model keeps across sessions.
    Memory {
        #[command(subcommand)]
        action: MemoryAction,
    },
    /// List the skills a session is offered (and, on stderr, the ones skipped with why).
    Skills {
        #[command(subcommand)]
        action: SkillsAction,
    },
    /// List the subagents a session can delegate to (and, on stderr, the definition files not
    /// used with why).
    Agents {
        #[command(subcommand)]
        action: AgentsAction,
    },
    /// The MCP servers the daemon runs: list them, restart one, read one's log.
    Mcp {
        #[command(subcommand)]
        action: McpAction,
    },
    /// Background tasks (subagents, background shell commands): list, show, read, steer, stop,
    /// start.
    Task {
        #[command(subcommand)]
        action: TaskAction,
    },
    /// Serve the Agent Client Protocol on stdio, for editors (Zed, JetBrains, Neovim…).
    ///
    /// Configure the editor's agent command as `agentctl acp`. Sessions are the daemon's
    /// (any client can attach to one by its id); closing stdin ends the bridge, not the runs.
    Acp,
}

#[derive(Debug, Subcommand)]
pub enum TaskAction {
    /// Pending and running tasks, newest first (`--all` adds finished ones).
    List {
        /// Finished tasks too.
        #[arg(long)]
        all: bool,
    },
    /// One task's details (and, for an interrupted one, how to resume it).
    Show {
        /// The task id (`task_…`).
        task: String,
    },
    /// A task's output: a shell's output, a subagent's final message.
    Output {
        /// The task id (`task_…`).
        task: String,
        /// Keep printing new output until the task ends.
        #[arg(short, long)]
        follow: bool,
    },
    /// Steer a running subagent: the message reaches it before its next model call.
    Steer {
        /// The task id (`task_…`).
        task: String,
        /// The message (`-` reads it from stdin).
        text: String,
    },
    /// Queue a follow-up for a subagent: delivered when its run would end.
    #[command(name = "followup", visible_alias = "follow-up")]
    FollowUp {
        /// The task id (`task_…`).
        task: String,
        /// The message (`-` reads it from stdin).
        text: String,
    },
    /// Stop a task: cancels a subagent, kills a shell command's process group.
    Stop {
        /// The task id (`task_…`).
        task: String,
    },
    /// Start a background subagent; prints its task id.
    Start {
        /// The subagent definition (default: general-purpose).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
        /// The workspace (default: the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// The prompt (`-` reads it from stdin).
        prompt: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// Servers running and configured for DIR: name, source, transport, status, tools, pid,
    /// restarts, last error (configuration problems on stderr). With --json, the `mcp/list`
    /// result.
    #[command(visible_alias = "ls")]
    List {
        /// The workspace directory (default: the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
    },
    /// Restart a server now (also a failed one); its restart count starts again.
    Restart {
        /// The server's name.
        name: String,
        /// A directory of the project, when servers of that name run for several.
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
    },
    /// Log in to an HTTP server that asks for OAuth: opens the login page in a browser (the
    /// URL is printed too) and waits for it to come back; the daemon keeps the token.
    Login {
        /// The server's name.
        name: String,
        /// The workspace directory whose configuration names it (default: the current
        /// directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// Only print the URL, never start a browser.
        #[arg(long)]
        no_browser: bool,
    },
    /// Delete an HTTP server's OAuth token (it needs a login again).
    Logout {
        /// The server's name.
        name: String,
        /// The workspace directory whose configuration names it (default: the current
        /// directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
    },
    /// Print a stdio server's stderr log.
    Logs {
        /// The server's name.
        name: String,
        /// Keep printing what it writes until Ctrl-C.
        #[arg(short, long)]
        follow: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum MemoryAction {
    /// The stores sessions in DIR use (the project's `.agents/memory/` when it has one, else
    /// yours), with their entries and usage. With --json, the `memory/get` result.
    Show {
        /// A directory (default: the current directory).
        dir: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum SkillsAction {
    /// Skills of a workspace, by name: the project's (from DIR up to the git root) and yours
    /// (`$XDG_CONFIG_HOME/agentd/skills/`).
    #[command(visible_alias = "ls")]
    List {
        /// The workspace directory (default: the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum AgentsAction {
    /// Agents of a workspace: the built-ins, the project's (`.agents/agents/`,
    /// `.claude/agents/`, from DIR up to the git root) and yours
    /// (`$XDG_CONFIG_HOME/agentd/agents/`).
    #[command(visible_alias = "ls")]
    List {
        /// The workspace directory (default: the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ApprovalsAction {
    /// Pending approvals, oldest first: id, session, tool, summary, reason, age; then the runs
    /// paused at a budget: id, session, budget, used, limit, what `approve` continues to, age.
    #[command(visible_alias = "ls")]
    List {
        /// Only this session's approvals and budget pauses.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
    },
}

/// Arguments of `agentctl chat`.
#[derive(Debug, Default, Args)]
pub struct ChatArgs {
    /// Continue this session instead of starting one with the first prompt.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Continue the newest session of the current directory.
    #[arg(short = 'c', long = "continue", conflicts_with = "session")]
    pub continue_latest: bool,
    /// Pick the session to continue: this directory's sessions, last used first (Tab: every
    /// directory's); arrows or j/k move, typing filters, Enter opens, Esc cancels.
    #[arg(short = 'r', long, conflicts_with_all = ["session", "continue_latest"])]
    pub resume: bool,
    /// Model of the session the first prompt starts: a model of the default provider, or
    /// `provider:model`.
    #[arg(long, value_name = "MODEL", conflicts_with_all = ["session", "continue_latest", "resume"])]
    pub model: Option<String>,
    /// Permission mode of the session the first prompt starts.
    #[arg(long, value_name = "MODE", value_parser = mode_parser(),
          conflicts_with_all = ["session", "continue_latest", "resume"])]
    pub mode: Option<PermissionMode>,
}

/// Arguments of `agentctl run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Workspace directory of a new session, or whose newest session `-c` continues (default:
    /// the current directory).
    #[arg(long, value_name = "DIR", conflicts_with = "session")]
    pub cwd: Option<PathBuf>,
    /// Model: a model of the default provider, or `provider:model`. With --session or -c it
    /// changes the session's model from this run on.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Continue this session instead of creating one (a unique prefix of its id is enough).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Continue the newest session of the workspace (the current directory, or --cwd).
    #[arg(short = 'c', long = "continue", conflicts_with = "session")]
    pub continue_session: bool,
    /// Title of the session.
    #[arg(long, value_name = "TITLE")]
    pub title: Option<String>,
    /// Start the run and exit at once, printing the session and run ids.
    #[arg(long)]
    pub background: bool,
    /// How to answer the run's approvals instead of prompting: `never` denies them (the
    /// default without a terminal or with --json), `wait` leaves them to another client
    /// (`agentctl approve`), `edits` allows write_file/edit_file and denies the rest, `all`
    /// allows everything asked. On a terminal the default is to prompt. With --background only
    /// `wait` applies: the approvals stay pending for `agentctl attach` or `agentctl approve`.
    #[arg(long, value_enum, value_name = "POLICY")]
    pub approve: Option<ApprovePolicy>,
    /// Permission mode. With --session or -c it changes the session's mode from this run on.
    #[arg(long, value_name = "MODE", value_parser = mode_parser())]
    pub mode: Option<PermissionMode>,
    /// Run the new session as this subagent (`agentctl agents list` names them): its system
    /// prompt is the agent's, its tools filtered by the agent's definition.
    #[arg(long, value_name = "NAME", conflicts_with = "session")]
    pub agent: Option<String>,
    /// An allow rule of the new session, e.g. `Bash(git diff:*)` (repeatable).
    #[arg(long = "allow", value_name = "RULE")]
    pub allow: Vec<String>,
    /// A deny rule of the new session, e.g. `Bash(rm:*)` (repeatable).
    #[arg(long = "deny", value_name = "RULE")]
    pub deny: Vec<String>,
    /// At most N model calls in this run (the config's `max_steps` still caps it).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_steps: Option<u32>,
    /// Attach an image (PNG, JPEG, GIF or WebP, at most 5 MiB) to the prompt, for models that
    /// take images; may be given up to 8 times. `@shot.png` in the prompt attaches one too.
    #[arg(long = "image", value_name = "FILE")]
    pub images: Vec<PathBuf>,
    /// Text appended to the new session's system prompt (frozen at creation, so only for a
    /// new session).
    #[arg(long, value_name = "TEXT")]
    pub append_system_prompt: Option<String>,
    /// What goes to stdout: `text` streams the answer (the default), `final` prints only the
    /// final assistant message once the run ends.
    #[arg(long, value_enum, value_name = "WHAT", default_value = "text")]
    pub output: RunOutput,
    /// The prompt (`-` reads it from stdin). When stdin is piped and a prompt is given, what
    /// is piped is attached to the prompt as a fenced block (capped).
    pub prompt: String,
}

/// Arguments of `agentctl init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The workspace (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Model of the run: a model of the default provider, or `provider:model`.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// How to answer the run's approvals instead of prompting, as for `run` (no policy answers
    /// the write of AGENTS.md: `wait` leaves it to `agentctl approve`).
    #[arg(long, value_enum, value_name = "POLICY")]
    pub approve: Option<ApprovePolicy>,
    /// What else the file should say (added to the prompt as yours).
    pub notes: Vec<String>,
}

/// What `run` prints on stdout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum RunOutput {
    /// The answer as it streams (and tool activity on stderr).
    #[default]
    Text,
    /// Only the final assistant message, once the run ends.
    Final,
}

/// `--mode`: the wire names of the permission modes.
fn mode_parser() -> impl TypedValueParser<Value = PermissionMode> {
    PossibleValuesParser::new(PermissionMode::ALL.map(PermissionMode::as_str)).map(|name| {
        PermissionMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == name)
            .unwrap_or_default()
    })
}

#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// Sessions newest first: id, status, age, tokens (in/out), model, title or first prompt.
    #[command(visible_alias = "ls")]
    List {
        /// Only sessions of this workspace (`--cwd .` for the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// At most N sessions.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Forks indented under the session they were forked from.
        #[arg(long)]
        tree: bool,
    },
    /// Fork a session: a new one with its history up to a seq, its settings and system prompt
    /// (the first requests reuse the provider's prompt cache); prints the new session's id.
    ///
    /// Exit 1 when the seq is inside a run (the message says which seqs can be used).
    Fork {
        /// The session id (`ses_…`).
        session: String,
        /// The last seq of the session's log the fork keeps (default: its last one; see
        /// `agentctl attach --json` or `sessions list --json` for seqs).
        #[arg(long, value_name = "SEQ")]
        at: Option<u64>,
        /// The fork's title (default: the session's).
        #[arg(long, value_name = "TITLE")]
        title: Option<String>,
    },
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
    /// Say whether the daemon is running, without starting it (exit 3 when it is not).
    Status,
    /// Stop the daemon (its runs are interrupted and recorded), then start it again: it reads
    /// this shell's environment and the config file anew. A daemon systemd runs is restarted
    /// by systemd (`systemctl --user restart agentd.service`).
    Restart,
    /// Restart the daemon into the agentd binary now on disk, saying which version starts.
    Upgrade,
    /// Read config.toml again now (the daemon also watches it): says whether it reloaded, was
    /// unchanged, or is invalid (then the previous configuration stays in use).
    Reload,
}

#[cfg(test)]
mod tests;
