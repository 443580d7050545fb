//! Where extension commands plug in: an extension (a client of the socket that called
//! `extension/register` with `commands`) offers commands under their own names, source
//! `extension`, and `session/command` hands them to it (`extension/runCommand`). The
//! extension registry is not part of this daemon yet: `commands` finds none, so none is
//! listed or run. Once it is, `commands` returns the registered ones in scope of the cwd and
//! `run` sends the call to the extension's connection.

use std::path::Path;

use protocol::commands::{CommandInfo, CommandSource, SessionCommandResult};

use super::super::{RpcResult, rpc_error};
use crate::session::actor::Session;
use crate::state::DaemonState;

/// A command an extension registered (made by the extension registry, at `commands`).
pub(super) struct ExtensionCommand {
    pub(super) name: String,
    pub(super) description: String,
    pub(super) argument_hint: Option<String>,
    /// The registering extension's name (`extension/register {name}`).
    pub(super) extension: String,
}

impl ExtensionCommand {
    pub(super) fn info(&self) -> CommandInfo {
        CommandInfo {
            name: self.name.clone(),
            description: self.description.clone(),
            argument_hint: self.argument_hint.clone(),
            source: CommandSource::Extension,
            path: None,
        }
    }
}

/// The commands extensions registered for sessions in `cwd`: none until the extension
/// registry exists.
pub(super) fn commands(_state: &DaemonState, _cwd: &Path) -> Vec<ExtensionCommand> {
    Vec::new()
}

/// Run `command` of its extension in `session`: the registry sends `extension/runCommand` on
/// the extension's connection; without it, the command is refused.
pub(super) fn run(
    command: &ExtensionCommand,
    _session: &Session,
    _args: &str,
) -> RpcResult<SessionCommandResult> {
    Err(rpc_error(
        protocol::error::CONFLICT,
        format!(
            "/{} belongs to the extension {}, which is not connected; start it again",
            command.name, command.extension
        ),
    ))
}
