//! Taking a checkpoint of one workspace: what changed since the store's index (`ls-files`,
//! which trusts the index's stat data, so an unchanged tree costs one walk and no reads),
//! those paths brought into the index (`update-index`), the tree written and wrapped in a
//! commit whose message lists what was skipped. Files over the size limit and nested
//! repositories are skipped; `.gitignore` (and `.git/info/exclude`-like files of the store) is
//! honoured; the user's `.git` is never read or written.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::git::{Git, GitError};
use super::{CheckpointError, CheckpointSettings, RelPath};

/// One checkpoint: a tree of the private store (a commit when something was left out, whose
/// message says what), and what it left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub commit: String,
    pub skipped: Vec<Skipped>,
}

/// A path a checkpoint left out, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub path: String,
    pub reason: SkipReason,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum SkipReason {
    /// Bigger than `[checkpoints] max_file_bytes`.
    TooLarge { bytes: u64 },
    /// A directory with a repository of its own (`.git` inside).
    NestedRepository,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.reason {
            SkipReason::TooLarge { bytes } => write!(f, "{} ({bytes} bytes, too large)", self.path),
            SkipReason::NestedRepository => write!(f, "{} (a repository of its own)", self.path),
        }
    }
}

/// The commit message's body: what a restore needs to know of the checkpoint besides its
/// tree (a skipped file was there, so it is never deleted as "created since").
#[derive(Debug, Default, Serialize, Deserialize)]
struct Message {
    #[serde(default)]
    skipped: Vec<Skipped>,
}

const MESSAGE_TITLE: &str = "agentd checkpoint";

/// `ls-files` entries: what the work tree has that the index does not say.
#[derive(Debug, Default)]
struct Listed {
    /// Tracked files changed or gone, untracked files new (path → tracked).
    paths: BTreeMap<RelPath, bool>,
    /// Untracked directories with a repository of their own.
    nested: Vec<RelPath>,
}

fn list_changes(out: &[u8], max_files: usize) -> Result<Listed, CheckpointError> {
    let mut listed = Listed::default();
    for entry in out.split(|b| *b == 0).filter(|entry| !entry.is_empty()) {
        // `-t`: a tag, a space, the path.
        let (tag, path) = match entry {
            [tag, b' ', path @ ..] => (*tag, path),
            _ => continue,
        };
        if let Some(dir) = path.strip_suffix(b"/") {
            listed.nested.push(RelPath(dir.to_vec()));
            continue;
        }
        let tracked = tag != b'?';
        listed.paths.insert(RelPath(path.to_vec()), tracked);
        if listed.paths.len() > max_files {
            return Err(CheckpointError::TooManyFiles { max_files });
        }
    }
    Ok(listed)
}

/// What to tell the index about each listed path, decided from what the path is now.
#[derive(Debug, Default)]
struct Update {
    /// Added or refreshed (`--add --remove`: a path gone is dropped).
    refresh: Vec<RelPath>,
    /// Tracked and now too large: dropped from the index.
    drop: Vec<RelPath>,
    skipped: Vec<Skipped>,
}

fn decide(work_tree: &Path, listed: Listed, max_file_bytes: u64) -> Update {
    let mut update = Update::default();
    for (path, tracked) in listed.paths {
        if beyond_link(work_tree, path.as_path()) {
            // Its directory is a symlink now: gone from the tree (git refuses to add it).
            if tracked {
                update.drop.push(path);
            }
            continue;
        }
        let size = std::fs::symlink_metadata(work_tree.join(path.as_path()))
            .ok()
            .filter(|meta| meta.file_type().is_file())
            .map(|meta| meta.len());
        match size {
            Some(bytes) if bytes > max_file_bytes => {
                update.skipped.push(Skipped {
                    path: path.display(),
                    reason: SkipReason::TooLarge { bytes },
                });
                if tracked {
                    update.drop.push(path);
                }
            }
            _ => update.refresh.push(path),
        }
    }
    for dir in listed.nested {
        update.skipped.push(Skipped {
            path: dir.display(),
            reason: SkipReason::NestedRepository,
        });
    }
    update.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    update
}

/// Whether a directory on the way to `path` is a symlink.
fn beyond_link(work_tree: &Path, path: &Path) -> bool {
    let mut dir = work_tree.to_path_buf();
    let Some(parent) = path.parent() else {
        return false;
    };
    parent.components().any(|component| {
        dir.push(component);
        std::fs::symlink_metadata(&dir).is_ok_and(|meta| meta.file_type().is_symlink())
    })
}

fn nul_list(paths: &[RelPath]) -> Vec<u8> {
    let mut input = Vec::new();
    for path in paths {
        input.extend_from_slice(&path.0);
        input.push(0);
    }
    input
}

/// Takes a checkpoint of `git`'s work tree; `previous` is the store's last one (an unchanged
/// tree with the same skipped paths gives it back without writing anything).
pub(crate) async fn take(
    git: &Git,
    settings: &CheckpointSettings,
    previous: Option<&Snapshot>,
) -> Result<Snapshot, CheckpointError> {
    let listing_limit = settings.max_files.saturating_mul(4096);
    let out = git
        .run(
            &[
                "ls-files",
                "-z",
                "-t",
                "--others",
                "--modified",
                "--deleted",
                "--exclude-standard",
            ],
            None,
            listing_limit,
        )
        .await
        .map_err(|error| match error {
            GitError::TooMuchOutput { .. } => CheckpointError::TooManyFiles {
                max_files: settings.max_files,
            },
            other => other.into(),
        })?;
    let listed = list_changes(&out, settings.max_files)?;
    let work_tree = git.work_tree.clone();
    let max_file_bytes = settings.max_file_bytes;
    let update = tokio::task::spawn_blocking(move || decide(&work_tree, listed, max_file_bytes))
        .await
        .map_err(|error| CheckpointError::Internal(error.to_string()))?;
    if update.refresh.is_empty()
        && update.drop.is_empty()
        && let Some(previous) = previous
        && previous.skipped == update.skipped
    {
        return Ok(previous.clone());
    }
    if !update.refresh.is_empty() {
        git.run(
            &[
                "update-index",
                "-z",
                "--add",
                "--remove",
                "--replace",
                "--stdin",
            ],
            Some(nul_list(&update.refresh)),
            64 * 1024,
        )
        .await?;
    }
    if !update.drop.is_empty() {
        git.run(
            &["update-index", "-z", "--force-remove", "--stdin"],
            Some(nul_list(&update.drop)),
            64 * 1024,
        )
        .await?;
    }
    let tree = git.run(&["write-tree"], None, 1024).await?;
    let tree = String::from_utf8_lossy(&tree).trim().to_owned();
    if update.skipped.is_empty() {
        // Nothing to say beside the files: the tree is the checkpoint (one process fewer).
        return Ok(Snapshot {
            commit: tree,
            skipped: update.skipped,
        });
    }
    let body = serde_json::to_string(&Message {
        skipped: update.skipped.clone(),
    })
    .map_err(|error| CheckpointError::Internal(error.to_string()))?;
    let message = format!("{MESSAGE_TITLE}\n\n{body}\n");
    let commit = git
        .run(&["commit-tree", &tree], Some(message.into_bytes()), 1024)
        .await?;
    Ok(Snapshot {
        commit: String::from_utf8_lossy(&commit).trim().to_owned(),
        skipped: update.skipped,
    })
}

/// What checkpoint `commit` skipped, from its message (a checkpoint that is a tree skipped
/// nothing).
pub(crate) async fn skipped_of(git: &Git, commit: &str) -> Result<Vec<Skipped>, CheckpointError> {
    let kind = git.run(&["cat-file", "-t", commit], None, 64).await?;
    if kind.trim_ascii() == b"tree" {
        return Ok(Vec::new());
    }
    let out = git
        .run(&["cat-file", "commit", commit], None, 16 * 1024 * 1024)
        .await?;
    let text = String::from_utf8_lossy(&out);
    let body = text
        .split_once("\n\n")
        .map(|(_, message)| message)
        .unwrap_or("");
    let body = body.strip_prefix(MESSAGE_TITLE).unwrap_or(body).trim();
    if body.is_empty() {
        return Ok(Vec::new());
    }
    let message: Message = serde_json::from_str(body).unwrap_or_default();
    Ok(message.skipped)
}
