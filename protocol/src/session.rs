//! Params and results of the session methods (`session/*`, `daemon/subscribe`,
//! `daemon/unsubscribe`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::event::{ToolCallInfo, Usage};

/// A session as listed and shown.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The workspace root: file tools are confined to it, `run_shell` starts in it.
    pub cwd: String,
    /// The configured provider name (e.g. "openai").
    pub provider: String,
    pub model: String,
    pub permission_mode: crate::approval::PermissionMode,
    pub created_at: String,
    pub updated_at: String,
    pub status: SessionStatus,
    /// The id of the active run, while one is active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Seq of the last persisted event; subscribe with `afterSeq` = this to get only new events.
    pub last_seq: u64,
    /// Tokens used by the session so far.
    #[serde(default)]
    pub usage: Usage,
    /// The start of the session's first prompt (at most `PREVIEW_CHARS` characters, one
    /// line), for listings; absent before the first prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    /// The session that started this one as a subagent (`task`); absent for a session a
    /// client created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    /// What the session's priced model calls have cost so far, in US dollars (see
    /// `usageUpdated.totalCostUsd`); absent when none was priced, or the session is not
    /// loaded (listings of unloaded sessions leave it out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The session this one was forked from (`session/fork`) and the last seq of its log the
    /// fork copied; absent for a session that is no fork. Added in 1.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkPoint>,
}

/// Where a fork's history comes from: its source session and the last seq of the source's
/// log it holds (events `1..=seq` of the fork are the source's).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkPoint {
    /// The session forked: the direct source (a fork of a fork names the fork).
    pub session_id: String,
    pub seq: u64,
}

/// Longest `SessionInfo::preview`, in characters.
pub const PREVIEW_CHARS: usize = 120;

/// `text` as a one-line preview: whitespace runs folded to one space, cut at `PREVIEW_CHARS`
/// characters (with `…` when cut).
pub fn preview_of(text: &str) -> String {
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match folded.char_indices().nth(PREVIEW_CHARS) {
        Some((cut, _)) => format!("{}…", &folded[..cut]),
        None => folded,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SessionStatus {
    /// No run is active.
    Idle,
    /// A run is active.
    Running,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCreateParams {
    /// Workspace directory (absolute, must exist).
    pub cwd: String,
    /// A configured provider name, `provider:model`, or a model of the default provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// How tool calls with side effects are decided (default: the project's, else the
    /// config's default mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<crate::approval::PermissionMode>,
    /// Rules of this session only (the session layer, above user and project rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_rules: Option<crate::approval::PermissionRules>,
    /// MCP servers of this session only, above the project's and the user's on a name clash:
    /// an object of servers by name in the `.mcp.json` shape (`{NAME: {command, args, env,
    /// cwd} | {type: "http", url, headers}}`), or ACP's array (`[{name, command, args, env:
    /// [{name, value}]} | {type: "http", name, url, headers: [{name, value}]}]`). Kept with the
    /// session as given; an entry that cannot be used is reported, not refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<serde_json::Value>,
    /// Run the session as this subagent (`agents/list` names them): its system prompt is the
    /// definition's body (+ its skills' catalogue) and its tools are filtered by the definition
    /// (never `task`, `task_*`, `memory`, `todo_write`). Unknown: -32602 listing the agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// Text appended to the session's system prompt, which is frozen at creation (so it can
    /// only be given here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append_system_prompt: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCreateResult {
    pub session_id: String,
    pub session: SessionInfo,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionListParams {
    /// Return sessions after this cursor (from a previous `nextCursor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// At most this many (default 100, max 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionListResult {
    /// Newest first.
    pub sessions: Vec<SessionInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Params naming one session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRef {
    pub session_id: String,
}

/// Params of `session/delete`.
pub type SessionDeleteParams = SessionRef;
/// Params of `session/cancel`.
pub type SessionCancelParams = SessionRef;
/// Params of `session/compact`.
pub type SessionCompactParams = SessionRef;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionGetParams {
    pub session_id: String,
    /// Include the conversation history (default false).
    #[serde(default)]
    pub include_history: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionGetResult {
    pub session: SessionInfo,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<HistoryMessage>>,
    /// Steering messages not yet delivered.
    pub queued_steers: Vec<String>,
    /// Follow-up messages not yet delivered (after a cancel they stay here for the user).
    pub queued_follow_ups: Vec<String>,
    /// Names of the MCP servers given at `session/create` (`mcpServers`), sorted; their
    /// commands, environment and headers stay in the daemon (they may hold secrets).
    #[serde(default)]
    pub mcp_servers: Vec<String>,
}

/// One message of the conversation history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum HistoryMessage {
    #[serde(rename_all = "camelCase")]
    User {
        content: String,
        /// How many images the user attached (`session/prompt {images}`); their bytes are not
        /// sent back.
        #[serde(default, skip_serializing_if = "is_zero")]
        image_count: u32,
    },
    #[serde(rename_all = "camelCase")]
    Assistant {
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCallInfo>,
    },
    #[serde(rename_all = "camelCase")]
    Tool {
        tool_call_id: String,
        tool_name: String,
        content: String,
        is_error: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDeleteResult {
    pub deleted: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionPromptParams {
    pub session_id: String,
    pub text: String,
    /// Makes the prompt idempotent: the same id on the same session returns the first runId.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_request_id: Option<String>,
    /// When a run is active, queue the text as a follow-up instead of failing.
    #[serde(default)]
    pub queue_if_busy: bool,
    /// The run this prompt starts keeps its approvals pending (until the approval timeout) even
    /// while no client that answers approvals follows the session: for a client that starts a
    /// run and leaves (`agentctl run --background --approve wait`); answered later with
    /// `approval/respond`. Without it, such an approval is denied by the mode at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hold_approvals: bool,
    /// Model calls this run makes at most (never more than the config's `max_steps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Images the prompt carries, for models that take them (at most [`MAX_PROMPT_IMAGES`],
    /// each at most [`MAX_IMAGE_BYTES`] decoded). Only a prompt that starts a run takes them:
    /// one queued as a follow-up (`queueIfBusy`) while a run is active is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<PromptImage>,
}

/// Most images one prompt carries.
pub const MAX_PROMPT_IMAGES: usize = 8;
/// Largest image a prompt carries, decoded (5 MiB, the largest the providers take).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;
/// Most base64 bytes of all a prompt's images together (12 MiB): the request is one line,
/// and a line is at most 16 MiB.
pub const MAX_PROMPT_IMAGES_BASE64: usize = 12 * 1024 * 1024;

/// Why `images` cannot go in one prompt (too many, too big together), if so.
pub fn prompt_images_problem(images: &[PromptImage]) -> Option<String> {
    if images.len() > MAX_PROMPT_IMAGES {
        return Some(format!(
            "{} images attached; a prompt carries at most {MAX_PROMPT_IMAGES}",
            images.len()
        ));
    }
    let total: usize = images.iter().map(|image| image.data.len()).sum();
    (total > MAX_PROMPT_IMAGES_BASE64).then(|| {
        format!(
            "the images attached are {} MiB together as base64; a prompt carries at most {} MiB of images: attach fewer or smaller ones",
            total.div_ceil(1024 * 1024),
            MAX_PROMPT_IMAGES_BASE64 / (1024 * 1024)
        )
    })
}

/// An image attached to a prompt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptImage {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`; must match the bytes.
    pub mime_type: String,
    /// The image's bytes, base64 (standard alphabet, padded).
    pub data: String,
}

/// The image type of `bytes` by their signature (PNG, JPEG, GIF, WebP), if any.
pub fn image_mime_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionPromptResult {
    pub run_id: String,
    /// True when the text was queued as a follow-up of the active run `runId`.
    #[serde(default)]
    pub queued: bool,
}

/// Params of `session/steer` and `session/followUp`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueMessageParams {
    pub session_id: String,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueMessageResult {
    /// The run the message goes to.
    pub run_id: String,
    /// True when queued into the active run; false when it started a new run (follow-up on
    /// an idle session).
    pub queued: bool,
}

/// Params of `session/steer`.
pub type SessionSteerParams = QueueMessageParams;
/// Result of `session/steer`.
pub type SessionSteerResult = QueueMessageResult;
/// Params of `session/followUp`.
pub type SessionFollowUpParams = QueueMessageParams;
/// Result of `session/followUp`.
pub type SessionFollowUpResult = QueueMessageResult;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCancelResult {
    /// False when no run was active.
    pub cancelled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSubscribeParams {
    pub session_id: String,
    /// Replay persisted events with `seq > afterSeq` first; omit for live events only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_seq: Option<u64>,
}

/// The answer of `session/subscribe`: notifications of this subscription carry its id.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSubscribeResult {
    /// `sub_` and hex digits, unique in the daemon; the key of `session/unsubscribe`.
    pub subscription_id: String,
}

/// Params of `session/unsubscribe`. The object form is the documented one; a bare
/// `["sub_…"]` (the array form of older clients) is read too.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", from = "UnsubscribeWire")]
pub struct SessionUnsubscribeParams {
    pub subscription_id: String,
}

/// The answer of `session/unsubscribe`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionUnsubscribeResult {
    /// True when a live subscription of this connection ended; false for an unknown id (or
    /// one already ended, or one of `daemon/subscribe`).
    pub unsubscribed: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSubscribeParams {}

/// The answer of `daemon/subscribe`: notifications of this subscription carry its id.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSubscribeResult {
    /// `sub_` and hex digits, unique in the daemon; the key of `daemon/unsubscribe`.
    pub subscription_id: String,
}

/// Params of `daemon/unsubscribe` (a bare `["sub_…"]` is read too).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", from = "UnsubscribeWire")]
pub struct DaemonUnsubscribeParams {
    pub subscription_id: String,
}

/// The answer of `daemon/unsubscribe`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonUnsubscribeResult {
    /// True when a live `daemon/subscribe` subscription of this connection ended.
    pub unsubscribed: bool,
}

/// Params of an unsubscribe call: `{"subscriptionId": …}` (a bare id, the array form of older
/// clients, is read too but is not part of the schema).
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
enum UnsubscribeWire {
    Object {
        #[serde(rename = "subscriptionId")]
        subscription_id: String,
    },
    #[schemars(skip)]
    Bare(String),
}

impl UnsubscribeWire {
    fn into_id(self) -> String {
        match self {
            UnsubscribeWire::Object { subscription_id }
            | UnsubscribeWire::Bare(subscription_id) => subscription_id,
        }
    }
}

impl From<UnsubscribeWire> for SessionUnsubscribeParams {
    fn from(wire: UnsubscribeWire) -> Self {
        SessionUnsubscribeParams {
            subscription_id: wire.into_id(),
        }
    }
}

impl From<UnsubscribeWire> for DaemonUnsubscribeParams {
    fn from(wire: UnsubscribeWire) -> Self {
        DaemonUnsubscribeParams {
            subscription_id: wire.into_id(),
        }
    }
}

/// Result of `session/compact`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCompactResult {
    /// False when there was nothing older than the last two user turns to summarise.
    pub compacted: bool,
    /// Prompt tokens of the last request before the compaction (estimated when unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_before: Option<u64>,
    /// Estimated prompt tokens of the compacted context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_after: Option<u64>,
}

/// Params of `session/update`: each field given changes the session from its next run on (a
/// run already going keeps what it started with); absent fields stay as they are.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionUpdateParams {
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<crate::approval::PermissionMode>,
    /// As `session/create`'s `model`: a configured provider name, `provider:model`, or a model
    /// of the default provider. Recorded in the log (`sessionUpdated`); the system prompt
    /// stays, the model's cached prefix starts again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The new title; an empty one removes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// Params of `session/fork`: a new session whose history is `sessionId`'s up to `atSeq`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionForkParams {
    pub session_id: String,
    /// The last seq of the source's log the fork keeps (default: its last one). It must not
    /// fall inside a run (between a `runStarted` and its `runFinished`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_seq: Option<u64>,
    /// The fork's title (default: the source's at that point).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// Result of `session/fork`: the new session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionForkResult {
    pub session_id: String,
    pub session: SessionInfo,
}

/// Result of `session/update`: the session as it now reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionUpdateResult {
    pub session: SessionInfo,
}

fn is_zero(count: &u32) -> bool {
    *count == 0
}
