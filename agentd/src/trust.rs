//! Trusted projects: the project roots whose `.agents/settings.*` may loosen policy (allow
//! rules, a more permissive default mode). Deny and ask rules of any project apply at once; the
//! rest waits until the user trusts the root (`project/trust`). The store is one small JSON
//! file in the state dir, replaced atomically on every change.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// The file of the trust store, in the state dir.
pub const TRUST_FILE: &str = "trusted_projects.json";

/// The most trusted roots kept: a person trusts a handful of repositories, and the store is
/// read whole at startup and written whole on every change.
pub const MAX_TRUSTED_PROJECTS: usize = 4096;

/// The largest trust file read (`MAX_TRUSTED_PROJECTS` long paths fit well below it).
const MAX_TRUST_FILE_BYTES: usize = 16 * 1024 * 1024;

/// The roots the user trusts, kept in memory and in `<state>/trusted_projects.json`.
pub struct TrustStore {
    path: PathBuf,
    /// Canonical project roots. The lock is also held while the file is written, so writes
    /// happen in the order of the changes (callers run on blocking threads).
    roots: Mutex<BTreeSet<PathBuf>>,
}

/// Why a trust change failed.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("{path} is not a directory; give a project directory")]
    NotADirectory { path: String },
    #[error(
        "{MAX_TRUSTED_PROJECTS} projects are trusted already; untrust one you no longer use first"
    )]
    TooMany,
    #[error("cannot save the trusted projects: {0:#}")]
    Save(anyhow::Error),
}

/// The file format: a list of roots.
#[derive(Serialize, Deserialize, Default)]
struct TrustFile {
    projects: Vec<PathBuf>,
}

impl TrustStore {
    /// Reads the store from `state_dir` (blocking). A missing file is an empty store; a file
    /// that cannot be read or parsed is an error (nothing is trusted by a broken file, and the
    /// daemon says why rather than overwriting it).
    pub fn load(state_dir: &Path) -> anyhow::Result<TrustStore> {
        let path = state_dir.join(TRUST_FILE);
        let roots = match crate::regular_file::read_own_text(&path, MAX_TRUST_FILE_BYTES) {
            Ok(read) => {
                let file: TrustFile = serde_json::from_str(&read.text).with_context(|| {
                    format!(
                        "{} is not a trust file; fix or remove it to trust projects again",
                        path.display()
                    )
                })?;
                file.projects.into_iter().collect()
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => BTreeSet::new(),
            Err(error) => {
                return Err(error).with_context(|| format!("cannot read {}", path.display()));
            }
        };
        Ok(TrustStore {
            path,
            roots: Mutex::new(roots),
        })
    }

    /// An empty store that saves to `state_dir` (tests, and a daemon whose file was broken).
    pub fn empty(state_dir: &Path) -> TrustStore {
        TrustStore {
            path: state_dir.join(TRUST_FILE),
            roots: Mutex::new(BTreeSet::new()),
        }
    }

    /// Whether `root` (a canonical project root) is trusted.
    pub fn is_trusted(&self, root: &Path) -> bool {
        self.lock().contains(root)
    }

    /// The trusted roots, sorted.
    pub fn list(&self) -> Vec<PathBuf> {
        self.lock().iter().cloned().collect()
    }

    /// Trusts the project `path` belongs to; returns its root. Blocking (file I/O).
    pub fn trust(&self, path: &Path) -> Result<PathBuf, TrustError> {
        let root = project_root_of(path)?;
        let mut roots = self.lock();
        if roots.contains(&root) {
            return Ok(root);
        }
        if roots.len() >= MAX_TRUSTED_PROJECTS {
            return Err(TrustError::TooMany);
        }
        let mut updated = roots.clone();
        updated.insert(root.clone());
        self.save(&updated).map_err(TrustError::Save)?;
        *roots = updated;
        Ok(root)
    }

    /// Untrusts the project `path` belongs to (or `path` itself, when it is a trusted root
    /// that no longer exists); returns the root and whether it was trusted. Blocking.
    pub fn untrust(&self, path: &Path) -> Result<(PathBuf, bool), TrustError> {
        let root = match project_root_of(path) {
            Ok(root) => root,
            Err(_) => path.to_path_buf(),
        };
        let mut roots = self.lock();
        if !roots.contains(&root) {
            return Ok((root, false));
        }
        let mut updated = roots.clone();
        updated.remove(&root);
        self.save(&updated).map_err(TrustError::Save)?;
        *roots = updated;
        Ok((root, true))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<PathBuf>> {
        // A panic while holding the lock leaves a consistent set (it is replaced whole).
        self.roots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Writes `roots` to a temp file (0600), syncs it, renames it over the store and syncs
    /// the directory.
    fn save(&self, roots: &BTreeSet<PathBuf>) -> anyhow::Result<()> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = TrustFile {
            projects: roots.iter().cloned().collect(),
        };
        let bytes = serde_json::to_vec_pretty(&file)?;
        let temp = self
            .path
            .with_file_name(format!(".{TRUST_FILE}.{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&temp);
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
            .with_context(|| format!("cannot create {}", temp.display()))?;
        out.write_all(&bytes)
            .and_then(|()| out.sync_all())
            .with_context(|| format!("cannot write {}", temp.display()))?;
        drop(out);
        std::fs::rename(&temp, &self.path)
            .with_context(|| format!("cannot replace {}", self.path.display()))?;
        if let Some(dir) = self.path.parent() {
            std::fs::File::open(dir)
                .and_then(|dir| dir.sync_all())
                .with_context(|| format!("cannot sync directory {}", dir.display()))?;
        }
        Ok(())
    }
}

/// The project root of `path`: its git root (the walk of `permission::project_dirs`), or the
/// directory itself outside a repository. Canonical. Blocking.
pub fn project_root_of(path: &Path) -> Result<PathBuf, TrustError> {
    let not_a_directory = || TrustError::NotADirectory {
        path: path.display().to_string(),
    };
    let canonical = std::fs::canonicalize(path).map_err(|_| not_a_directory())?;
    if !canonical.is_dir() {
        return Err(not_a_directory());
    }
    Ok(project_root(&canonical))
}

/// The project root of a canonical workspace: the git root, or the workspace itself.
pub fn project_root(workspace: &Path) -> PathBuf {
    let dirs = crate::permission::project_dirs(workspace);
    match (dirs.in_repository, dirs.dirs.last()) {
        (true, Some(root)) => root.clone(),
        _ => workspace.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_persists_and_untrust_removes() {
        let state = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir(repo.path().join(".git")).unwrap();
        std::fs::create_dir(repo.path().join("sub")).unwrap();
        let root = std::fs::canonicalize(repo.path()).unwrap();

        let store = TrustStore::load(state.path()).unwrap();
        assert_eq!(store.trust(&repo.path().join("sub")).unwrap(), root);
        assert!(store.is_trusted(&root));

        let reloaded = TrustStore::load(state.path()).unwrap();
        assert_eq!(reloaded.list(), vec![root.clone()]);
        assert_eq!(reloaded.untrust(repo.path()).unwrap(), (root.clone(), true));
        assert!(!reloaded.is_trusted(&root));
        assert!(TrustStore::load(state.path()).unwrap().list().is_empty());
    }

    #[test]
    fn a_missing_directory_cannot_be_trusted() {
        let state = tempfile::tempdir().unwrap();
        let store = TrustStore::empty(state.path());
        let error = store.trust(&state.path().join("nowhere")).unwrap_err();
        assert!(error.to_string().contains("not a directory"), "{error}");
    }
}
