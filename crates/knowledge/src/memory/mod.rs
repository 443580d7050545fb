//! Curated memory: two small stores the model keeps across sessions with the `memory` tool,
//! `MEMORY.md` (its notes: environment facts, conventions, lessons) and `USER.md` (the user's
//! profile and preferences). Each is a list of entries ([`Entries`]) under a character limit.
//!
//! `USER.md` is the user's, in `<data dir>/memory/`. `MEMORY.md` is the project's: in the
//! project's `.agents/memory/` when it has one (the walk of `workspace::project_dirs`, nearest
//! first, our own directories only, none that a symlink leads out of the project), else in the
//! state dir under a directory keyed by the project root (`[memory] scope = "project"`, the
//! default), or the user's beside `USER.md` (`scope = "user"`); see [`location`]. The daemon's
//! own directories must be ours, not symlinks; a store file must not lead out of its directory
//! (`file::load`). What fails these is not read nor written, with a warning. `[memory] enabled
//! = false` gives sessions no memory at all. A session's system prompt holds a
//! [`MemorySnapshot`] taken when it is created; writes show in later sessions.
//!
//! [`MemoryStores`] is the one writer: each edit reads the file, applies the edit and replaces
//! the file under a lock per store path, so sessions writing at once lose no update.

mod entries;
mod file;
pub mod location;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use entries::Applied;
pub use entries::{DELIMITER, Edit, Entries, usage_text};
pub use location::Location;
use location::usable;

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

/// Whose a store is (and `[memory] scope`: whose `MEMORY.md` is when the project keeps no
/// `.agents/memory/`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scope {
    /// The user's, in `<data dir>/memory/`: shared by every project.
    User,
    /// One project root's: its `.agents/memory/`, or the daemon's directory for that root.
    #[default]
    Project,
}

/// `[memory]` of config.toml.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemorySettings {
    pub limits: MemoryLimits,
    /// `enabled = false`: no session has memory (no prompt section, no `memory` tool).
    pub disabled: bool,
    /// `scope`: whose `MEMORY.md` is when the project keeps no `.agents/memory/`.
    pub scope: Scope,
}

/// One store as read.
#[derive(Clone, Debug)]
pub struct StoreView {
    pub target: MemoryTarget,
    /// Where it is kept, and whose it is.
    pub location: Location,
    pub path: PathBuf,
    pub entries: Entries,
    pub limit: usize,
    /// Why the file could not be read (its entries are then empty here).
    pub warning: Option<String>,
}

/// Both stores of a session's directory, read at one moment.
#[derive(Clone, Debug)]
pub struct MemorySnapshot {
    /// `[memory] enabled`: false, sessions have no memory (the stores are shown all the same).
    pub enabled: bool,
    pub memory: StoreView,
    pub user: StoreView,
}

/// The daemon's memory stores: where they are, their limits, and one lock per store file.
#[derive(Debug)]
pub struct MemoryStores {
    dirs: location::Dirs,
    limits: MemoryLimits,
    disabled: bool,
    /// One writer per store file. Entries nobody holds are dropped when a new one is added,
    /// so the map holds only stores being written.
    locks: std::sync::Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
}

impl MemoryStores {
    /// The stores of the user under `data_dir` (`<data_dir>/memory/`) and of projects under
    /// `state_dir` (`<state_dir>/memory/projects/`), each directory created 0700 on its first
    /// write.
    pub fn new(data_dir: &Path, state_dir: &Path, settings: MemorySettings) -> Self {
        Self {
            dirs: location::Dirs {
                user: data_dir.join(MEMORY_DIR),
                projects: state_dir.join(MEMORY_DIR).join(location::PROJECTS_DIR),
                scope: settings.scope,
            },
            limits: settings.limits,
            disabled: settings.disabled,
            locks: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Whether sessions have memory (`[memory] enabled`).
    pub fn enabled(&self) -> bool {
        !self.disabled
    }

    /// Where sessions in `cwd` keep the `target` store. Blocking (metadata of each directory).
    pub fn locate(&self, cwd: &Path, target: MemoryTarget) -> Location {
        self.dirs.locate(cwd, target)
    }

    /// Both stores for sessions in `cwd`, as they are now. A store that cannot be read is
    /// empty, with a warning. Blocking: reads the files (no lock: files are only ever
    /// replaced whole).
    pub fn snapshot(&self, cwd: &Path) -> MemorySnapshot {
        let view = |target: MemoryTarget| {
            let location = self.locate(cwd, target);
            let refused = usable(&location).err();
            if let Some(refusal) = &refused {
                tracing::warn!("memory not read: {refusal}");
            }
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
                location,
                path,
                entries,
                limit: self.limits.of(target),
                warning,
            }
        };
        MemorySnapshot {
            enabled: self.enabled(),
            memory: view(MemoryTarget::Memory),
            user: view(MemoryTarget::User),
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
        if self.disabled {
            return Err("memory is off ([memory] enabled = false in config.toml)".to_owned());
        }
        let dirs = self.dirs.clone();
        let located = tokio::task::spawn_blocking(move || dirs.locate(&cwd, target))
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
    if !location.in_repository {
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
