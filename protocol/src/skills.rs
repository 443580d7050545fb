//! Params and result of `skills/list`: the skills a session in a directory is offered, and what
//! discovery skipped.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `skills/list`: the skills of a workspace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillsListParams {
    /// The workspace directory, absolute (as for `session/create`).
    pub cwd: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillsListResult {
    /// The skills a new session there lists in its system prompt, sorted by name.
    pub skills: Vec<SkillInfo>,
    /// Skills not offered and why (no description, bad frontmatter, a name taken by a nearer
    /// skill, another user's file, too big, too many).
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillInfo {
    pub name: String,
    pub description: String,
    /// The `SKILL.md` file.
    pub path: String,
    pub source: SkillSource,
}

/// Where a skill was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SkillSource {
    /// The workspace or a parent up to the git root (`skills/`, `.agents/skills/`,
    /// `.claude/skills/`).
    Project,
    /// The user's `$XDG_CONFIG_HOME/agentd/skills/`.
    User,
}
