//! Params and results of the trusted-project methods: `project/trust`, `project/untrust`,
//! `project/list`. A project's deny and ask rules apply at once; what its files would otherwise
//! loosen or run (allow rules, a default mode looser than the user's, `.mcp.json` servers)
//! applies only once the user trusted its root, and only while each file's content is the one
//! trusted (trust is pinned to content: a file new or changed since waits for a review and a
//! new `project/trust`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `project/trust`: a directory of the project (the daemon resolves its root: the git root, or
/// the directory itself outside a repository).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectTrustParams {
    /// An absolute path; relative paths are resolved against the daemon's working directory,
    /// so clients send absolute ones.
    pub path: String,
    /// Review only: say what trusting would apply, and trust nothing (`agentctl trust --show`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// The files a review showed, with their digests: trust only if exactly these are found
    /// now, so what is pinned is what the user saw. Absent: pin what is found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<PinnedFile>>,
}

/// A file and the digest of its content, as a review showed it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PinnedFile {
    pub path: String,
    /// `sha256:` and the hex of the content's SHA-256.
    pub digest: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectTrustResult {
    /// The project root.
    pub root: String,
    /// Whether the root is trusted now (after a dry run: as it was).
    #[serde(default)]
    pub trusted: bool,
    /// Every file of the project whose content is pinned by trust (the settings and `.mcp.json`
    /// of each directory from the path up to the root), with what it applies once trusted.
    #[serde(default)]
    pub files: Vec<ProjectFile>,
    /// Files that were pinned and are gone (trusting unpins them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
    /// Files that cannot be pinned (another user's, too big): they never apply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
}

/// One pinned file of a project and what it applies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectFile {
    pub path: String,
    /// `sha256:` and the hex of the content's SHA-256 (send it back in `files` to trust it).
    pub digest: String,
    /// Against what was trusted before this call.
    pub status: ProjectFileStatus,
    /// Allow rules: they apply only while this content is trusted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Ask and deny rules: these apply whether trusted or not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ask: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    /// The default permission mode it sets (a looser one than the user's applies only trusted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_mode: Option<String>,
    /// The MCP servers it starts, as they would run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<ProjectServer>,
    /// Its `hooks`, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<serde_json::Value>,
    /// What in the file cannot be used (bad rules, bad entries, not parseable).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// How a pinned file compares with what was trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ProjectFileStatus {
    /// The content trusted: it applies.
    Unchanged,
    /// Trusted with other content: it does not apply until trusted again.
    Changed,
    /// Not trusted yet (a new file, or a project not trusted): it does not apply until trusted.
    New,
}

/// An MCP server of a project file, as the review shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectServer {
    pub name: String,
    /// `stdio`, `http`, or `unknown` when the entry names no usable transport (see
    /// `problems`).
    pub transport: String,
    /// The command and its arguments, as written (a stdio server).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// The working directory, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The url, as written (an http server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `NAME=value` of its environment and `Name: value` of its headers, as written (variables
    /// unexpanded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<String>,
}

/// `project/untrust`: a directory of the project, or a trusted root that no longer exists.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectUntrustParams {
    pub path: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectUntrustResult {
    /// The project root no longer trusted.
    pub root: String,
    /// Whether it was trusted before this call (false: nothing changed).
    pub was_trusted: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectListParams {}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectListResult {
    /// Every trusted project, sorted by root.
    pub projects: Vec<TrustedProject>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustedProject {
    pub root: String,
}
