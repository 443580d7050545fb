//! A command that becomes a run: its expanded prompt sent as `session/prompt` sends one, with
//! the run's model and tool narrowing, acknowledged with the run id.

use protocol::commands::SessionCommandResult;

use super::super::RpcResult;
use crate::session::RunOptions;
use crate::session::actor::Session;
use crate::state::DaemonState;

/// The prompt of a command's run and how the run differs from a plain prompt's.
pub(super) struct Prompt {
    pub(super) text: String,
    /// The command file's `model` (None: the session's).
    pub(super) model: Option<String>,
    /// The command file's `allowed-tools`.
    pub(super) narrowing: Option<agentd_work::commands::ToolNarrowing>,
}

/// Start the run of `prompt` in `session`; a model that does not resolve is a warning (the
/// session's model runs), never a refusal.
pub(super) async fn start(
    state: &DaemonState,
    session: &Session,
    prompt: Prompt,
    client_request_id: Option<String>,
) -> RpcResult<SessionCommandResult> {
    super::super::session::check_text_length("the command's prompt", &prompt.text)?;
    let mut warnings = Vec::new();
    let model = match prompt.model {
        Some(model) => match state.sessions.model_problem(&model) {
            None => Some(model),
            Some(problem) => {
                warnings.push(format!(
                    "the command's model {model} is not used ({problem}); the session's model runs"
                ));
                None
            }
        },
        None => None,
    };
    let started = session
        .prompt(
            prompt.text,
            client_request_id,
            false,
            RunOptions {
                model,
                narrowing: prompt.narrowing,
                ..RunOptions::default()
            },
        )
        .await?;
    Ok(SessionCommandResult {
        run_id: Some(started.run_id),
        warnings,
        ..SessionCommandResult::default()
    })
}
