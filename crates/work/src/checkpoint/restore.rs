//! A rewind's files: the plan (what differs between the checkpoint to go back to and the
//! workspace now, what a person changed since the session's last checkpoint, what is left
//! alone) and carrying it out (files written back from the store's objects, files created
//! since removed).

use std::collections::{BTreeSet, HashMap};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use super::compare::{self, ChangeKind};
use super::git::Git;
use super::restore_fs::{EntryMode, Root};
use super::snapshot::{self, Skipped, Snapshot};
use super::{CheckpointError, RelPath};

/// What a rewind of the files would do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestorePlan {
    /// The checkpoint gone back to.
    pub target: String,
    /// The workspace as it is now (the checkpoint taken for the plan).
    pub current: String,
    /// Files written back as they were (changed or deleted since).
    pub restore: Vec<RelPath>,
    /// Files created since, removed.
    pub delete: Vec<RelPath>,
    /// Of those, the ones changed since the session's last checkpoint: by someone else than
    /// its runs (a person, another program); overwritten only because the plan says so.
    pub conflicts: Vec<RelPath>,
    /// Left as they are: not in a checkpoint (too large, a repository of their own).
    pub skipped: Vec<Skipped>,
}

/// What carrying out a plan did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Restored {
    pub restored: usize,
    pub deleted: usize,
    /// Paths that could not be restored or removed, and why.
    pub failed: Vec<(String, String)>,
}

/// The plan to bring the workspace (now `current`) back to `target`; `last` is the session's
/// last checkpoint (what its runs left), for the conflicts.
pub(crate) async fn plan(
    git: &Git,
    target: &str,
    current: &Snapshot,
    last: Option<&str>,
) -> Result<RestorePlan, CheckpointError> {
    let changes = compare::changes(git, target, &current.commit).await?;
    let kept_then: BTreeSet<String> = snapshot::skipped_of(git, target)
        .await?
        .into_iter()
        .map(|skipped| skipped.path)
        .collect();
    let kept_now: BTreeSet<&str> = current
        .skipped
        .iter()
        .map(|skipped| skipped.path.as_str())
        .collect();
    let mut plan = RestorePlan {
        target: target.to_owned(),
        current: current.commit.clone(),
        ..Default::default()
    };
    for change in changes {
        let shown = change.path.display();
        match change.kind {
            // Not recorded then (too large) though it was there: not "created since".
            ChangeKind::Added if kept_then.contains(&shown) => {}
            ChangeKind::Added => plan.delete.push(change.path),
            // There now, only not recorded (too large): left as it is, and said.
            ChangeKind::Deleted if kept_now.contains(shown.as_str()) => {}
            ChangeKind::Deleted | ChangeKind::Modified => plan.restore.push(change.path),
        }
    }
    plan.skipped = current.skipped.clone();
    if let Some(last) = last.filter(|last| *last != current.commit) {
        let touched: BTreeSet<RelPath> = compare::changes(git, last, &current.commit)
            .await?
            .into_iter()
            .map(|change| change.path)
            .collect();
        plan.conflicts = plan
            .restore
            .iter()
            .chain(&plan.delete)
            .filter(|path| touched.contains(*path))
            .cloned()
            .collect();
        plan.conflicts.sort();
    }
    Ok(plan)
}

/// A tree's entries: path → (mode, object id); and its directories.
struct Listing {
    files: HashMap<RelPath, (Vec<u8>, String)>,
    dirs: BTreeSet<RelPath>,
}

async fn listing(git: &Git, commit: &str) -> Result<Listing, CheckpointError> {
    let out = git
        .run(
            &["ls-tree", "-r", "-t", "-z", "--full-tree", commit],
            None,
            256 * 1024 * 1024,
        )
        .await?;
    let mut listing = Listing {
        files: HashMap::new(),
        dirs: BTreeSet::new(),
    };
    for entry in out.split(|b| *b == 0).filter(|entry| !entry.is_empty()) {
        // `<mode> <type> <oid>\t<path>`
        let Some(tab) = entry.iter().position(|b| *b == b'\t') else {
            continue;
        };
        let (meta, path) = (&entry[..tab], &entry[tab + 1..]);
        let mut parts = meta.split(|b| *b == b' ');
        let (Some(mode), Some(kind), Some(oid)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let path = RelPath(path.to_vec());
        match kind {
            b"tree" => {
                listing.dirs.insert(path);
            }
            b"blob" => {
                listing.files.insert(
                    path,
                    (mode.to_vec(), String::from_utf8_lossy(oid).into_owned()),
                );
            }
            _ => {}
        }
    }
    Ok(listing)
}

/// Carries out `plan`: removals first (a file created where a directory is to come back goes
/// before it), then the files written back from the store's objects.
pub(crate) async fn apply(git: &Git, plan: &RestorePlan) -> Result<Restored, CheckpointError> {
    let listing = listing(git, &plan.target).await?;
    let root_path = git.work_tree.clone();
    let delete = plan.delete.clone();
    let dirs = listing.dirs.clone();
    let mut restored = tokio::task::spawn_blocking(move || {
        let mut done = Restored::default();
        let root = match Root::open(&root_path) {
            Ok(root) => root,
            Err(error) => {
                done.failed
                    .push((root_path.display().to_string(), error.to_string()));
                return done;
            }
        };
        let keep = |dir: &std::path::Path| dirs.contains(&RelPath::from_path(dir));
        for path in &delete {
            match root.remove(path.as_path(), &keep) {
                Ok(()) => done.deleted += 1,
                Err(error) => done.failed.push((path.display(), error.to_string())),
            }
        }
        done
    })
    .await
    .map_err(|error| CheckpointError::Internal(error.to_string()))?;
    let wanted: Vec<(&RelPath, EntryMode, &str)> = plan
        .restore
        .iter()
        .filter_map(|path| match listing.files.get(path) {
            Some((mode, oid)) => match EntryMode::parse(mode) {
                Some(mode) => Some((path, mode, oid.as_str())),
                None => {
                    restored
                        .failed
                        .push((path.display(), "not a file or a link; left alone".into()));
                    None
                }
            },
            None => {
                restored
                    .failed
                    .push((path.display(), "not in the checkpoint".into()));
                None
            }
        })
        .collect();
    if wanted.is_empty() {
        return Ok(restored);
    }
    let mut child = git.start(&["cat-file", "--batch"]).await?;
    let mut stdin = child
        .take_stdin()
        .ok_or_else(|| CheckpointError::Internal("git cat-file has no stdin".into()))?;
    let stdout = child
        .take_stdout()
        .ok_or_else(|| CheckpointError::Internal("git cat-file has no stdout".into()))?;
    let mut request = String::new();
    for (_, _, oid) in &wanted {
        request.push_str(oid);
        request.push('\n');
    }
    let feed = async move {
        let _ = stdin.write_all(request.as_bytes()).await;
        let _ = stdin.shutdown().await;
    };
    let root_path = git.work_tree.clone();
    let read = async {
        let mut reader = BufReader::new(stdout);
        let root = std::sync::Arc::new(
            Root::open(&root_path).map_err(|error| CheckpointError::Internal(error.to_string()))?,
        );
        for (path, mode, _) in &wanted {
            let mut header = String::new();
            reader
                .read_line(&mut header)
                .await
                .map_err(|error| CheckpointError::Internal(error.to_string()))?;
            let size = header
                .trim_end()
                .rsplit(' ')
                .next()
                .and_then(|size| size.parse::<usize>().ok());
            let Some(size) = size.filter(|_| header.contains(" blob ")) else {
                restored.failed.push((
                    path.display(),
                    format!("the store has no such object: {header}"),
                ));
                continue;
            };
            let mut content = vec![0u8; size];
            reader
                .read_exact(&mut content)
                .await
                .map_err(|error| CheckpointError::Internal(error.to_string()))?;
            let mut newline = [0u8; 1];
            let _ = reader.read_exact(&mut newline).await;
            let root = std::sync::Arc::clone(&root);
            let (relative, mode) = (path.as_path().to_path_buf(), *mode);
            let written =
                tokio::task::spawn_blocking(move || root.write(&relative, mode, &content))
                    .await
                    .map_err(|error| CheckpointError::Internal(error.to_string()))?;
            match written {
                Ok(()) => restored.restored += 1,
                Err(error) => restored.failed.push((path.display(), error.to_string())),
            }
        }
        Ok::<(), CheckpointError>(())
    };
    let (_, result) = tokio::join!(feed, read);
    let _ = child.wait().await;
    result?;
    Ok(restored)
}
