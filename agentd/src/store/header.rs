//! The first line of a session file: the header, its format version, and reading it.

use std::io::BufRead;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::ChildMcpServers;

/// Format version written in every header (`version`). A file of a higher version is refused
/// on load ([`NewerFormat`]), never read as if it were this one.
pub const FORMAT_VERSION: u32 = 1;

/// A session file written in a format newer than [`FORMAT_VERSION`], by a newer agentd.
#[derive(Debug, thiserror::Error)]
#[error(
    "session {session_id} is in session file format {version}, written by a newer agentd; this daemon reads format {FORMAT_VERSION} and older, so it leaves the session alone: upgrade agentd to open it"
)]
pub struct NewerFormat {
    pub session_id: String,
    pub version: u32,
}

/// `header`, unless its file is of a newer format than this daemon reads.
pub(super) fn known_format(header: SessionHeader) -> Result<SessionHeader> {
    if header.version > FORMAT_VERSION {
        return Err(NewerFormat {
            session_id: header.id,
            version: header.version,
        }
        .into());
    }
    Ok(header)
}

/// The first line of a session file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    pub version: u32,
    pub id: String,
    pub created_at: String,
    pub cwd: String,
    pub provider: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// How tool calls with side effects are decided in this session.
    #[serde(default)]
    pub permission_mode: protocol::approval::PermissionMode,
    /// Rules given at `session/create` (the session layer).
    #[serde(
        default,
        skip_serializing_if = "protocol::approval::PermissionRules::is_empty"
    )]
    pub permission_rules: protocol::approval::PermissionRules,
    /// `mcpServers` given at `session/create`, as given (the `.mcp.json` object or ACP's
    /// array; Null: none): resolved again whenever the session resolves its servers.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub mcp_servers: serde_json::Value,
    /// A session run as an agent whose definition lists `mcpServers`: only those servers
    /// (frozen at creation). None: the servers of `mcp_servers`, the user and the project.
    /// Boxed: most headers have none, and a header is in every session file's entry enum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_mcp: Option<Box<ChildMcpServers>>,
    /// The system prompt, frozen at creation so every request keeps a byte-identical prefix.
    /// Shared: the header is copied into the session's slot, handle and actor, and sessions of
    /// one workspace share one text (interned as it is read or made).
    #[serde(deserialize_with = "agentd_core::interned::deserialize_system_prompt")]
    pub system_prompt: std::sync::Arc<str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// The task this session runs as a subagent (its `parentSessionId` started it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The tools a session run as a subagent keeps, frozen at creation from its definition
    /// (None: every tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_filter: Option<agentd_work::agents::ToolFilter>,
    /// Model calls one run of a session run as an agent makes at most (its definition's
    /// `maxTurns`; the config's `max_steps` still caps it). None: the config's only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// US dollars one run of a session run as an agent may spend (its definition's
    /// `maxBudgetUsd`; enforced when the model's prices are configured). None: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_budget_usd: Option<f64>,
    /// Tokens one run of a session run as an agent may use (its definition's `maxTokens`).
    /// None: no limit. Absent from files written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// The session this one was forked from and the last seq of its log it copied
    /// (`session/fork`). Absent from files written before it, and for sessions that are no fork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<protocol::session::ForkPoint>,
    /// The key its model requests share a provider's prompt cache under (OpenAI's
    /// `prompt_cache_key`): a fork keeps its source's, as its requests start with the
    /// source's bytes. None: the session's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<String>,
}

impl SessionHeader {
    /// The MCP server entries given at `session/create`, parsed (the `session` argument of
    /// `mcp::config::servers_for`).
    pub fn mcp_servers(&self) -> agentd_work::mcp::config::McpEntries {
        agentd_work::mcp::config::McpEntries::from_session(&self.mcp_servers)
    }

    /// The key its model requests share a prompt cache under: its source's for a fork, else
    /// its own id.
    pub fn cache_key(&self) -> &str {
        self.prompt_cache_key.as_deref().unwrap_or(&self.id)
    }
}

/// A session file's first line as its header (None: a line of another type). Read as the
/// header's own struct once its `type` says so: parsing it as an [`Entry`](super::Entry) (internally tagged)
/// would first copy the whole line, system prompt and all, into a buffer of serde's, for each
/// of the thousands of files read at start and for listings.
pub fn parse_header(line: &[u8]) -> serde_json::Result<Option<SessionHeader>> {
    #[derive(Deserialize)]
    struct Tag<'a> {
        #[serde(rename = "type", borrow)]
        kind: std::borrow::Cow<'a, str>,
    }
    let tag: Tag<'_> = serde_json::from_slice(line)?;
    if tag.kind != "header" {
        return Ok(None);
    }
    serde_json::from_slice(line).map(Some)
}

/// Read only the header of a session file (the tests; listing reads it from an open file with
/// `read_header_from`).
#[cfg(test)]
pub fn read_header(path: &Path) -> Result<SessionHeader> {
    read_header_from(agentd_core::regular_file::open(path)?, path)
}

/// Read the header from `file`, already opened from `path` (named in errors).
pub fn read_header_from(file: std::fs::File, path: &Path) -> Result<SessionHeader> {
    let mut first = String::new();
    std::io::BufReader::new(file)
        .read_line(&mut first)
        .with_context(|| format!("cannot read {}", path.display()))?;
    match parse_header(first.as_bytes()) {
        Ok(Some(header)) => known_format(header),
        Ok(None) => bail!("{}: the first line is not a session header", path.display()),
        Err(err) => bail!("{}: bad session header: {err}", path.display()),
    }
}
