//! Extensions: clients of the socket that add tools, commands and handlers to sessions.
//! `extension/register` (client → daemon) and the requests the daemon then sends on that
//! connection (daemon → client): `extension/callTool`, `extension/runCommand` and
//! `extension/event`. A client declares `capabilities.extensions` in `initialize` to register;
//! its registrations live as long as its connection.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::session::HistoryMessage;

/// The daemon → client request that calls one of an extension's tools.
pub const CALL_TOOL: &str = "extension/callTool";
/// The daemon → client request that runs one of an extension's commands.
pub const RUN_COMMAND: &str = "extension/runCommand";
/// The daemon → client request that tells an extension of a point of a session's life.
pub const EVENT: &str = "extension/event";

/// `extension/register`: what an extension adds to the sessions in its scope.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionRegisterParams {
    /// Letters, digits, `-` and `_` (no `__`), starting with a letter or digit, at most 32
    /// chars; unique among the daemon's live extensions. Its tools are `ext__<name>__<tool>`.
    pub name: String,
    #[serde(default)]
    pub scope: ExtensionScope,
    #[serde(default)]
    pub tools: Vec<ExtensionToolSpec>,
    #[serde(default)]
    pub commands: Vec<ExtensionCommandSpec>,
    /// The events it wants as `extension/event` requests; it is sent no other.
    #[serde(default)]
    pub events: Vec<ExtensionEventKind>,
}

/// Which sessions an extension joins.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionScope {
    /// An absolute directory: only sessions whose cwd is inside it. Absent: every session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// A tool an extension offers the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionToolSpec {
    /// The same grammar as the extension's name; `ext__<extension>__<name>` is at most 64
    /// chars.
    pub name: String,
    pub description: String,
    /// A JSON Schema of the arguments object (`"type": "object"`).
    pub input_schema: serde_json::Value,
    /// It only observes: runs without asking, in parallel, also in plan mode. Otherwise it
    /// asks in the default mode, like an MCP tool that is not read-only.
    #[serde(default)]
    pub read_only: bool,
}

/// A command an extension runs when a user types `/name args`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionCommandSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
}

/// The points of a session an extension may handle (`extension/event {event}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ExtensionEventKind {
    /// A user's prompt before the model sees it: answer `text` to transform it, `block` to
    /// refuse it.
    Input,
    /// A run starts: answer `context` to add text to its prompt.
    BeforeAgentStart,
    /// The messages of one model request: answer `messages` to send others, for that request
    /// only (the history is not touched).
    Context,
    /// The raw body of one provider request: answer `patch`, a JSON merge patch (RFC 7386).
    BeforeProviderRequest,
    /// A tool call before the permission gate: answer `block` to refuse it, `arguments` to
    /// replace its arguments.
    ToolCall,
    /// A tool's result before the model reads it: answer `content` to rewrite it.
    ToolResult,
    /// A piece of the answer being streamed: answer `cut: true` to cut the answer off.
    MessageUpdate,
}

impl ExtensionEventKind {
    /// The wire name (`toolCall`, …).
    pub fn name(self) -> &'static str {
        match self {
            ExtensionEventKind::Input => "input",
            ExtensionEventKind::BeforeAgentStart => "beforeAgentStart",
            ExtensionEventKind::Context => "context",
            ExtensionEventKind::BeforeProviderRequest => "beforeProviderRequest",
            ExtensionEventKind::ToolCall => "toolCall",
            ExtensionEventKind::ToolResult => "toolResult",
            ExtensionEventKind::MessageUpdate => "messageUpdate",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionRegisterResult {
    /// `ext_…`, named in every request the daemon sends for this registration.
    pub extension_id: String,
    /// Its tools as the model sees them (`ext__<name>__<tool>`), in the order given.
    pub tools: Vec<String>,
}

/// `extension/callTool` (daemon → client): the model called one of the extension's tools.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionCallToolParams {
    pub extension_id: String,
    pub session_id: String,
    pub tool_call_id: String,
    /// The tool's own name, as registered (not `ext__…`).
    pub tool: String,
    pub arguments: serde_json::Value,
}

/// What a tool call returns: text the model reads, and whether it is an error.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionCallToolResult {
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub is_error: bool,
}

/// `extension/runCommand` (daemon → client): a user ran one of the extension's commands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionRunCommandParams {
    pub extension_id: String,
    /// The session it was typed in (absent outside one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    pub cwd: String,
    pub command: String,
    /// What followed the name, as typed.
    pub args: String,
}

/// What a command did: text shown to the user, and a prompt to run (both optional).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionRunCommandResult {
    /// Shown to the user; never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Sent as the session's next prompt, as if the user had typed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

/// `extension/event` (daemon → client). The fields beyond the first four depend on `event`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionEventParams {
    pub event: ExtensionEventKind,
    pub extension_id: String,
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// `input`, `beforeAgentStart`: the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `context`: the messages of the request (after clearings and compaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<HistoryMessage>>,
    /// `beforeProviderRequest`: the request body as it would be sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<serde_json::Value>,
    /// `toolCall`, `toolResult`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// `toolCall`, `toolResult`: the name the model called (`read_file`, `ext__a__b`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// `toolCall`, `toolResult`: the call's arguments (a JSON value; text when not JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Value>,
    /// `toolResult`: what the model would read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// `toolResult`: whether the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `messageUpdate`: the text streamed since the previous update this extension got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<String>,
    /// `messageUpdate`: the chars of the answer streamed so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
}

/// An extension's answer to `extension/event`; each event reads the fields its kind names and
/// ignores the rest. `{}` changes nothing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionEventResult {
    /// `input`, `toolCall`: refuse it, with the reason the model (or the user) reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<String>,
    /// `input`: the prompt's replacement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `beforeAgentStart`: text added to the prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<String>,
    /// `context`: the request's replacement messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<HistoryMessage>>,
    /// `beforeProviderRequest`: a JSON merge patch (RFC 7386) of the body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<serde_json::Value>,
    /// `toolCall`: the call's replacement arguments (an object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Value>,
    /// `toolResult`: the result's replacement text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// `messageUpdate`: cut the answer off (its text is dropped and the run ends).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
    /// `messageUpdate` with `cut`: why, shown to the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
