//! The project configuration a shell must not write: the names ([`PROTECTED_IN_PROJECT`]) in
//! each directory the project discovery reads (the workspace up to its git root,
//! `workspace::project_dirs`), what of it exists now ([`existing`]: the read-only bind mounts
//! of the sandbox, files and directories alike), and what a command did to it
//! ([`Snapshot`]: taken before a `run_shell` command and compared after it).
//!
//! A mount needs something to cover, and the kernel cannot refuse one new name without
//! refusing every creation in its directory, so a name absent when the command starts can be
//! created (`mkdir .claude`, `ln -s real .claude`); nothing is written into the user's tree to
//! prevent it. Such a creation, and any change to a name the mounts did not cover (no mount
//! namespace), is found by the snapshot and said in the tool result: configuration written by a
//! command must not apply unseen.

use std::path::{Path, PathBuf};

/// Names, relative to each project directory, whose content changes what runs or what is
/// allowed: agent settings and skills, MCP servers, git hooks and git's config (which can name
/// programs git runs), and the notes read into the prompt.
pub(crate) const PROTECTED_IN_PROJECT: [&str; 8] = [
    ".agents",
    ".claude",
    "skills",
    ".mcp.json",
    ".git/hooks",
    ".git/config",
    "AGENTS.md",
    "CLAUDE.md",
];

/// Files named in a report of one created directory; the rest are counted. A command that
/// plants configuration plants a few files; a report stays one readable line.
const MAX_NAMED_FILES: usize = 8;

/// How deep a created directory is searched for the files to name.
const MAX_NAMED_DEPTH: usize = 3;

/// The protected paths of `workspace`'s project that exist now, symlinks resolved (a link to
/// a directory elsewhere is covered where it points), without duplicates. Blocking.
pub fn existing(workspace: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    for path in candidates(workspace) {
        if let Ok(real) = std::fs::canonicalize(&path)
            && !found.contains(&real)
        {
            found.push(real);
        }
    }
    found
}

/// What the protected names of a project were before a command: cheap to take (one
/// `lstat` per name and directory) and to compare.
#[derive(Debug)]
pub struct Snapshot {
    workspace: PathBuf,
    entries: Vec<(PathBuf, Option<Identity>)>,
}

/// What identifies one path's content closely enough to see a command replace or write it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Identity {
    device: u64,
    inode: u64,
    mode: u32,
    size: u64,
    modified_ns: i128,
    /// Where a symlink points.
    target: Option<PathBuf>,
}

/// What a command did to one protected path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// It was absent before; the files it now holds (for a directory: some of them).
    Created { path: PathBuf, named: Vec<PathBuf> },
    /// It existed and is now another file, another link, or other content.
    Changed { path: PathBuf },
    /// It existed and is gone.
    Removed { path: PathBuf },
}

impl Snapshot {
    /// The protected names of `workspace`'s project now. Blocking.
    pub fn take(workspace: &Path) -> Self {
        let entries = candidates(workspace)
            .into_iter()
            .map(|path| {
                let identity = identity(&path);
                (path, identity)
            })
            .collect();
        Self {
            workspace: workspace.to_path_buf(),
            entries,
        }
    }

    /// [`Snapshot::take`] on the blocking pool (a hung mount blocks); None if that failed.
    pub async fn take_async(workspace: &Path) -> Option<Self> {
        let workspace = workspace.to_path_buf();
        tokio::task::spawn_blocking(move || Self::take(&workspace))
            .await
            .ok()
    }

    /// The [`report`] of what changed since `snapshot`, on the blocking pool.
    pub async fn report_async(snapshot: Option<Self>) -> Option<String> {
        let snapshot = snapshot?;
        let changes = tokio::task::spawn_blocking(move || snapshot.changes())
            .await
            .ok()?;
        report(&changes)
    }

    /// What differs now from when the snapshot was taken. Blocking.
    pub fn changes(&self) -> Vec<Change> {
        let mut changes = Vec::new();
        for (path, before) in &self.entries {
            let after = identity(path);
            let shown = self.shown(path);
            match (before, after) {
                (None, None) => {}
                (None, Some(_)) => changes.push(Change::Created {
                    named: self.named_files(path),
                    path: shown,
                }),
                (Some(_), None) => changes.push(Change::Removed { path: shown }),
                (Some(before), Some(after)) if *before != after => {
                    changes.push(Change::Changed { path: shown });
                }
                (Some(_), Some(_)) => {}
            }
        }
        changes
    }

    /// `path` as the model knows it: relative to the workspace when inside it.
    fn shown(&self, path: &Path) -> PathBuf {
        path.strip_prefix(&self.workspace)
            .map_or_else(|_| path.to_path_buf(), Path::to_path_buf)
    }

    /// The files a created directory holds (git's inert `*.sample` hooks left out), at most
    /// [`MAX_NAMED_FILES`] plus one entry counting the rest; empty for a file or a symlink.
    fn named_files(&self, dir: &Path) -> Vec<PathBuf> {
        let is_dir = std::fs::symlink_metadata(dir).is_ok_and(|meta| meta.is_dir());
        if !is_dir {
            return Vec::new();
        }
        let mut files = Vec::new();
        let mut more = 0usize;
        let mut pending = vec![(dir.to_path_buf(), 0usize)];
        while let Some((current, depth)) = pending.pop() {
            let Ok(entries) = std::fs::read_dir(&current) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    if depth + 1 < MAX_NAMED_DEPTH {
                        pending.push((path, depth + 1));
                    }
                    continue;
                }
                if entry.file_name().to_string_lossy().ends_with(".sample") {
                    continue;
                }
                if files.len() < MAX_NAMED_FILES {
                    files.push(self.shown(&path));
                } else {
                    more += 1;
                }
            }
        }
        files.sort();
        if more > 0 {
            files.push(PathBuf::from(format!("{more} more")));
        }
        files
    }
}

/// The tool-result paragraph for `changes` (None when there are none): what the command
/// did, and that it does not apply until the user has seen it.
pub fn report(changes: &[Change]) -> Option<String> {
    if changes.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    for change in changes {
        let part = match change {
            Change::Created { path, named } if named.is_empty() => {
                format!("created {}", path.display())
            }
            Change::Created { named, .. } => {
                let named: Vec<String> = named
                    .iter()
                    .map(|file| file.display().to_string())
                    .collect();
                format!("created {}", named.join(", "))
            }
            Change::Changed { path } => format!("changed {}", path.display()),
            Change::Removed { path } => format!("removed {}", path.display()),
        };
        parts.push(part);
    }
    Some(format!(
        "[this command {}; project configuration written by a command does not apply until \
         the user reviews what it would apply and trusts the project again (project/trust)]",
        parts.join("; ")
    ))
}

/// Every protected name of every project directory of `workspace`, innermost first.
fn candidates(workspace: &Path) -> Vec<PathBuf> {
    agentd_core::workspace::project_dirs(workspace)
        .dirs
        .iter()
        .flat_map(|dir| PROTECTED_IN_PROJECT.iter().map(move |name| dir.join(name)))
        .collect()
}

fn identity(path: &Path) -> Option<Identity> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let target = meta
        .file_type()
        .is_symlink()
        .then(|| std::fs::read_link(path).ok())
        .flatten();
    let (device, inode, mode) = agentd_core::platform::identity(&meta);
    let modified_ns = meta.modified().ok().map_or(0, |modified| {
        match modified.duration_since(std::time::UNIX_EPOCH) {
            Ok(after) => i128::try_from(after.as_nanos()).unwrap_or(i128::MAX),
            Err(before) => -i128::try_from(before.duration().as_nanos()).unwrap_or(i128::MAX),
        }
    });
    Some(Identity {
        device,
        inode,
        mode,
        size: meta.len(),
        modified_ns,
        target,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_changed_and_removed_names_are_reported_and_others_not() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(work.join(".git/hooks")).unwrap();
        std::fs::write(work.join("AGENTS.md"), "notes").unwrap();
        std::fs::write(work.join("CLAUDE.md"), "notes").unwrap();
        let snapshot = Snapshot::take(&work);
        assert_eq!(snapshot.changes(), []);
        std::fs::create_dir_all(work.join(".claude/agents")).unwrap();
        std::fs::write(work.join(".claude/settings.json"), "{}").unwrap();
        std::fs::write(work.join(".claude/agents/a.md"), "x").unwrap();
        std::fs::write(work.join(".git/hooks/pre-commit.sample"), "x").unwrap();
        std::fs::write(work.join("AGENTS.md"), "other notes").unwrap();
        std::fs::remove_file(work.join("CLAUDE.md")).unwrap();
        std::os::unix::fs::symlink("elsewhere", work.join(".mcp.json")).unwrap();
        std::fs::create_dir(work.join("build")).unwrap();
        let changes = snapshot.changes();
        assert_eq!(
            changes,
            [
                Change::Created {
                    path: ".claude".into(),
                    named: vec![".claude/agents/a.md".into(), ".claude/settings.json".into()],
                },
                Change::Created {
                    path: ".mcp.json".into(),
                    named: vec![],
                },
                // The hooks dir's mtime: a sample written there is a change of the dir.
                Change::Changed {
                    path: ".git/hooks".into()
                },
                Change::Changed {
                    path: "AGENTS.md".into()
                },
                Change::Removed {
                    path: "CLAUDE.md".into()
                },
            ]
        );
        assert_eq!(
            report(&changes).unwrap(),
            "[this command created .claude/agents/a.md, .claude/settings.json; created \
             .mcp.json; changed .git/hooks; changed AGENTS.md; removed CLAUDE.md; project \
             configuration written by a command does not apply until the user reviews what it \
             would apply and trusts the project again (project/trust)]"
        );
        assert_eq!(report(&[]), None);
    }

    #[test]
    fn existing_names_files_and_dirs_up_to_the_git_root_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("repo");
        let work = root.join("sub/work");
        std::fs::create_dir_all(work.join(".agents")).unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        std::fs::write(root.join("AGENTS.md"), "").unwrap();
        std::fs::create_dir_all(root.join("real")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), work.join(".claude")).unwrap();
        let mut found = existing(&work);
        found.sort();
        let mut expected = vec![
            work.join(".agents"),
            root.join("real"),
            root.join(".git/hooks"),
            root.join(".git/config"),
            root.join("AGENTS.md"),
        ];
        expected.sort();
        assert_eq!(found, expected);
    }
}
