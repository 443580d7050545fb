//! MCP prompts as commands: each prompt of a session's ready MCP servers is
//! `/mcp__<server>__<prompt>`, its run's prompt the text `prompts/get` returns. Only servers
//! already running for the session's project are asked (listing commands never starts one);
//! a server that cannot list its prompts is a problem of `commands/list`, never a failure.

use std::path::PathBuf;
use std::sync::Arc;

use protocol::commands::{CommandInfo, CommandProblemInfo, CommandSource};

use super::super::{RpcResult, internal, rpc_error};
use crate::session::actor::Session;
use crate::state::DaemonState;
use agentd_work::mcp::{McpHandle, McpPromptInfo, McpStatus};

/// Prompts listed at most, over all servers (a completion list, not a catalogue).
const MAX_PROMPTS: usize = 200;

/// The prefix of an MCP prompt's command name, as of an MCP tool's.
const PREFIX: &str = "mcp__";

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
    prompt: McpPromptInfo,
    server: Arc<McpHandle>,
}

impl McpPrompt {
    pub(super) fn info(&self) -> CommandInfo {
        let hint = self
            .prompt
            .arguments
            .iter()
            .map(|argument| match argument.required {
                true => format!("<{}>", argument.name),
                false => format!("[{}]", argument.name),
            })
            .collect::<Vec<_>>()
            .join(" ");
        CommandInfo {
            name: self.name.clone(),
            description: self.prompt.description.clone(),
            argument_hint: Some(hint).filter(|hint| !hint.is_empty()),
            source: CommandSource::Mcp,
            path: None,
        }
    }
}

impl McpPrompts {
    /// The prompts of `session`'s servers that are ready now.
    pub(super) async fn of(state: &DaemonState, session: &Session) -> RpcResult<McpPrompts> {
        let cwd = PathBuf::from(&session.header.cwd);
        let resolved = state
            .sessions
            .mcp_servers(cwd, session.header.mcp_servers())
            .await
            .map_err(|err| internal(err.to_string()))?;
        let root = resolved.project.root;
        let running = state.mcp.servers();
        let handles: Vec<Arc<McpHandle>> = resolved
            .set
            .servers
            .iter()
            .filter(|config| {
                running.iter().any(|info| {
                    info.key.name == config.name
                        && info.key.project_root == root
                        && matches!(info.status, McpStatus::Ready { .. })
                })
            })
            .map(|config| Arc::new(state.mcp.acquire(config, &root)))
            .collect();
        let listed = futures::future::join_all(handles.iter().map(|handle| handle.prompts())).await;
        let mut found = McpPrompts::default();
        for (handle, listed) in handles.iter().zip(listed) {
            let server = handle.key().name.clone();
            match listed {
                Ok(prompts) => {
                    for prompt in prompts {
                        if found.prompts.len() >= MAX_PROMPTS {
                            found.problems.push(CommandProblemInfo {
                                path: format!("mcp:{server}"),
                                reason: format!(
                                    "not all its prompts are offered: at most {MAX_PROMPTS} MCP prompts are"
                                ),
                            });
                            break;
                        }
                        found.prompts.push(McpPrompt {
                            name: format!("{PREFIX}{server}__{}", prompt.name),
                            prompt,
                            server: Arc::clone(handle),
                        });
                    }
                }
                Err(reason) => found.problems.push(CommandProblemInfo {
                    path: format!("mcp:{server}"),
                    reason: format!("its prompts are not offered: {reason}"),
                }),
            }
        }
        Ok(found)
    }

    /// The text of `prompt` with `args`: `key=value` words fill the argument named `key`, the
    /// other words the prompt's arguments in order (the last one takes the rest); a required
    /// argument left empty is refused.
    pub(super) async fn get(&self, prompt: &McpPrompt, args: &str) -> RpcResult<String> {
        let arguments = fill(&prompt.prompt, args).map_err(|reason| {
            rpc_error(
                protocol::error::INVALID_PARAMS,
                format!("/{}: {reason}", prompt.name),
            )
        })?;
        prompt
            .server
            .get_prompt(&prompt.prompt.name, arguments)
            .await
            .map_err(|reason| {
                rpc_error(
                    protocol::error::CONFLICT,
                    format!(
                        "/{} could not be read from MCP server {}: {reason}",
                        prompt.name,
                        prompt.server.key().name
                    ),
                )
            })
    }
}

/// The arguments of `prompt` from the typed `args`.
fn fill(
    prompt: &McpPromptInfo,
    args: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    let mut values = serde_json::Map::new();
    let mut positional = Vec::new();
    for word in agentd_work::commands::split_args(args) {
        match word.split_once('=') {
            Some((key, value)) if prompt.arguments.iter().any(|a| a.name == key) => {
                values.insert(key.to_owned(), value.into());
            }
            _ => positional.push(word),
        }
    }
    let open: Vec<&str> = prompt
        .arguments
        .iter()
        .map(|argument| argument.name.as_str())
        .filter(|name| !values.contains_key(*name))
        .collect();
    let mut words = positional.into_iter();
    for (index, name) in open.iter().enumerate() {
        let value = if index + 1 == open.len() {
            words.by_ref().collect::<Vec<_>>().join(" ")
        } else {
            words.next().unwrap_or_default()
        };
        if !value.is_empty() {
            values.insert((*name).to_owned(), value.into());
        }
    }
    if open.is_empty() && words.next().is_some() {
        return Err("it takes no more arguments than its named ones".to_owned());
    }
    if let Some(missing) = prompt
        .arguments
        .iter()
        .find(|argument| argument.required && !values.contains_key(&argument.name))
    {
        return Err(format!(
            "the argument {} is required; give it as a word or {}=VALUE",
            missing.name, missing.name
        ));
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentd_work::mcp::McpPromptArgument;

    #[test]
    fn words_fill_the_arguments_by_name_then_in_order() {
        let argument = |name: &str, required: bool| McpPromptArgument {
            name: name.to_owned(),
            required,
        };
        let prompt = McpPromptInfo {
            name: "p".to_owned(),
            description: String::new(),
            arguments: vec![argument("city", true), argument("note", false)],
        };
        let filled = |args: &str| fill(&prompt, args).map(serde_json::Value::Object);
        assert_eq!(
            filled("Paris a long note").unwrap(),
            serde_json::json!({"city": "Paris", "note": "a long note"})
        );
        assert_eq!(
            filled("note=x \"New York\"").unwrap(),
            serde_json::json!({"city": "New York", "note": "x"})
        );
        assert!(filled("").unwrap_err().contains("city is required"));
        let bare = McpPromptInfo {
            arguments: Vec::new(),
            ..prompt.clone()
        };
        assert!(fill(&bare, "").is_ok());
        assert!(fill(&bare, "extra").is_err());
    }
}
