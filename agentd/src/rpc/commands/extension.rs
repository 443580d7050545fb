//! Extension commands: an extension (a client of the socket that called `extension/register`
//! with `commands`) offers commands under their own names, source `extension`, for the
//! sessions in its scope, and `session/command` hands them to it (`extension/runCommand`,
//! within the extensions' deadline). What it answers is shown (`output`) and, when it gives a
//! `prompt`, sent as the session's next prompt, a normal run.

use std::path::Path;

use protocol::commands::{CommandInfo, CommandSource, SessionCommandResult};

use super::super::{RpcResult, rpc_error};
use super::run_prompt;
use crate::session::actor::Session;
use crate::state::DaemonState;

/// A command a live extension registered, in scope of the cwd it was listed for.
pub(super) struct ExtensionCommand(crate::extension::ExtensionCommand);

impl ExtensionCommand {
    pub(super) fn name(&self) -> &str {
        &self.0.name
    }

    pub(super) fn info(&self) -> CommandInfo {
        CommandInfo {
            name: self.0.name.clone(),
            description: self.0.description.clone(),
            argument_hint: self.0.argument_hint.clone(),
            source: CommandSource::Extension,
            path: None,
        }
    }
}

/// The commands live extensions registered for sessions in `cwd`.
pub(super) fn commands(state: &DaemonState, cwd: &Path) -> Vec<ExtensionCommand> {
    state
        .extensions
        .commands_for(cwd)
        .into_iter()
        .map(ExtensionCommand)
        .collect()
}

/// Runs `command` through its extension for `session`: its `output` is shown, its `prompt`
/// (if any) starts a run as the session's next prompt. An extension that is gone, late or
/// failing is a clear error; nothing was run.
pub(super) async fn run(
    state: &DaemonState,
    command: &ExtensionCommand,
    session: &Session,
    args: &str,
    client_request_id: Option<String>,
) -> RpcResult<SessionCommandResult> {
    let cwd = Path::new(&session.header.cwd);
    let answer = state
        .extensions
        .run_command(cwd, Some(session.header.id.as_str()), &command.0.name, args)
        .await
        .map_err(|message| rpc_error(protocol::error::INTERNAL_ERROR, message))?;
    let Some(prompt) = answer.prompt.filter(|prompt| !prompt.trim().is_empty()) else {
        return Ok(SessionCommandResult {
            output: Some(answer.output.unwrap_or_default()),
            ..SessionCommandResult::default()
        });
    };
    let prompt = run_prompt::Prompt {
        text: prompt,
        model: None,
        narrowing: None,
    };
    let mut started = run_prompt::start(state, session, prompt, client_request_id).await?;
    started.output = answer.output;
    Ok(started)
}
