//! Slash commands over ACP: the session's `commands/list` as `available_commands_update`
//! (sent after `session/new`, `session/load` and `session/resume`, and again at a prompt turn
//! when the list changed), and a prompt that is a slash command run with `session/command`.

use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionNotification,
    SessionUpdate, UnstructuredCommandInput,
};
use protocol::commands::{CommandsListParams, CommandsListResult};
use protocol::methods::CommandsList;

use crate::client::Connection;

/// Commands sent to the editor at most (a client's completion list, not a catalogue).
pub(super) const MAX_COMMANDS_SENT: usize = 300;

/// The commands of `session_id` (in `cwd`) as ACP names them.
pub(super) async fn available(
    daemon: &Connection,
    session_id: &str,
    cwd: &str,
) -> Result<Vec<AvailableCommand>, Error> {
    #[allow(clippy::needless_update)] // Fields later versions add keep their defaults.
    let params = CommandsListParams {
        cwd: cwd.to_owned(),
        session_id: Some(session_id.to_owned()),
        ..CommandsListParams::default()
    };
    let listed: CommandsListResult = daemon
        .request::<CommandsList>(&params)
        .await
        .map_err(super::bridge::daemon_error)?;
    Ok(listed
        .commands
        .into_iter()
        .take(MAX_COMMANDS_SENT)
        .map(|command| {
            let input = command.argument_hint.map(|hint| {
                AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(hint))
            });
            AvailableCommand::new(command.name, command.description).input(input)
        })
        .collect())
}

/// The notification that announces `commands`.
pub(super) fn update(session_id: &str, commands: Vec<AvailableCommand>) -> SessionNotification {
    SessionNotification::new(
        session_id.to_owned(),
        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)),
    )
}
