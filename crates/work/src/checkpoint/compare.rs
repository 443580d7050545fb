//! Comparing two checkpoints: the paths that differ (`diff-tree --name-status`) and the unified
//! diff of them (`diff`, bounded, no colour, no external diff or textconv), as a run's or a
//! session's changes and as what a rewind would undo.

use super::git::{Git, GitError};
use super::{CheckpointError, RelPath};

/// How a path differs from the older checkpoint to the newer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ChangeKind {
    /// Only in the newer.
    Added,
    /// Only in the older.
    Deleted,
    /// In both, with other content or mode.
    Modified,
}

/// One path that differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub path: RelPath,
    pub kind: ChangeKind,
}

/// The paths that differ from `from` to `to`, sorted by path.
pub(crate) async fn changes(
    git: &Git,
    from: &str,
    to: &str,
) -> Result<Vec<Change>, CheckpointError> {
    if from == to {
        return Ok(Vec::new());
    }
    let out = git
        .run(
            &[
                "diff-tree",
                "-r",
                "-z",
                "--no-renames",
                "--name-status",
                from,
                to,
            ],
            None,
            64 * 1024 * 1024,
        )
        .await?;
    let mut fields = out.split(|b| *b == 0).filter(|field| !field.is_empty());
    let mut changes = Vec::new();
    while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
        let kind = match status.first() {
            Some(b'A') => ChangeKind::Added,
            Some(b'D') => ChangeKind::Deleted,
            _ => ChangeKind::Modified,
        };
        changes.push(Change {
            path: RelPath(path.to_vec()),
            kind,
        });
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(changes)
}

/// The unified diff from `from` to `to`, at most `limit` bytes (cut at a line, `truncated`).
pub(crate) async fn unified(
    git: &Git,
    from: &str,
    to: &str,
    limit: usize,
) -> Result<(String, bool), CheckpointError> {
    if from == to {
        return Ok((String::new(), false));
    }
    let args = [
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        from,
        to,
    ];
    // Asked for a little more than shown, to know whether it was cut.
    match git.run(&args, None, limit.saturating_mul(8)).await {
        Ok(out) => Ok(cut(&out, limit)),
        Err(GitError::TooMuchOutput { .. }) => {
            // Far over: the stat instead, which is small.
            let stat = git
                .run(
                    &["diff", "--no-color", "--no-renames", "--stat=200", from, to],
                    None,
                    limit,
                )
                .await?;
            let mut text = String::from_utf8_lossy(&stat).into_owned();
            text.push_str("(the whole diff is too large to show; this is its summary)\n");
            Ok((text, true))
        }
        Err(other) => Err(other.into()),
    }
}

fn cut(out: &[u8], limit: usize) -> (String, bool) {
    if out.len() <= limit {
        return (String::from_utf8_lossy(out).into_owned(), false);
    }
    let end = out[..limit]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(limit, |newline| newline + 1);
    (String::from_utf8_lossy(&out[..end]).into_owned(), true)
}
