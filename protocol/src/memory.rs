//! Params and results of `memory/get`: the curated memory stores (`MEMORY.md`, the agent's
//! notes; `USER.md`, the user's profile) that sessions in a directory use. The model changes
//! them with its `memory` tool; a session's system prompt holds the snapshot taken when it was
//! created.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `memory/get`: the stores sessions in `cwd` use (the project's `.agents/memory/` when it has
/// one, else the user's).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryGetParams {
    /// An absolute directory.
    pub cwd: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryGetResult {
    /// The directory holding both stores.
    pub dir: String,
    /// `user` (the daemon's data dir) or `project` (the project's `.agents/memory/`).
    pub scope: MemoryScope,
    /// `MEMORY.md`: the agent's notes.
    pub memory: MemoryStore,
    /// `USER.md`: the user's profile.
    pub user: MemoryStore,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum MemoryScope {
    User,
    Project,
}

/// One store as it is now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryStore {
    /// The file (it may not exist yet).
    pub path: String,
    /// The entries, in order.
    pub entries: Vec<String>,
    /// Characters used, delimiters between entries (`\n§\n`) included.
    pub usage_chars: u64,
    /// The store's limit in characters.
    pub limit_chars: u64,
    /// Why the file could not be read whole, if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}
