//! Params and results of the trusted-project methods: `project/trust`, `project/untrust`,
//! `project/list`. A project's `.agents/settings.*` deny and ask rules apply at once; its allow
//! rules (and a default mode looser than the user's) only once its root is trusted.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `project/trust` and `project/untrust`: a directory of the project (the daemon resolves its
/// root: the git root, or the directory itself outside a repository).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectTrustParams {
    /// An absolute path; relative paths are resolved against the daemon's working directory,
    /// so clients send absolute ones.
    pub path: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectTrustResult {
    /// The project root now trusted.
    pub root: String,
}

pub type ProjectUntrustParams = ProjectTrustParams;

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
