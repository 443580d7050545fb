//! agentctl: the thin command-line client of agentd. Everything but `main` lives here so tests
//! and other tools can reuse the client.

pub mod acp;
pub mod approval_desk;
pub mod approval_view;
pub mod approve_policy;
pub mod autostart;
pub mod chat;
pub mod cli;
pub mod client;
pub mod commands;
pub mod env_check;
pub mod follow;
pub mod ids;
pub mod mentions;
pub mod output;
mod picker;
pub mod platform;
pub mod render;
pub mod safe_text;
pub mod table;
pub mod terminal;
pub mod transport;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use cli::{
    AgentsAction, ApprovalsAction, Cli, Command, DaemonAction, SessionsAction, SkillsAction,
};
use client::Connection;
use output::{CommandError, EXIT_OK};
use protocol::daemon::ClientCapabilities;

/// What every command needs: where the daemon is and how to talk to the user.
pub struct Context {
    pub socket: PathBuf,
    pub no_start: bool,
    pub json: bool,
    /// A person is at the terminal: stdin and stderr are terminals, so `run` may prompt for
    /// approvals (tests set it false).
    pub interactive: bool,
    /// `--color`: whether stderr gets colours (`auto` also reads `NO_COLOR`).
    pub color: cli::ColorChoice,
    /// `--thinking`: how the model's reasoning is shown.
    pub thinking: render::Thinking,
    /// How long `run` and `attach` wait for the daemon to come back when the connection to it
    /// is lost mid-run (`AGENTCTL_RECONNECT_SECS`, default 60 s).
    pub reconnect_wait: std::time::Duration,
}

impl Context {
    /// Connect to the daemon, starting it unless `--no-start` was given. The connection does
    /// not answer approvals: its subscriptions (`attach`) never make a run wait for an answer.
    pub async fn connect(&self) -> Result<Connection, CommandError> {
        self.connect_declaring(ClientCapabilities::default()).await
    }

    /// As `connect`, declaring `capabilities.approvals`: for `run`, which answers the approvals
    /// of the run it follows (prompt or `--approve` policy), so the daemon waits for it.
    pub async fn connect_answering_approvals(&self) -> Result<Connection, CommandError> {
        self.connect_declaring(ClientCapabilities {
            approvals: true,
            ..ClientCapabilities::default()
        })
        .await
    }

    async fn connect_declaring(
        &self,
        capabilities: ClientCapabilities,
    ) -> Result<Connection, CommandError> {
        let connection =
            autostart::connect_or_start(&self.socket, !self.no_start, "agentctl", capabilities)
                .await?;
        Ok(connection)
    }
}

/// The socket path the client uses, resolved like the daemon resolves it.
pub fn socket_path(explicit: Option<&std::path::Path>) -> PathBuf {
    protocol::socket::resolve_endpoint(
        explicit,
        |name| std::env::var_os(name),
        crate::platform::current_uid(),
        &std::env::temp_dir(),
    )
}

/// `agentctl` alone: chat on a terminal, else say how to use it.
async fn chat_without_command(ctx: &Context) -> ExitCode {
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        return output::report(
            CommandError::usage(
                "no command given; `agentctl help` lists them (alone on a terminal, agentctl \
                 opens a chat)",
            ),
            ctx.json,
        );
    }
    match commands_chat(ctx, cli::ChatArgs::default()).await {
        Ok(code) => ExitCode::from(code),
        Err(err) => output::report(err, ctx.json),
    }
}

async fn commands_chat(ctx: &Context, args: cli::ChatArgs) -> Result<u8, CommandError> {
    let start = chat::ChatStart {
        session: args.session,
        continue_latest: args.continue_latest,
        resume: args.resume,
        model: args.model,
        mode: args.mode,
    };
    chat::chat(ctx, start).await
}

/// Run a parsed command line to completion.
pub async fn run(cli: Cli) -> ExitCode {
    let ctx = Context {
        socket: socket_path(cli.socket.as_deref()),
        no_start: cli.no_start,
        json: cli.json,
        color: cli.color,
        thinking: cli.thinking,
        interactive: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
        reconnect_wait: follow::reconnect::wait_from(
            std::env::var_os(follow::reconnect::WAIT_VARIABLE).as_deref(),
        ),
    };
    // Streaming commands exit with their run's outcome; the others succeed or fail.
    let done = |result: Result<(), CommandError>| result.map(|()| EXIT_OK);
    let Some(command) = cli.command else {
        return chat_without_command(&ctx).await;
    };
    let result = match command {
        Command::Chat(args) => commands_chat(&ctx, args).await,
        Command::Status => done(commands::daemon::status(&ctx).await),
        Command::Models => done(commands::daemon::models(&ctx).await),
        Command::Daemon { action } => done(match action {
            DaemonAction::Start => commands::daemon::start(&ctx).await,
            DaemonAction::Stop => commands::daemon::stop(&ctx).await,
            DaemonAction::Status => commands::daemon::daemon_status(&ctx).await,
            DaemonAction::Restart => commands::restart::restart(&ctx).await,
            DaemonAction::Upgrade => commands::restart::upgrade(&ctx).await,
            DaemonAction::Reload => commands::daemon::reload(&ctx).await,
        }),
        Command::Run(args) => commands::run::run(&ctx, args, &mut follow::write_to_terminal).await,
        Command::Init(args) => commands::init::init(&ctx, args).await,
        Command::Attach {
            session,
            follow: keep_following,
        } => {
            commands::attach::attach(
                &ctx,
                session,
                keep_following,
                &mut follow::write_to_terminal,
            )
            .await
        }
        Command::Sessions { action } => done(match action {
            SessionsAction::List { cwd, limit, tree } => {
                commands::sessions::list(&ctx, cwd, limit, tree).await
            }
            SessionsAction::Fork { session, at, title } => {
                commands::sessions::fork(&ctx, session, at, title).await
            }
            SessionsAction::Show { session } => commands::sessions::show(&ctx, session).await,
            SessionsAction::Rm { session } => commands::sessions::remove(&ctx, session).await,
        }),
        Command::Steer { session, text } => {
            done(commands::control::steer(&ctx, session, &text).await)
        }
        Command::FollowUp { session, text } => {
            done(commands::control::follow_up(&ctx, session, &text).await)
        }
        Command::Cancel { session } => done(commands::control::cancel(&ctx, session).await),
        Command::Compact { session } => done(commands::control::compact(&ctx, session).await),
        Command::Diff { session, run } => done(commands::rewind::diff(&ctx, session, run).await),
        Command::Rewind {
            session,
            run,
            seq,
            conversation,
            no_files,
            yes,
        } => done(
            commands::rewind::rewind(
                &ctx,
                commands::rewind::RewindArgs {
                    session,
                    run,
                    seq,
                    conversation,
                    no_files,
                    yes,
                },
            )
            .await,
        ),
        Command::Approvals {
            action: ApprovalsAction::List { session },
        } => done(commands::approvals::list(&ctx, session).await),
        Command::Approve {
            approval,
            session,
            always,
            limit,
        } => {
            let answer = commands::approvals::Answer::approve(session, always, limit);
            done(commands::approvals::respond(&ctx, approval, answer).await)
        }
        Command::Deny {
            approval,
            cancel,
            always,
            reason,
        } => {
            let answer = commands::approvals::Answer::deny(cancel, always, reason);
            done(commands::approvals::respond(&ctx, approval, answer).await)
        }
        Command::Trust { dir, show } => done(commands::trust::trust(&ctx, dir, show).await),
        Command::Untrust { dir } => done(commands::trust::untrust(&ctx, dir).await),
        Command::Memory {
            action: cli::MemoryAction::Show { dir },
        } => done(commands::memory::show(&ctx, dir).await),
        Command::Skills {
            action: SkillsAction::List { cwd },
        } => done(commands::skills::list(&ctx, cwd).await),
        Command::Agents {
            action: AgentsAction::List { cwd },
        } => done(commands::agents::list(&ctx, cwd).await),
        Command::Mcp { action } => done(match action {
            cli::McpAction::List { cwd } => commands::mcp::list(&ctx, cwd).await,
            cli::McpAction::Restart { name, cwd } => commands::mcp::restart(&ctx, name, cwd).await,
            cli::McpAction::Logs { name, follow } => commands::mcp::logs(&ctx, name, follow).await,
            cli::McpAction::Login {
                name,
                cwd,
                no_browser,
            } => commands::mcp_login::login(&ctx, name, cwd, no_browser).await,
            cli::McpAction::Logout { name, cwd } => {
                commands::mcp_login::logout(&ctx, name, cwd).await
            }
        }),
        Command::Task { action } => done(commands::task::run(&ctx, action).await),
        Command::Acp => done(acp::serve(&ctx).await),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) => output::report(err, ctx.json),
    }
}
