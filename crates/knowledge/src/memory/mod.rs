//! Curated memory: two small stores the model keeps across sessions with the `memory` tool,
//! `MEMORY.md` (its notes: environment facts, conventions, lessons) and `USER.md` (the user's
//! profile and preferences). Each is a list of entries ([`Entries`]) under a character limit.
//!
//! The stores live in `<data dir>/memory/` (one pair per user), or in the project's
//! `.agents/memory/` when the session's project has one (the walk of
//! `workspace::project_dirs`, nearest first, our own directories only, none that a symlink
//! leads out of the project). The user's `<data dir>/memory/` must be a directory of ours,
//! not a symlink; a store file must not lead out of its directory (`file::load`). What fails
//! these is not read nor written, with a warning. A session's system prompt holds a
//! [`MemorySnapshot`] taken when it is created; writes show in later sessions.
//!
//! [`MemoryStores`] is the one writer: each edit reads the file, applies the edit and replaces
//! the file under a lock per store path, so sessions writing at once lose no update.

mod entries;
mod file;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use entries::Applied;
pub use entries::{DELIMITER, Edit, Entries, usage_text};

/// Default limit of `MEMORY.md` in characters (delimiters included): enough for a few dozen
/// facts, small enough to sit in every request.
pub const DEFAULT_MEMORY_CHARS: usize = 2_200;
/// Default limit of `USER.md`: a profile, not a diary.
pub const DEFAULT_USER_CHARS: usize = 1_375;
/// Largest limit config.toml may set: the stores go into every request of every session.
pub const MAX_STORE_CHARS: usize = 100_000;

/// The store directory's name under the data dir and under a project's `.agents/`.
const MEMORY_DIR: &str = "memory";

/// Which store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MemoryTarget {
    /// Your notes: environment, conventions, lessons.
    Memory,
    /// The user's profile and preferences.
    User,
}

impl MemoryTarget {
    pub fn file_name(self) -> &'static str {
        match self {
            MemoryTarget::Memory => "MEMORY.md",
            MemoryTarget::User => "USER.md",
        }
    }
}

/// Character limits of the stores (`[memory]` of config.toml).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryLimits {
    /// `memory_chars`: limit of `MEMORY.md`.
    pub memory_chars: usize,
    /// `user_chars`: limit of `USER.md`.
    pub user_chars: usize,
}

impl Default for MemoryLimits {
    fn default() -> Self {
        Self {
            memory_chars: DEFAULT_MEMORY_CHARS,
            user_chars: DEFAULT_USER_CHARS,
        }
    }
}

impl MemoryLimits {
    pub(crate) fn of(self, target: MemoryTarget) -> usize {
        match target {
            MemoryTarget::Memory => self.memory_chars,
            MemoryTarget::User => self.user_chars,
        }
    }
}

/// Whose stores a session uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// `<data dir>/memory/`.
    User,
    /// The project's `.agents/memory/`.
    Project,
}

/// Where a session's stores are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub dir: PathBuf,
    pub scope: Scope,
}

/// One store as read.
#[derive(Clone, Debug)]
pub struct StoreView {
    pub target: MemoryTarget,
    pub path: PathBuf,
    pub entries: Entries,
    pub limit: usize,
    /// Why the file could not be read (its entries are then empty here).
    pub warning: Option<String>,
}

/// Both stores of a location, read at one moment.
#[derive(Clone, Debug)]
pub struct MemorySnapshot {
    pub location: Location,
    pub memory: StoreView,
    pub user: StoreView,
}

/// The daemon's memory stores: where they are, their limits, and one lock per store file.
#[derive(Debug)]
pub struct MemoryStores {
    /// `<data dir>/memory`: the user's stores.
    user_dir: PathBuf,
    limits: MemoryLimits,
    /// One writer per store file. Entries nobody holds are dropped when a new one is added,
    /// so the map holds only stores being written.
    locks: std::sync::Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
}

impl MemoryStores {
    /// The stores under `data_dir` (`<data_dir>/memory/`, created 0700 on the first write).
    pub fn new(data_dir: &Path, limits: MemoryLimits) -> Self {
        Self {
            user_dir: data_dir.join(MEMORY_DIR),
            limits,
            locks: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Where sessions in `cwd` keep memory: the nearest `.agents/memory/` directory of ours
    /// from `cwd` up to the git root, else the user's. Blocking (metadata of each directory).
    pub(crate) fn locate(&self, cwd: &Path) -> Location {
        locate(&self.user_dir, cwd)
    }

    /// Both stores for sessions in `cwd`, as they are now. A store that cannot be read is
    /// empty, with a warning. Blocking: reads the files (no lock: files are only ever
    /// replaced whole).
    pub fn snapshot(&self, cwd: &Path) -> MemorySnapshot {
        let location = self.locate(cwd);
        let refused = usable(&location).err();
        if let Some(refusal) = &refused {
            tracing::warn!("memory not read: {refusal}");
        }
        let view = |target: MemoryTarget| {
            let path = location.dir.join(target.file_name());
            let loaded = match &refused {
                Some(refusal) => Err(anyhow::anyhow!("{refusal}")),
                None => file::load(&path),
            };
            let (entries, warning) = match loaded {
                Ok(loaded) if loaded.truncated => (
                    loaded.entries,
                    Some(format!(
                        "{} is larger than {} bytes; only its start was read",
                        path.display(),
                        file::MAX_FILE_BYTES
                    )),
                ),
                Ok(loaded) => (loaded.entries, None),
                Err(error) => {
                    tracing::warn!("memory store not read: {error:#}");
                    (Entries::default(), Some(format!("{error:#}")))
                }
            };
            StoreView {
                target,
                path,
                entries,
                limit: self.limits.of(target),
                warning,
            }
        };
        MemorySnapshot {
            memory: view(MemoryTarget::Memory),
            user: view(MemoryTarget::User),
            location,
        }
    }

    /// Applies `edit` to the `target` store of sessions in `cwd`: reads the file, edits,
    /// replaces it, all under the store's lock. The text says what happened, for the model;
    /// `Err` when nothing was saved.
    pub async fn edit(
        &self,
        cwd: PathBuf,
        target: MemoryTarget,
        edit: Edit,
    ) -> Result<String, String> {
        let user_dir = self.user_dir.clone();
        let located = tokio::task::spawn_blocking(move || locate(&user_dir, &cwd))
            .await
            .map_err(|error| format!("cannot find the memory directory: {error}"))?;
        let path = located.dir.join(target.file_name());
        let guard = self.lock_for(&path).lock_owned().await;
        let limit = self.limits.of(target);
        tokio::task::spawn_blocking(move || {
            // Held until the file is replaced, even if the caller stops waiting.
            let _guard = guard;
            edit_file(&located, &path, target, &edit, limit)
        })
        .await
        .map_err(|error| format!("cannot save memory: {error}"))?
    }

    /// The lock of one store file.
    fn lock_for(&self, path: &Path) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self
            .locks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(lock) = locks.get(path) {
            return lock.clone();
        }
        locks.retain(|_, lock| Arc::strong_count(lock) > 1);
        let lock = Arc::new(tokio::sync::Mutex::new(()));
        locks.insert(path.to_path_buf(), lock.clone());
        lock
    }
}

/// See [`MemoryStores::locate`]. A project's directory a symlink leads out of the project is
/// not used (a warning says where it leads), like one of another user.
fn locate(user_dir: &Path, cwd: &Path) -> Location {
    let project = agentd_core::workspace::project_dirs(cwd);
    for dir in &project.dirs {
        let candidate = dir.join(".agents").join(MEMORY_DIR);
        if candidate.symlink_metadata().is_err() {
            continue;
        }
        let containment = project.containment_for(dir);
        let inside = agentd_core::regular_file::resolves_within(&candidate, containment);
        if inside && agentd_core::regular_file::is_own_dir(&candidate) {
            return Location {
                dir: candidate,
                scope: Scope::Project,
            };
        }
        if !inside {
            tracing::warn!(
                dir = %candidate.display(),
                "project memory not used: it leads out of {} through a symbolic link (to {}); \
                 the user's memory is used instead",
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
    Location {
        dir: user_dir.to_path_buf(),
        scope: Scope::User,
    }
}

/// Whether the stores of `location` may be read and written: the user's directory, when it
/// exists, must be ours and no symlink (the daemon makes it 0700 itself); a project's was
/// checked by [`locate`]. The error says why not and what to do.
fn usable(location: &Location) -> Result<(), String> {
    if location.scope == Scope::Project {
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
            std::os::unix::fs::MetadataExt::uid(&metadata)
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

/// Read, edit and replace one store file (the caller holds its lock). Blocking.
fn edit_file(
    location: &Location,
    path: &Path,
    target: MemoryTarget,
    edit: &Edit,
    limit: usize,
) -> Result<String, String> {
    let name = target.file_name();
    usable(location).map_err(|refusal| format!("cannot save memory: {refusal}"))?;
    if location.scope == Scope::User {
        agentd_core::paths::prepare_private_dir(&location.dir)
            .map_err(|error| format!("cannot save memory: {error:#}"))?;
    }
    let loaded = file::load(path).map_err(|error| format!("cannot read memory: {error:#}"))?;
    if loaded.truncated {
        return Err(format!(
            "{} is larger than {} bytes, so it is not edited here (the rest would be lost); \
             ask the user to shorten it by hand",
            path.display(),
            file::MAX_FILE_BYTES
        ));
    }
    let mut entries = loaded.entries;
    let applied = entries
        .apply(edit, name, limit)
        .map_err(|refusal| refusal.0)?;
    let usage = usage_text(entries.usage(), limit);
    if applied == Applied::AlreadySaved {
        return Ok(format!(
            "already saved: {name} has this exact entry, nothing changed ({usage})"
        ));
    }
    file::save(path, &entries).map_err(|error| format!("cannot save memory: {error:#}"))?;
    let done = match edit {
        Edit::Add { .. } => format!("saved to {name}"),
        Edit::Replace { .. } => format!("replaced the entry in {name}"),
        Edit::Remove { .. } => format!("removed the entry from {name}"),
    };
    Ok(format!(
        "{done} ({usage}). Sessions started from now on see it in their system prompt; this \
         session keeps the snapshot taken when it started."
    ))
}

#[cfg(test)]
#[path = "entries_tests.rs"]
mod entries_tests;

#[cfg(test)]
#[path = "stores_tests.rs"]
mod stores_tests;
