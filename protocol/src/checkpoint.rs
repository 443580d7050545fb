//! Checkpoints of a session's workspace (added in 1.3): `session/checkpoints` (a session's
//! runs and what each changed), `session/diff` (a run's or the session's changes as a unified
//! diff) and `session/rewind` (the workspace's files, the conversation, or both, back to a
//! run's start or a seq; a preview first, then the same call with `confirm`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Why a checkpoint was taken (`checkpointed.reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CheckpointReason {
    /// Before a run's first step.
    RunStart,
    /// Before a tool batch that can write.
    Batch,
    /// After a run that could write.
    RunEnd,
    /// The workspace as a rewind found it: `session/rewind` to this seq undoes the rewind.
    BeforeRewind,
    /// The workspace as a rewind left it.
    AfterRewind,
}

/// How a file differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FileChangeKind {
    Added,
    Deleted,
    Modified,
}

/// One file a run (or a rewind) changed, relative to the workspace root.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    pub path: String,
    pub change: FileChangeKind,
}

/// Params of `session/checkpoints`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCheckpointsParams {
    pub session_id: String,
}

/// One run of a session as a point to go back to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunCheckpoint {
    pub run_id: String,
    /// The seq of its `runStarted`.
    pub started_seq: u64,
    /// The first line of its prompt (bounded).
    pub prompt: String,
    /// The checkpoint taken before it (absent: none was, checkpoints were off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    /// Files it changed (absent: unknown, no checkpoint; or still running).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_files: Option<u32>,
    /// Whether it has finished.
    pub finished: bool,
}

/// Result of `session/checkpoints`: the session's runs, oldest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCheckpointsResult {
    /// Whether checkpoints are taken now.
    pub enabled: bool,
    /// Why not, when they are not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub runs: Vec<RunCheckpoint>,
}

/// Params of `session/diff`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDiffParams {
    pub session_id: String,
    /// One run (default: the whole session, from its first checkpoint to its last).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

/// Result of `session/diff`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDiffResult {
    /// The files that differ, sorted by path.
    pub files: Vec<FileChange>,
    /// The unified diff (`a/` and `b/` prefixes), at most 1 MiB.
    pub diff: String,
    /// The diff was cut (or only its summary is given).
    pub truncated: bool,
    /// The checkpoints compared (absent: the session has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

/// Params of `session/rewind`. Without `confirm` nothing changes: the result is the plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRewindParams {
    pub session_id: String,
    /// Back to before this run (its checkpoint taken at its start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_run_id: Option<String>,
    /// Back to this seq (the last checkpoint at or before it; for the conversation, a fork
    /// at it). One of `toRunId` and `toSeq`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_seq: Option<u64>,
    /// Restore the workspace's files (default true).
    #[serde(default = "yes")]
    pub files: bool,
    /// Continue the conversation from that point as a new session (a fork; the old one stays).
    #[serde(default)]
    pub conversation: bool,
    /// Carry it out (default: only say what it would do).
    #[serde(default)]
    pub confirm: bool,
    /// With `confirm`: the `current` of the preview; refused if the workspace changed since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<String>,
}

fn yes() -> bool {
    true
}

/// What a rewind of the files does (or would do).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewindPlan {
    /// Written back as they were.
    pub restore: Vec<String>,
    /// Created since, removed.
    pub delete: Vec<String>,
    /// Of those, the ones changed since the session's last checkpoint (by hand or by another
    /// program, not by its runs): their current content is lost.
    pub conflicts: Vec<String>,
    /// Left as they are (not in the checkpoints: too large, a repository of their own).
    pub skipped: Vec<String>,
}

/// A path a rewind could not restore or remove, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewindFailure {
    pub path: String,
    pub error: String,
}

/// Result of `session/rewind`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionRewindResult {
    /// Whether anything was done (false: a preview).
    pub applied: bool,
    /// The files' part (absent with `files: false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<RewindPlan>,
    /// The checkpoint gone back to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The workspace now (pass it as `expect` to confirm this preview).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
    /// `session/rewind {toSeq: undoSeq}` undoes this rewind's files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo_seq: Option<u64>,
    #[serde(default)]
    pub failed: Vec<RewindFailure>,
    /// With `conversation`: the new session that continues from the point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}
