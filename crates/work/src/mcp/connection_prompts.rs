//! A connection's prompts (`prompts/list`, `prompts/get`), which become slash commands.

use std::time::Duration;

use super::{McpClient, content, errors};
use crate::mcp::{McpContent, McpPromptArgument, McpPromptInfo};

impl McpClient {
    /// Every prompt of the server (all pages), within `timeout`; none when the server declares
    /// no `prompts` capability.
    pub(in crate::mcp) async fn list_prompts(
        &self,
        timeout: Duration,
    ) -> Result<Vec<McpPromptInfo>, String> {
        let declared = self
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.prompts.is_some());
        if !declared {
            return Ok(Vec::new());
        }
        let prompts = tokio::select! {
            listed = tokio::time::timeout(timeout, self.peer.list_all_prompts()) => match listed {
                Ok(listed) => listed.map_err(|error| format!("prompts/list failed: {}", errors::service_failed(&error, &self.place)))?,
                Err(_) => return Err(format!("prompts/list took longer than {} s", timeout.as_secs())),
            },
            () = self.closed.cancelled() => return Err("the server exited".to_owned()),
        };
        Ok(prompts
            .into_iter()
            .map(|prompt| McpPromptInfo {
                name: prompt.name,
                description: prompt.description.unwrap_or_default(),
                arguments: prompt
                    .arguments
                    .unwrap_or_default()
                    .into_iter()
                    .map(|argument| McpPromptArgument {
                        name: argument.name,
                        required: argument.required.unwrap_or(false),
                    })
                    .collect(),
            })
            .collect())
    }

    /// The text of prompt `name` with `arguments` (`prompts/get`), within `timeout`: its
    /// messages' text, one after the other.
    pub(in crate::mcp) async fn get_prompt(
        &self,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        timeout: Duration,
    ) -> Result<String, String> {
        let params = rmcp::model::GetPromptRequestParams::new(name).with_arguments(arguments);
        let got = tokio::select! {
            got = tokio::time::timeout(timeout, self.peer.get_prompt(params)) => match got {
                Ok(got) => got.map_err(|error| format!("prompts/get failed: {}", errors::service_failed(&error, &self.place)))?,
                Err(_) => return Err(format!("prompts/get took longer than {} s", timeout.as_secs())),
            },
            () = self.closed.cancelled() => return Err("the server exited".to_owned()),
        };
        let texts: Vec<String> = got
            .messages
            .into_iter()
            .map(|message| match content(message.content) {
                McpContent::Text(text) => text,
                McpContent::Resource {
                    text: Some(text), ..
                } => text,
                McpContent::Resource { uri, text: None } => format!("[binary resource {uri}]"),
                McpContent::ResourceLink { uri, .. } => format!("[resource {uri}]"),
                McpContent::Image { mime_type, .. } => format!("[image, {mime_type}]"),
                McpContent::Other(text) => text,
            })
            .collect();
        Ok(texts.join("\n\n"))
    }
}
