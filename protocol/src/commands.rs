//! Params and results of `commands/list` and `session/command`: the slash commands a session in
//! a directory offers (the daemon's built-ins, command files, skills, MCP prompts, extension
//! commands) and running one. A command costs no tokens unless it starts a run, and is never
//! itself part of the history.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `commands/list`: the commands of a workspace (and of a session's MCP servers).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandsListParams {
    /// The workspace directory, absolute (as for `session/create`).
    pub cwd: String,
    /// A session in that directory: its MCP servers' prompts are listed too (`mcp__server__prompt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandsListResult {
    /// Built-ins first, then the others by name. A name is unique: a built-in wins over a file,
    /// a project file over a user file, a file over a skill.
    pub commands: Vec<CommandInfo>,
    /// Command files and prompts not offered, and why (bad frontmatter, a name taken, too big,
    /// too many, another user's file, a server that failed to list its prompts).
    pub problems: Vec<CommandProblemInfo>,
}

/// One command, as a client lists or completes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandInfo {
    /// Without the leading `/`; a file in a subdirectory is `dir:name`.
    pub name: String,
    pub description: String,
    /// What the arguments are, for a hint after the name (e.g. `[focus]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
    pub source: CommandSource,
    /// The command file (`user`, `project`) or the `SKILL.md` (`skill`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// Where a command comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CommandSource {
    /// Answered by the daemon itself, with no model call.
    Builtin,
    /// `$XDG_CONFIG_HOME/agentd/commands/*.md`.
    User,
    /// `.agents/commands/*.md` or `.claude/commands/*.md`, from the workspace up to the git root.
    Project,
    /// A skill, run with its instructions loaded.
    Skill,
    /// An MCP server's prompt (`prompts/get`), as `mcp__server__prompt`.
    Mcp,
    /// A command an extension registered.
    Extension,
}

/// A command file or prompt that is not offered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandProblemInfo {
    /// The file (or `mcp:<server>` for a server's prompts).
    pub path: String,
    pub reason: String,
}

/// `session/command`: run one command in a session.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCommandParams {
    pub session_id: String,
    /// The command's name, with or without its leading `/`.
    pub name: String,
    /// Everything typed after the name (`$ARGUMENTS`); words are split like a shell's for
    /// `$1`, `$2`, ….
    #[serde(default)]
    pub args: String,
    /// As `session/prompt`'s, for a command that starts a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_request_id: Option<String>,
}

/// What a command did: text to show, a run it started, or a session it made.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCommandResult {
    /// What to show the user (a built-in's answer). Not part of the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The run the command started (a command file, a skill, an MCP prompt), acknowledged as
    /// `session/prompt` acknowledges; its outcome arrives as events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// `/clear`: the new session, with the settings of this one. Clients switch to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// What of the command was not applied (e.g. a command file's `model` that names no
    /// configured model: the session's model runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}
