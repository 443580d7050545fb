//! Where a store of a session in a directory is: `USER.md` always in the user's
//! `<data dir>/memory/`; `MEMORY.md` in the project's own `.agents/memory/` when the project has
//! one, else, with `[memory] scope = "project"` (the default), in the daemon's state dir under
//! a directory keyed by the project root (`<state dir>/memory/projects/<name>-<hash>/`), so what
//! one repository teaches stays out of every other one's prompt and nothing is written into a
//! repository that did not ask for it; with `scope = "user"`, in the user's directory.

use std::path::{Path, PathBuf};

use super::{MEMORY_DIR, MemoryTarget, Scope};

/// Where the stores of one project are kept under the state dir's `memory/`.
pub(crate) const PROJECTS_DIR: &str = "projects";

/// Hex digits of the root's SHA-256 in a project's directory name: enough that two roots never
/// share one, short enough to read.
const KEY_HEX_DIGITS: usize = 16;

/// Characters of the root's last component kept in the directory name (for a person looking).
const KEY_NAME_CHARS: usize = 40;

/// Where one store of a session is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub dir: PathBuf,
    pub scope: Scope,
    /// The project root it is kept for (a project's store).
    pub project_root: Option<PathBuf>,
    /// In the repository's own `.agents/memory/`, not a directory of the daemon's.
    pub in_repository: bool,
}

/// The directories the stores are kept in.
#[derive(Clone, Debug)]
pub(crate) struct Dirs {
    /// `<data dir>/memory`: the user's stores.
    pub(crate) user: PathBuf,
    /// `<state dir>/memory/projects`: one directory per project root.
    pub(crate) projects: PathBuf,
    /// Where `MEMORY.md` goes when the project keeps no `.agents/memory/`.
    pub(crate) scope: Scope,
}

impl Dirs {
    /// Where the `target` store of sessions in `cwd` is. Blocking (metadata of each directory
    /// up to the project root).
    pub(crate) fn locate(&self, cwd: &Path, target: MemoryTarget) -> Location {
        let user = Location {
            dir: self.user.clone(),
            scope: Scope::User,
            project_root: None,
            in_repository: false,
        };
        if target == MemoryTarget::User {
            return user;
        }
        if let Some(location) = in_repository(cwd) {
            return location;
        }
        match self.scope {
            Scope::User => user,
            Scope::Project => {
                let root = project_root(cwd);
                Location {
                    dir: self.projects.join(key(&root)),
                    scope: Scope::Project,
                    project_root: Some(root),
                    in_repository: false,
                }
            }
        }
    }
}

/// The root a project's memory is kept for: the git root of `cwd`, or `cwd` outside a
/// repository (as trust names projects).
pub(crate) fn project_root(cwd: &Path) -> PathBuf {
    let dirs = agentd_core::workspace::project_dirs(cwd);
    match (dirs.in_repository, dirs.dirs.last()) {
        (true, Some(root)) => root.clone(),
        _ => cwd.to_path_buf(),
    }
}

/// The directory name of `root`'s stores: its last component (letters, digits, `-`, `_`, `.`
/// kept, others `_`) and a hash of the whole path.
pub(crate) fn key(root: &Path) -> String {
    use sha2::Digest;
    let name: String = root
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".to_owned())
        .chars()
        .take(KEY_NAME_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let hash = sha2::Sha256::digest(root.as_os_str().as_encoded_bytes());
    let hex: String = hash
        .iter()
        .flat_map(|byte| [byte >> 4, byte & 15])
        .take(KEY_HEX_DIGITS)
        .map(|nibble| char::from(b"0123456789abcdef"[usize::from(nibble)]))
        .collect();
    format!("{}-{hex}", name.trim_start_matches('.'))
}

/// The nearest `.agents/memory/` directory of ours from `cwd` up to the git root (the walk of
/// `workspace::project_dirs`). A project's directory a symlink leads out of the project is not
/// used (a warning says where it leads), like one of another user.
fn in_repository(cwd: &Path) -> Option<Location> {
    let project = agentd_core::workspace::project_dirs(cwd);
    for dir in &project.dirs {
        let candidate = dir.join(".agents").join(MEMORY_DIR);
        if candidate.symlink_metadata().is_err() {
            continue;
        }
        let containment = project.containment_for(dir);
        let inside = agentd_core::regular_file::resolves_within(&candidate, containment);
        if inside && agentd_core::regular_file::is_own_dir(&candidate) {
            return Some(Location {
                dir: candidate,
                scope: Scope::Project,
                project_root: Some(dir.clone()),
                in_repository: true,
            });
        }
        if !inside {
            tracing::warn!(
                dir = %candidate.display(),
                "project memory not used: it leads out of {} through a symbolic link (to {}); \
                 the daemon's own directory is used instead",
                containment.display(),
                where_it_leads(&candidate)
            );
        } else {
            tracing::warn!(
                dir = %candidate.display(),
                "project memory not used: it is not a directory of ours (another user's, or a file)"
            );
        }
    }
    None
}

/// Whether the stores of `location` may be read and written: a directory of the daemon's
/// (the user's, or a project's under the state dir), when it exists, must be ours and no
/// symlink (the daemon makes it 0700 itself); a repository's was checked by [`in_repository`].
/// The error says why not and what to do.
pub(crate) fn usable(location: &Location) -> Result<(), String> {
    if location.in_repository {
        return Ok(());
    }
    let dir = &location.dir;
    let Ok(metadata) = dir.symlink_metadata() else {
        return Ok(());
    };
    if metadata.file_type().is_symlink() {
        return Err(format!(
            "{} is a symbolic link (to {}), and memory is kept only in a directory of agentd's \
             own; remove the link (agentd makes the directory again)",
            dir.display(),
            where_it_leads(dir)
        ));
    }
    if !agentd_core::regular_file::is_own_real_dir(dir) {
        return Err(format!(
            "{} is not a directory of ours (uid {} owns it, or it is a file), and memory is kept \
             only in a directory of agentd's own; remove it (agentd makes it again)",
            dir.display(),
            agentd_core::platform::owner_of(&metadata)
        ));
    }
    Ok(())
}

/// Where a symlink at `path` leads, for messages.
fn where_it_leads(path: &Path) -> String {
    path.canonicalize()
        .or_else(|_| std::fs::read_link(path))
        .map(|real| real.display().to_string())
        .unwrap_or_else(|_| "somewhere unknown".to_owned())
}
