//! Handlers of `commands/list` and `session/command`: the slash commands of a workspace, and
//! running one in a session. A name resolves, in this order, to a built-in (answered here with
//! no model call, `builtin`), a command file (`agentd_work::commands`: its template expanded
//! into the prompt of a normal run), a skill (a run whose prompt carries the skill's
//! instructions and the arguments), an MCP prompt (`mcp__server__prompt`, `mcp_prompts`) or an
//! extension's command (`extension`). Nothing here is written to the history but the prompt of
//! the run a command starts.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use jsonrpsee::types::ErrorObjectOwned;
use protocol::Method;
use protocol::commands::*;
use protocol::error::{self as codes, echo};
use protocol::methods;

use super::{RpcResult, internal};
use crate::server::ConnectionContext;
use crate::session::actor::Session;
use crate::state::DaemonState;
use agentd_work::commands::CommandFiles;

mod builtin;
mod extension;
mod hooks;
mod init;
mod listings;
mod mcp_prompts;
mod permissions;
mod run_prompt;
mod session_log;

use builtin::Builtin;

/// How many near names an unknown command's error suggests.
const SUGGESTED_NAMES: usize = 3;

/// Everything a workspace (and a session) offers as commands, found on the blocking pool.
struct Catalogue {
    files: CommandFiles,
    skills: agentd_knowledge::skills::Catalogue,
    mcp: mcp_prompts::McpPrompts,
    extension: Vec<extension::ExtensionCommand>,
}

/// What a name resolved to.
enum Found<'a> {
    Builtin(Builtin),
    File(&'a agentd_work::commands::CommandFile),
    Skill(&'a agentd_knowledge::skills::Skill),
    Mcp(&'a mcp_prompts::McpPrompt),
    Extension(&'a extension::ExtensionCommand),
}

pub async fn list(
    state: Arc<DaemonState>,
    params: CommandsListParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<CommandsListResult> {
    let cwd = super::workspace_dir(&params.cwd).await?;
    let session = match &params.session_id {
        Some(session_id) => Some(state.sessions.get(session_id).await?),
        None => None,
    };
    let catalogue = catalogue(&state, &cwd, session.as_deref()).await?;
    let mut problems: Vec<CommandProblemInfo> = catalogue
        .files
        .problems
        .iter()
        .map(|problem| CommandProblemInfo {
            path: problem.path.display().to_string(),
            reason: problem.reason.clone(),
        })
        .collect();
    problems.extend(catalogue.mcp.problems.iter().cloned());
    Ok(CommandsListResult {
        commands: catalogue.infos(),
        problems,
    })
}

pub async fn run(
    state: Arc<DaemonState>,
    params: SessionCommandParams,
    connection: Arc<ConnectionContext>,
) -> RpcResult<SessionCommandResult> {
    super::refuse_if_stopping(&state)?;
    super::session::check_text_length("command", &params.args)?;
    let session = state.sessions.get(&params.session_id).await?;
    let name = params.name.trim().trim_start_matches('/');
    // Built-ins first: they need no discovery, and no file can take their names.
    if let Some(builtin) = Builtin::named(name) {
        return builtin
            .run(
                &state,
                &session,
                params.args.trim(),
                &connection,
                params.client_request_id,
            )
            .await;
    }
    let cwd = PathBuf::from(&session.header.cwd);
    let catalogue = catalogue(&state, &cwd, Some(&session)).await?;
    let found = catalogue
        .find(name)
        .ok_or_else(|| unknown(name, &catalogue))?;
    let prompt = match found {
        Found::Builtin(builtin) => {
            return builtin
                .run(
                    &state,
                    &session,
                    params.args.trim(),
                    &connection,
                    params.client_request_id,
                )
                .await;
        }
        Found::File(file) => run_prompt::Prompt {
            text: file.prompt(&params.args),
            model: file.model.clone(),
            narrowing: file.tool_narrowing(),
        },
        Found::Skill(skill) => run_prompt::Prompt {
            text: skill_prompt(skill, &params.args, &cwd).await?,
            model: None,
            narrowing: None,
        },
        Found::Mcp(prompt) => run_prompt::Prompt {
            text: catalogue.mcp.get(prompt, &params.args).await?,
            model: None,
            narrowing: None,
        },
        Found::Extension(command) => {
            return extension::run(
                &state,
                command,
                &session,
                &params.args,
                params.client_request_id,
            )
            .await;
        }
    };
    run_prompt::start(&state, &session, prompt, params.client_request_id).await
}

/// The commands of `cwd` (with `session`'s MCP prompts).
async fn catalogue(
    state: &DaemonState,
    cwd: &Path,
    session: Option<&Session>,
) -> RpcResult<Catalogue> {
    let commands_dir = state.paths.commands_dir.clone();
    let skills_dir = state.paths.skills_dir.clone();
    let discover_cwd = cwd.to_path_buf();
    let found = tokio::task::spawn_blocking(move || {
        let files =
            agentd_work::commands::discover(&discover_cwd, Some(&commands_dir), &Builtin::names());
        let skills = agentd_knowledge::skills::discover(
            &discover_cwd,
            Some(&skills_dir),
            &agentd_knowledge::skills::SkillLimits::default(),
        );
        (files, skills)
    });
    let mcp = async {
        match session {
            Some(session) => mcp_prompts::McpPrompts::of(state, session).await,
            None => Ok(mcp_prompts::McpPrompts::default()),
        }
    };
    let (found, mcp) = tokio::join!(found, mcp);
    let (files, skills) = found.map_err(|err| internal(err.to_string()))?;
    Ok(Catalogue {
        files,
        skills,
        mcp: mcp?,
        extension: extension::commands(state, cwd),
    })
}

impl Catalogue {
    /// What `name` resolves to: a built-in, a command file, a skill, an MCP prompt, an
    /// extension's command.
    fn find(&self, name: &str) -> Option<Found<'_>> {
        if let Some(builtin) = Builtin::named(name) {
            return Some(Found::Builtin(builtin));
        }
        if let Some(file) = self.files.get(name) {
            return Some(Found::File(file));
        }
        if let Some(skill) = self.skills.skills.iter().find(|skill| skill.name == name) {
            return Some(Found::Skill(skill));
        }
        if let Some(prompt) = self.mcp.prompts.iter().find(|prompt| prompt.name == name) {
            return Some(Found::Mcp(prompt));
        }
        self.extension
            .iter()
            .find(|command| command.name() == name)
            .map(Found::Extension)
    }

    /// Every command as listed: built-ins, then the others by name, each name once (the
    /// first of built-in, file, skill, MCP prompt, extension wins).
    fn infos(&self) -> Vec<CommandInfo> {
        let mut others: Vec<CommandInfo> = Vec::new();
        let mut push = |info: CommandInfo| {
            if Builtin::named(&info.name).is_none() && !others.iter().any(|o| o.name == info.name) {
                others.push(info);
            }
        };
        for file in &self.files.commands {
            push(CommandInfo {
                name: file.name.clone(),
                description: file.description.clone(),
                argument_hint: file.argument_hint.clone(),
                source: match file.source {
                    agentd_work::commands::CommandFileSource::Project(_) => CommandSource::Project,
                    agentd_work::commands::CommandFileSource::User(_) => CommandSource::User,
                },
                path: Some(file.path().display().to_string()),
            });
        }
        for skill in &self.skills.skills {
            push(CommandInfo {
                name: skill.name.clone(),
                description: skill.description.clone(),
                argument_hint: Some("[request]".to_owned()),
                source: CommandSource::Skill,
                path: Some(skill.path.display().to_string()),
            });
        }
        for prompt in &self.mcp.prompts {
            push(prompt.info());
        }
        for command in &self.extension {
            push(command.info());
        }
        others.sort_by(|a, b| a.name.cmp(&b.name));
        let mut infos: Vec<CommandInfo> = Builtin::ALL.iter().map(|b| b.info()).collect();
        infos.extend(others);
        infos
    }
}

/// The error for an unknown command: -32602, the nearest names in `error.data.suggest`, and
/// `commands/list` to see them all.
fn unknown(name: &str, catalogue: &Catalogue) -> ErrorObjectOwned {
    let infos = catalogue.infos();
    let nearest = agentd_work::commands::closest(
        name,
        infos.iter().map(|info| info.name.as_str()),
        SUGGESTED_NAMES,
    );
    let hint = match nearest.as_slice() {
        [] => "/help lists the commands".to_owned(),
        names => format!(
            "did you mean {}? /help lists the commands",
            names
                .iter()
                .map(|name| format!("/{name}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let data = protocol::error::ErrorData::suggest_names(methods::CommandsList::NAME, nearest);
    ErrorObjectOwned::owned(
        codes::INVALID_PARAMS,
        format!("unknown command /{}; {hint}", echo(name)),
        Some(data),
    )
}

/// The prompt of a skill run as `/name args`: the skill's instructions as `load_skill` gives
/// them to the model, then what the person asked.
async fn skill_prompt(
    skill: &agentd_knowledge::skills::Skill,
    args: &str,
    workspace: &Path,
) -> RpcResult<String> {
    let catalogue = agentd_knowledge::skills::Catalogue {
        skills: vec![skill.clone()],
        warnings: Vec::new(),
    };
    let name = skill.name.clone();
    let workspace = workspace.to_path_buf();
    let loaded = tokio::task::spawn_blocking(move || {
        agentd_knowledge::skills::load(
            &catalogue,
            &name,
            &agentd_knowledge::skills::SkillLimits::default(),
        )
        .map(|loaded| agentd_knowledge::skills::render(&loaded, &workspace))
    })
    .await
    .map_err(|err| internal(err.to_string()))?
    .map_err(|reason| super::rpc_error(codes::INVALID_PARAMS, reason))?;
    let request = match args.trim() {
        "" => "Follow the skill's instructions.".to_owned(),
        args => args.to_owned(),
    };
    Ok(format!(
        "The user invoked the skill `{}`. Its instructions:\n\n{loaded}\n\nThe user's request: {request}",
        skill.name
    ))
}
