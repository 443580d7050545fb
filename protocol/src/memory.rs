//! Params and results of `memory/get`: the curated memory stores (`MEMORY.md`, the agent's
//! notes; `USER.md`, the user's profile) that sessions in a directory use. The model changes
//! them with its `memory` tool; a session's system prompt holds the snapshot taken when it was
//! created.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `memory/get`: the stores sessions in `cwd` use: `USER.md` the user's; `MEMORY.md` the
/// project's (its `.agents/memory/` when it has one, else the daemon's directory for the
/// project root), or the user's with `[memory] scope = "user"`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryGetParams {
    /// An absolute directory.
    pub cwd: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryGetResult {
    /// The directory holding `MEMORY.md` (each store's `path` says where it is).
    pub dir: String,
    /// Whose `MEMORY.md` is: `user` (the daemon's data dir, seen in every project) or
    /// `project` (the project root's).
    pub scope: MemoryScope,
    /// `[memory] enabled`: false, sessions have no memory (no prompt section, no memory tool);
    /// the stores are shown as they are. Absent from daemons before 1.3 (on).
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
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
    /// Whose it is (absent from daemons before 1.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<MemoryScope>,
    /// The project root a project's store is kept for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_root: Option<String>,
    /// In the repository's own `.agents/memory/` (else a directory of the daemon's).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_repository: bool,
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

impl MemoryStore {
    /// Whose the store is, in words (`the user's, seen in every project`, `project /src/app`,
    /// `project /src/app, in its .agents/memory/`), for listings.
    pub fn whose(&self) -> String {
        match (self.scope, &self.project_root) {
            (Some(MemoryScope::Project), Some(root)) if self.in_repository => {
                format!("project {root}, in its .agents/memory/")
            }
            (Some(MemoryScope::Project), Some(root)) => format!("project {root}"),
            (Some(MemoryScope::Project), None) => "the project's".to_owned(),
            (Some(MemoryScope::User), _) => "the user's, seen in every project".to_owned(),
            (None, _) => "unknown".to_owned(),
        }
    }
}

fn enabled_by_default() -> bool {
    true
}
