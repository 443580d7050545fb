//! The built-in commands: answered by the daemon from its own state, with no model call and
//! nothing written to the history, but `/init`, a run with a fixed prompt (`init`). Those that
//! change something go through the paths their methods use (`/compact` the actor's compaction,
//! `/model` and `/mode` `session/update`, `/clear` `session/create`).

use std::sync::Arc;

use protocol::approval::PermissionMode;
use protocol::commands::{CommandInfo, CommandSource, CommandsListParams, SessionCommandResult};
use protocol::event::Usage;
use protocol::session::{SessionCreateParams, SessionInfo, SessionUpdateParams};

use super::super::{RpcResult, rpc_error};
use super::session_log;
use crate::server::ConnectionContext;
use crate::session::actor::Session;
use crate::state::DaemonState;

/// A built-in command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Builtin {
    Help,
    Status,
    Compact,
    Memory,
    Skills,
    Agents,
    Tasks,
    Mcp,
    Todos,
    Cost,
    Model,
    Mode,
    Clear,
    Hooks,
    Permissions,
    Init,
}

impl Builtin {
    /// Every built-in, in the order `/help` lists them.
    pub(super) const ALL: [Builtin; 16] = [
        Builtin::Help,
        Builtin::Status,
        Builtin::Compact,
        Builtin::Memory,
        Builtin::Skills,
        Builtin::Agents,
        Builtin::Tasks,
        Builtin::Mcp,
        Builtin::Todos,
        Builtin::Cost,
        Builtin::Model,
        Builtin::Mode,
        Builtin::Clear,
        Builtin::Hooks,
        Builtin::Permissions,
        Builtin::Init,
    ];

    /// Its name, its argument hint and what it does.
    fn spec(self) -> (&'static str, Option<&'static str>, &'static str) {
        match self {
            Builtin::Help => ("help", None, "list the commands"),
            Builtin::Status => ("status", None, "the session: model, mode, state, tokens"),
            Builtin::Compact => (
                "compact",
                Some("[focus]"),
                "summarise the older history now, keeping what FOCUS names",
            ),
            Builtin::Memory => (
                "memory",
                None,
                "the curated memory stores and their entries",
            ),
            Builtin::Skills => ("skills", None, "the skills this session is offered"),
            Builtin::Agents => ("agents", None, "the subagents this session can delegate to"),
            Builtin::Tasks => ("tasks", None, "this session's running background tasks"),
            Builtin::Mcp => ("mcp", None, "the MCP servers of this directory"),
            Builtin::Todos => ("todos", None, "the model's todo list"),
            Builtin::Cost => ("cost", None, "tokens and cost per run and for the session"),
            Builtin::Model => (
                "model",
                Some("[name]"),
                "show the model, or change it from the next run",
            ),
            Builtin::Mode => (
                "mode",
                Some("[mode]"),
                "show the permission mode, or change it from the next run",
            ),
            Builtin::Clear => ("clear", None, "a new session with the same settings"),
            Builtin::Hooks => (
                "hooks",
                None,
                "the hooks found, where, and whether they run",
            ),
            Builtin::Permissions => (
                "permissions",
                None,
                "the permission rules in force and where each comes from",
            ),
            Builtin::Init => (
                "init",
                Some("[notes]"),
                "a model run that writes AGENTS.md for this workspace (or improves the one there)",
            ),
        }
    }

    pub(super) fn name(self) -> &'static str {
        self.spec().0
    }

    pub(super) fn named(name: &str) -> Option<Builtin> {
        Builtin::ALL
            .into_iter()
            .find(|builtin| builtin.name() == name)
    }

    /// Every built-in's name (no file may take one).
    pub(super) fn names() -> Vec<&'static str> {
        Builtin::ALL.into_iter().map(Builtin::name).collect()
    }

    pub(super) fn info(self) -> CommandInfo {
        let (name, hint, description) = self.spec();
        CommandInfo {
            name: name.to_owned(),
            description: description.to_owned(),
            argument_hint: hint.map(str::to_owned),
            source: CommandSource::Builtin,
            path: None,
        }
    }

    /// Run it in `session` with `args` (trimmed).
    pub(super) async fn run(
        self,
        state: &Arc<DaemonState>,
        session: &Arc<Session>,
        args: &str,
        connection: &Arc<ConnectionContext>,
        client_request_id: Option<String>,
    ) -> RpcResult<SessionCommandResult> {
        let takes_args = matches!(
            self,
            Builtin::Compact | Builtin::Model | Builtin::Mode | Builtin::Init
        );
        if !takes_args && !args.is_empty() {
            return Err(rpc_error(
                protocol::error::INVALID_PARAMS,
                format!("/{} takes no arguments", self.name()),
            ));
        }
        let cwd = session.header.cwd.clone();
        let text = match self {
            Builtin::Help => help(state, session, connection).await?,
            Builtin::Status => status(&session.info()),
            Builtin::Compact => compact(session, args).await?,
            Builtin::Memory => super::listings::memory(state, &cwd, connection).await?,
            Builtin::Skills => super::listings::skills(state, &cwd, connection).await?,
            Builtin::Agents => super::listings::agents(state, &cwd, connection).await?,
            Builtin::Tasks => super::listings::tasks(state, session.id()),
            Builtin::Mcp => super::listings::mcp(state, &cwd, connection).await?,
            Builtin::Todos => todos(&session_log::summary(session).await?),
            Builtin::Cost => cost(&session.info(), &session_log::summary(session).await?),
            Builtin::Model => model(state, session, args).await?,
            Builtin::Mode => mode(state, session, args).await?,
            Builtin::Clear => return clear(state, session).await,
            Builtin::Hooks => super::hooks::describe(state, &cwd).await,
            Builtin::Permissions => super::permissions::describe(state, session).await?,
            // The one built-in that is a model run.
            Builtin::Init => {
                return super::init::start(state, session, args, client_request_id).await;
            }
        };
        Ok(SessionCommandResult {
            output: Some(text),
            ..SessionCommandResult::default()
        })
    }
}

/// `/help`: every command of the session, one a line.
async fn help(
    state: &Arc<DaemonState>,
    session: &Arc<Session>,
    connection: &Arc<ConnectionContext>,
) -> RpcResult<String> {
    let params = CommandsListParams {
        cwd: session.header.cwd.clone(),
        session_id: Some(session.id().to_owned()),
    };
    let listed = super::list(Arc::clone(state), params, Arc::clone(connection)).await?;
    let shown = |info: &CommandInfo| match &info.argument_hint {
        Some(hint) => format!("/{} {hint}", info.name),
        None => format!("/{}", info.name),
    };
    let width = listed
        .commands
        .iter()
        .map(|info| shown(info).chars().count())
        .max()
        .unwrap_or(0);
    let mut lines: Vec<String> = listed
        .commands
        .iter()
        .map(|info| {
            let source = match info.source {
                CommandSource::Builtin => "",
                CommandSource::User => " (user)",
                CommandSource::Project => " (project)",
                CommandSource::Skill => " (skill)",
                CommandSource::Mcp => " (mcp)",
                CommandSource::Extension => " (extension)",
            };
            format!("{:width$}  {}{source}", shown(info), info.description)
        })
        .collect();
    if !listed.problems.is_empty() {
        lines.push(format!(
            "{} command file(s) not used:",
            listed.problems.len()
        ));
        lines.extend(
            listed
                .problems
                .iter()
                .map(|problem| format!("  {}: {}", problem.path, problem.reason)),
        );
    }
    Ok(lines.join("\n"))
}

/// `/status`.
fn status(info: &SessionInfo) -> String {
    let state = match &info.run_id {
        Some(run_id) => format!("running {run_id}"),
        None => "idle".to_owned(),
    };
    format!(
        "session {}\nmodel {}:{} · mode {} · {state}\ncwd {}\n{}",
        info.session_id,
        info.provider,
        info.model,
        info.permission_mode.as_str(),
        info.cwd,
        tokens(&info.usage, info.cost_usd)
    )
}

/// `/compact [focus]`.
async fn compact(session: &Session, focus: &str) -> RpcResult<String> {
    let focus = Some(focus.to_owned()).filter(|focus| !focus.is_empty());
    let result = session.compact_focused(focus).await?;
    Ok(
        match (result.compacted, result.tokens_before, result.tokens_after) {
            (true, Some(before), Some(after)) => {
                format!("compacted: about {before} tokens of context became {after}")
            }
            (true, _, _) => "compacted".to_owned(),
            (false, _, _) => {
                "nothing to compact: the history is no longer than the last two turns".to_owned()
            }
        },
    )
}

/// `/todos`.
fn todos(summary: &session_log::LogSummary) -> String {
    let Some(items) = &summary.todos else {
        return "no todo list: the model has not written one in this session".to_owned();
    };
    if items.is_empty() {
        return "the todo list is empty".to_owned();
    }
    items
        .iter()
        .map(|item| {
            let mark = match item.status {
                protocol::todo::TodoStatus::Completed => "[x]",
                protocol::todo::TodoStatus::InProgress => "[>]",
                protocol::todo::TodoStatus::Pending => "[ ]",
            };
            format!("{mark} {}", item.content)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `/cost`: each run (the latest ones), then the session.
fn cost(info: &SessionInfo, summary: &session_log::LogSummary) -> String {
    let mut lines = Vec::new();
    let older = summary.runs_total - summary.runs.len();
    if older > 0 {
        lines.push(format!("({older} older runs not listed)"));
    }
    for run in &summary.runs {
        let status = serde_json::to_value(run.status)
            .ok()
            .and_then(|value| value.as_str().map(str::to_owned))
            .unwrap_or_default();
        lines.push(format!(
            "{} {status}: {}",
            run.run_id,
            tokens(&run.usage, run.cost_usd)
        ));
    }
    if summary.runs_total == 0 {
        lines.push("no run has finished in this session yet".to_owned());
    }
    lines.push(format!("session: {}", tokens(&info.usage, info.cost_usd)));
    lines.join("\n")
}

/// Tokens, and their cost when priced.
fn tokens(usage: &Usage, cost_usd: Option<f64>) -> String {
    let cost = cost_usd
        .filter(|cost| cost.is_finite() && *cost >= 0.0)
        .map(|cost| format!(", ${cost:.4}"))
        .unwrap_or_else(|| ", cost unknown (no prices configured)".to_owned());
    format!(
        "{} tokens in ({} cached), {} out{cost}",
        usage.input_tokens, usage.cached_input_tokens, usage.output_tokens
    )
}

/// `/model [name]`.
async fn model(state: &DaemonState, session: &Session, name: &str) -> RpcResult<String> {
    let info = session.info();
    if name.is_empty() {
        let providers: Vec<String> = state
            .sessions
            .providers()
            .into_iter()
            .map(|provider| format!("{} ({})", provider.name, provider.model))
            .collect();
        return Ok(format!(
            "model {}:{}\nconfigured providers: {}\n/model NAME changes it (a model of the provider, or provider:model)",
            info.provider,
            info.model,
            providers.join(", ")
        ));
    }
    let updated = state
        .sessions
        .update(SessionUpdateParams {
            session_id: session.id().to_owned(),
            model: Some(name.to_owned()),
            ..SessionUpdateParams::default()
        })
        .await?;
    Ok(format!(
        "model {}:{} from the next run",
        updated.provider, updated.model
    ))
}

/// `/mode [mode]`.
async fn mode(state: &DaemonState, session: &Session, name: &str) -> RpcResult<String> {
    let names = PermissionMode::ALL.map(PermissionMode::as_str).join(", ");
    if name.is_empty() {
        return Ok(format!(
            "mode {}\n/mode MODE changes it ({names})",
            session.info().permission_mode.as_str()
        ));
    }
    let wanted = name.to_ascii_lowercase().replace(['-', '_'], "");
    let Some(mode) = PermissionMode::ALL
        .into_iter()
        .find(|mode| mode.as_str().to_ascii_lowercase() == wanted)
    else {
        return Err(rpc_error(
            protocol::error::INVALID_PARAMS,
            format!(
                "unknown mode {}; use one of {names}",
                protocol::error::echo(name)
            ),
        ));
    };
    let updated = state
        .sessions
        .update(SessionUpdateParams {
            session_id: session.id().to_owned(),
            permission_mode: Some(mode),
            ..SessionUpdateParams::default()
        })
        .await?;
    Ok(format!(
        "mode {} from the next run",
        updated.permission_mode.as_str()
    ))
}

/// `/clear`: a new session in the same directory with this one's model, mode, rules, MCP
/// servers and agent type; its system prompt is frozen anew (a client's
/// `appendSystemPrompt` is not carried over). The old session stays.
async fn clear(state: &DaemonState, session: &Session) -> RpcResult<SessionCommandResult> {
    super::super::refuse_if_stopping(state)?;
    let settings = session.settings();
    let header = &session.header;
    let params = SessionCreateParams {
        cwd: header.cwd.clone(),
        model: Some(format!("{}:{}", settings.provider, settings.model)),
        title: None,
        permission_mode: Some(settings.permission_mode),
        permission_rules: Some(header.permission_rules.clone()),
        mcp_servers: Some(header.mcp_servers.clone()).filter(|servers| !servers.is_null()),
        agent_type: header.agent_type.clone(),
        append_system_prompt: None,
    };
    let created = state.sessions.create(params).await?;
    // The old session ends for its hooks as Claude Code's `/clear` ends it (the file stays).
    state.sessions.session_ended(session, "clear").await;
    Ok(SessionCommandResult {
        output: Some(format!(
            "new session {} ({}:{}, {}); {} stays",
            created.id(),
            settings.provider,
            settings.model,
            settings.permission_mode.as_str(),
            session.id()
        )),
        session_id: Some(created.id().to_owned()),
        ..SessionCommandResult::default()
    })
}
