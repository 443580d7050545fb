//! Questions an MCP server asks the user (`elicitation/create`), as agentd relays them
//! (`elicitationRequested`, `elicitation/respond`, `elicitationResolved`): the request a client
//! shows as a small form, the answers it may give, and the method's params and result.
//! Added in 1.3.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Prefix of every elicitation id.
pub const ELICITATION_ID_PREFIX: &str = "eli_";

/// How the user answered a server's question (MCP's `action`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ElicitationAction {
    /// The user filled in the form: `content` holds the answers.
    Accept,
    /// The user chose not to answer; the server goes on without the answers.
    Decline,
    /// The user dismissed the question without choosing.
    Cancel,
}

impl ElicitationAction {
    /// Its wire name (`accept`, `decline`, `cancel`).
    pub fn as_str(self) -> &'static str {
        match self {
            ElicitationAction::Accept => "accept",
            ElicitationAction::Decline => "decline",
            ElicitationAction::Cancel => "cancel",
        }
    }
}

/// A server's question, as `elicitationRequested` announces it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationRequest {
    /// `eli_…`: what `elicitation/respond` answers.
    pub elicitation_id: String,
    /// The MCP server that asks (its name in the configuration).
    pub server: String,
    /// The question, in the server's words.
    pub message: String,
    /// What the answer must look like, as the server sent it: a JSON Schema of an object whose
    /// properties are strings (maybe with `enum`), numbers, integers or booleans, each with
    /// an optional `title`, `description` and `default`; `required` lists those that must be
    /// given.
    pub requested_schema: serde_json::Value,
    /// The tool call during which the server asked, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// When it is cancelled by itself (the approval timeout).
    pub expires_at: String,
}

/// A server's question waiting for an answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingElicitation {
    pub session_id: String,
    pub run_id: String,
    /// When the server asked, RFC 3339.
    pub requested_at: String,
    pub request: ElicitationRequest,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationRespondParams {
    pub elicitation_id: String,
    pub action: ElicitationAction,
    /// For `accept`: the answers, an object of the requested schema's properties (strings,
    /// numbers, booleans); a property left out takes its `default` when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationRespondResult {
    pub elicitation_id: String,
    pub action: ElicitationAction,
    /// For `accept`: what the server was sent (defaults filled in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Whether `id` is a well-formed elicitation id: `eli_` then 1 to 64 ASCII letters, digits,
/// `_` or `-`.
pub fn is_elicitation_id(id: &str) -> bool {
    let Some(body) = id.strip_prefix(ELICITATION_ID_PREFIX) else {
        return false;
    };
    !body.is_empty()
        && body.len() <= crate::id::MAX_ID_BODY_CHARS
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
