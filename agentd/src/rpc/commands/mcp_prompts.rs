//! MCP prompts as commands: each prompt of a session's MCP servers is `/mcp__server__prompt`.
//! (Filled in below once the MCP layer lists prompts.)

use protocol::commands::{CommandInfo, CommandProblemInfo, CommandSource};

use super::super::RpcResult;
use crate::session::actor::Session;
use crate::state::DaemonState;

/// The prompts of a session's servers, and the servers that could not list theirs.
#[derive(Default)]
pub(super) struct McpPrompts {
    pub(super) prompts: Vec<McpPrompt>,
    pub(super) problems: Vec<CommandProblemInfo>,
}

/// One server's prompt.
pub(super) struct McpPrompt {
    /// `mcp__server__prompt`.
    pub(super) name: String,
    description: String,
    argument_hint: Option<String>,
}

impl McpPrompt {
    pub(super) fn info(&self) -> CommandInfo {
        CommandInfo {
            name: self.name.clone(),
            description: self.description.clone(),
            argument_hint: self.argument_hint.clone(),
            source: CommandSource::Mcp,
            path: None,
        }
    }
}

impl McpPrompts {
    pub(super) async fn of(_state: &DaemonState, _session: &Session) -> RpcResult<McpPrompts> {
        Ok(McpPrompts::default())
    }

    pub(super) async fn get(&self, prompt: &McpPrompt, _args: &str) -> RpcResult<String> {
        Err(super::super::rpc_error(
            protocol::error::CONFLICT,
            format!("/{} cannot be run yet", prompt.name),
        ))
    }
}
