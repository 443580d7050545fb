//! Trusted projects, pinned to content (like direnv's `allow`): trusting a project root pins
//! the exact content of every file there that changes what runs or what is allowed
//! ([`PINNED_FILES`]: the project settings and `.mcp.json` of each directory from the trusted
//! path up to the root, and the agent definitions of its [`PINNED_AGENT_DIRS`], whose `hooks`
//! and inline `mcpServers` run code). A pinned file applies while its content is the one trusted; a file that
//! is new or changed since is withheld (its allow rules, a looser mode, its servers) until the
//! user reviews it (`agentctl trust --show`, [`review`](TrustStore::review)) and trusts again.
//! Whatever writes those files (a tool, the shell, `git pull`, another program), nothing applies
//! unseen. Deny and ask rules of any project apply at once. The store is one small JSON file in
//! the state dir, replaced atomically on every change; a store from before pinning (a list of
//! roots) loads with nothing pinned, so its projects need one review and trust again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// The file of the trust store, in the state dir.
pub(crate) const TRUST_FILE: &str = "trusted_projects.json";

/// The most trusted roots kept: a person trusts a handful of repositories, and the store is
/// read whole at startup and written whole on every change.
pub(crate) const MAX_TRUSTED_PROJECTS: usize = 4096;

/// The files of a project directory whose content changes what runs or what is allowed, each
/// applied only while its content is pinned: project settings (rules, mode, hooks) and MCP
/// servers. Agent definitions are pinned too ([`PINNED_AGENT_DIRS`]), for their `hooks` and the
/// MCP servers their `mcpServers` defines inline only:
/// the rest of a definition can only narrow what its child may do (its mode is tightened to the
/// parent's, its tools are a subset of the parent's), so it applies without trust.
pub(crate) const PINNED_FILES: &[&str] = &[
    ".agents/settings.toml",
    ".agents/settings.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".mcp.json",
];

/// The directories of a project directory whose definitions (`*.md`) are pinned, for the
/// `hooks` and inline `mcpServers` of their frontmatter (the agent definitions' dirs of
/// `agents`).
pub const PINNED_AGENT_DIRS: &[&str] = &[".agents/agents", ".claude/agents"];

/// The most definitions pinned per agent dir (in name order); a person writes a handful.
pub(crate) const MAX_PINNED_AGENT_FILES: usize = 256;

/// The largest pinned file read: the loaders of settings and `.mcp.json` read no more either.
pub(crate) const MAX_PINNED_FILE_BYTES: usize = 1024 * 1024;

/// The largest trust file read (`MAX_TRUSTED_PROJECTS` roots with their pins fit below it).
const MAX_TRUST_FILE_BYTES: usize = 16 * 1024 * 1024;

/// The format version written; a file without one is the list of roots from before pinning.
const TRUST_FILE_VERSION: u32 = 2;

/// The roots the user trusts with their pinned files, in memory and in
/// `<state>/trusted_projects.json`.
pub struct TrustStore {
    path: PathBuf,
    /// Canonical project roots and their pins. The lock is also held while the file is written,
    /// so writes happen in the order of the changes (callers run on blocking threads).
    projects: Mutex<BTreeMap<PathBuf, Pins>>,
}

/// What trusting a project pinned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pins {
    /// Each pinned file (absolute) and the digest ([`digest`]) of the content trusted.
    pub files: BTreeMap<PathBuf, String>,
    /// Trusted before trust was pinned to content: nothing is pinned until trusted again.
    pub legacy: bool,
}

/// A project's trust as one session or run sees it: taken once, then asked per file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectTrust {
    /// The project root (`project_root`): what `project/trust` records.
    pub root: PathBuf,
    /// None: the root is not trusted.
    pub(crate) pins: Option<Pins>,
}

/// Whether one file's content, as read now, may apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileTrust {
    /// The content is the one trusted.
    Pinned,
    /// The file was trusted with other content.
    Changed,
    /// The project is trusted, this file was not part of it.
    New,
    /// The project is not trusted.
    Untrusted,
}

/// One pinned file as found now, for a review or a trust.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundFile {
    pub path: PathBuf,
    /// The content read (what the digest is of, and what a review describes).
    pub text: String,
    pub digest: String,
    /// How it compares with the pins before this review or trust.
    pub status: FileTrust,
}

/// The pinned files of a project as found now: what a trust would pin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub root: PathBuf,
    /// Whether the root was trusted before.
    pub was_trusted: bool,
    pub files: Vec<FoundFile>,
    /// Files pinned before that are gone now.
    pub removed: Vec<PathBuf>,
    /// Files that could not be read (another user's, too big): never pinned, never applied.
    pub unreadable: Vec<String>,
}

/// Why a trust change failed.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("{path} is not a directory; give a project directory")]
    NotADirectory { path: String },
    #[error(
        "{path} is not your directory (it belongs to uid {owner}); only your own projects can be trusted"
    )]
    NotYours { path: String, owner: u32 },
    #[error("{path} is on a kernel pseudo-filesystem, not a project directory")]
    PseudoFilesystem { path: String },
    #[error(
        "{MAX_TRUSTED_PROJECTS} projects are trusted already; untrust one you no longer use first"
    )]
    TooMany,
    #[error(
        "{file} changed since it was shown for review; nothing was trusted. Review it again \
         (project/trust with dryRun) and trust what it shows"
    )]
    ChangedSinceReview { file: String },
    #[error("cannot save the trusted projects: {0:#}")]
    Save(anyhow::Error),
}

/// The file format: version 2 holds the roots with their pins; version 1 (no `version`) was a
/// list of roots.
#[derive(Serialize, Deserialize, Default)]
struct TrustFile {
    #[serde(default)]
    version: u32,
    projects: Vec<ProjectEntry>,
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum ProjectEntry {
    Pinned {
        root: PathBuf,
        files: BTreeMap<PathBuf, String>,
    },
    /// A root trusted before pinning.
    Legacy(PathBuf),
}

/// The digest a pin holds of `text`: `sha256:` and its hex.
pub fn digest(text: &str) -> String {
    use sha2::Digest;
    let hash = sha2::Sha256::digest(text.as_bytes());
    let mut hex = String::with_capacity(7 + 64);
    hex.push_str("sha256:");
    for byte in hash.iter() {
        hex.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
        hex.push(char::from(b"0123456789abcdef"[usize::from(byte & 15)]));
    }
    hex
}

impl TrustStore {
    /// Reads the store from `state_dir` (blocking). A missing file is an empty store; a file
    /// that cannot be read or parsed is an error (nothing is trusted by a broken file, and the
    /// daemon says why rather than overwriting it).
    pub fn load(state_dir: &Path) -> anyhow::Result<TrustStore> {
        let path = state_dir.join(TRUST_FILE);
        let projects = match agentd_core::regular_file::read_own_text(&path, MAX_TRUST_FILE_BYTES) {
            Ok(read) => {
                let file: TrustFile = serde_json::from_str(&read.text).with_context(|| {
                    format!(
                        "{} is not a trust file; fix or remove it to trust projects again",
                        path.display()
                    )
                })?;
                file.projects
                    .into_iter()
                    .map(|entry| match entry {
                        ProjectEntry::Pinned { root, files } => (
                            root,
                            Pins {
                                files,
                                legacy: false,
                            },
                        ),
                        ProjectEntry::Legacy(root) => (
                            root,
                            Pins {
                                files: BTreeMap::new(),
                                legacy: true,
                            },
                        ),
                    })
                    .collect()
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(error) => {
                return Err(error).with_context(|| format!("cannot read {}", path.display()));
            }
        };
        Ok(TrustStore {
            path,
            projects: Mutex::new(projects),
        })
    }

    /// An empty store that saves to `state_dir` (tests, and a daemon whose file was broken).
    pub fn empty(state_dir: &Path) -> TrustStore {
        TrustStore {
            path: state_dir.join(TRUST_FILE),
            projects: Mutex::new(BTreeMap::new()),
        }
    }

    /// The trust of the project root `root` (canonical), for one session or run to ask per file.
    pub fn project(&self, root: &Path) -> ProjectTrust {
        ProjectTrust {
            root: root.to_path_buf(),
            pins: self.lock().get(root).cloned(),
        }
    }

    /// The trusted roots, sorted.
    pub fn list(&self) -> Vec<PathBuf> {
        self.lock().keys().cloned().collect()
    }

    /// The pinned files of the project `path` belongs to as found now, compared with its pins:
    /// what [`trust`](Self::trust) would pin. Blocking (reads the files).
    pub fn review(&self, path: &Path) -> Result<Found, TrustError> {
        let (canonical, root) = project_root_of(path)?;
        let project = self.project(&root);
        Ok(find_pinned_files(&canonical, &project))
    }

    /// Trusts the project `path` belongs to, pinning the content of its pinned files as found
    /// now (those of each directory from `path` up to the root; pins of other directories are
    /// kept). With `expected` (the files and digests a review showed), nothing is trusted
    /// unless exactly those are found. Returns what was found, compared with the pins before.
    /// Blocking (file I/O).
    pub fn trust(
        &self,
        path: &Path,
        expected: Option<&[(PathBuf, String)]>,
    ) -> Result<Found, TrustError> {
        let (canonical, root) = project_root_of(path)?;
        let mut projects = self.lock();
        let project = ProjectTrust {
            root: root.clone(),
            pins: projects.get(&root).cloned(),
        };
        let found = find_pinned_files(&canonical, &project);
        if let Some(expected) = expected {
            check_expected(&found, expected)?;
        }
        if project.pins.is_none() && projects.len() >= MAX_TRUSTED_PROJECTS {
            return Err(TrustError::TooMany);
        }
        let mut pins = project.pins.unwrap_or_default();
        pins.legacy = false;
        let dirs = chain(&canonical);
        pins.files
            .retain(|path, _| !dirs.iter().any(|dir| pinned_in(dir, path)));
        for file in &found.files {
            pins.files.insert(file.path.clone(), file.digest.clone());
        }
        let mut updated = projects.clone();
        updated.insert(root, pins);
        self.save(&updated).map_err(TrustError::Save)?;
        *projects = updated;
        Ok(found)
    }

    /// Untrusts the project `path` belongs to (or `path` itself, when it is a trusted root
    /// that no longer exists); returns the root and whether it was trusted. Blocking.
    pub fn untrust(&self, path: &Path) -> Result<(PathBuf, bool), TrustError> {
        let root = match project_root_of(path) {
            Ok((_, root)) => root,
            Err(_) => path.to_path_buf(),
        };
        let mut projects = self.lock();
        if !projects.contains_key(&root) {
            return Ok((root, false));
        }
        let mut updated = projects.clone();
        updated.remove(&root);
        self.save(&updated).map_err(TrustError::Save)?;
        *projects = updated;
        Ok((root, true))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<PathBuf, Pins>> {
        // A panic while holding the lock leaves a consistent map (it is replaced whole).
        self.projects
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Replaces the store with `projects` (0600, `atomic_file`).
    fn save(&self, projects: &BTreeMap<PathBuf, Pins>) -> anyhow::Result<()> {
        let file = TrustFile {
            version: TRUST_FILE_VERSION,
            projects: projects
                .iter()
                .map(|(root, pins)| ProjectEntry::Pinned {
                    root: root.clone(),
                    files: pins.files.clone(),
                })
                .collect(),
        };
        let bytes = serde_json::to_vec_pretty(&file)?;
        agentd_core::atomic_file::replace_atomically(&self.path, &bytes, 0o600)
            .with_context(|| format!("cannot replace {}", self.path.display()))
    }
}

impl ProjectTrust {
    /// The trust of a project nobody trusted (tests, and sessions without a store).
    pub fn untrusted(root: &Path) -> ProjectTrust {
        ProjectTrust {
            root: root.to_path_buf(),
            pins: None,
        }
    }

    /// The trust of the project of `workspace` (canonical) with every pinned file pinned as it
    /// is now: what trusting it would give (tests; `test-support` feature). Blocking.
    #[cfg(any(test, feature = "test-support"))]
    pub fn pin_as_found(workspace: &Path) -> ProjectTrust {
        let root = project_root(workspace);
        let found = find_pinned_files(workspace, &ProjectTrust::untrusted(&root));
        let files = found
            .files
            .into_iter()
            .map(|file| (file.path, file.digest))
            .collect();
        ProjectTrust {
            root,
            pins: Some(Pins {
                files,
                legacy: false,
            }),
        }
    }

    /// Whether the root is trusted at all (each file still needs its pin).
    pub fn trusted(&self) -> bool {
        self.pins.is_some()
    }

    /// Whether `file` (absolute), read now as `text`, may apply.
    pub fn verdict(&self, file: &Path, text: &str) -> FileTrust {
        self.verdict_of_digest(file, &digest(text))
    }

    /// Whether `file` (absolute), whose content read now has the [`digest`] `content`, may
    /// apply (for a file read elsewhere, an agent definition, whose digest was kept).
    pub fn verdict_of_digest(&self, file: &Path, content: &str) -> FileTrust {
        let Some(pins) = &self.pins else {
            return FileTrust::Untrusted;
        };
        match pins.files.get(file) {
            Some(pinned) if pinned == content => FileTrust::Pinned,
            Some(_) => FileTrust::Changed,
            None => FileTrust::New,
        }
    }

    /// Why `file` with `verdict` (not pinned) does not apply, as the first half of a warning:
    /// "`/r/.mcp.json` changed since you trusted /r".
    pub fn why_withheld(&self, file: &Path, verdict: FileTrust) -> String {
        let root = self.root.display();
        let file = file.display();
        match verdict {
            FileTrust::Pinned => format!("{file} is trusted"),
            FileTrust::Changed => format!("{file} changed since you trusted {root}"),
            FileTrust::New if self.pins.as_ref().is_some_and(|pins| pins.legacy) => format!(
                "{file} was not reviewed: {root} was trusted before trust was pinned to file contents"
            ),
            FileTrust::New => format!("{file} is new since you trusted {root}"),
            FileTrust::Untrusted => format!("project {root} is not trusted"),
        }
    }

    /// What to do about a withheld file, the second half of a warning.
    pub fn how_to_trust(&self) -> String {
        let root = self.root.display();
        format!(
            "review what it would apply with `agentctl trust --show {root}`, then trust it with \
             `agentctl trust {root}`"
        )
    }
}

/// The directories whose pinned files a trust of `canonical` covers: from it up to the root
/// (the settings dirs of `workspace::project_dirs`).
fn chain(canonical: &Path) -> Vec<PathBuf> {
    agentd_core::workspace::project_dirs(canonical)
        .settings_dirs()
        .to_vec()
}

/// The pinned files of the chain of `canonical`, read now and compared with `project`'s pins.
fn find_pinned_files(canonical: &Path, project: &ProjectTrust) -> Found {
    let mut found = Found {
        root: project.root.clone(),
        was_trusted: project.trusted(),
        files: Vec::new(),
        removed: Vec::new(),
        unreadable: Vec::new(),
    };
    for dir in chain(canonical) {
        let listed = pinned_paths(&dir);
        if let Some(pins) = &project.pins {
            // A pinned definition that is gone (an agent dir is listed, not named).
            found.removed.extend(
                pins.files
                    .keys()
                    .filter(|path| agent_dir_of(&dir, path) && !listed.contains(path))
                    .cloned(),
            );
        }
        for path in listed {
            match agentd_core::regular_file::read_own_text(&path, MAX_PINNED_FILE_BYTES) {
                Ok(read) if read.truncated => found.unreadable.push(format!(
                    "{}: larger than {MAX_PINNED_FILE_BYTES} bytes, never read",
                    path.display()
                )),
                Ok(read) => {
                    let status = project.verdict(&path, &read.text);
                    found.files.push(FoundFile {
                        digest: digest(&read.text),
                        text: read.text,
                        path,
                        status,
                    });
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    if project
                        .pins
                        .as_ref()
                        .is_some_and(|pins| pins.files.contains_key(&path))
                    {
                        found.removed.push(path);
                    }
                }
                Err(error) => found
                    .unreadable
                    .push(format!("{}: {error}", path.display())),
            }
        }
    }
    found
}

/// The files of the project directory `dir` that trust pins: its [`PINNED_FILES`] (present or
/// not) and the definitions (`*.md`) found in its [`PINNED_AGENT_DIRS`], in name order, at
/// most [`MAX_PINNED_AGENT_FILES`] per dir. Blocking (lists the dirs).
fn pinned_paths(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = PINNED_FILES.iter().map(|name| dir.join(name)).collect();
    for agents in PINNED_AGENT_DIRS {
        let Ok(entries) = std::fs::read_dir(dir.join(agents)) else {
            continue;
        };
        let mut definitions: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|extension| extension == "md"))
            .collect();
        definitions.sort();
        definitions.truncate(MAX_PINNED_AGENT_FILES);
        paths.extend(definitions);
    }
    paths
}

/// Whether `path` is a definition file directly in one of `dir`'s [`PINNED_AGENT_DIRS`].
fn agent_dir_of(dir: &Path, path: &Path) -> bool {
    path.extension().is_some_and(|extension| extension == "md")
        && PINNED_AGENT_DIRS
            .iter()
            .any(|agents| path.parent() == Some(dir.join(agents).as_path()))
}

/// Whether `path` is one of the files trust pins for the project directory `dir`.
fn pinned_in(dir: &Path, path: &Path) -> bool {
    PINNED_FILES.iter().any(|name| dir.join(name) == path) || agent_dir_of(dir, path)
}

/// Whether `found` is exactly `expected` (each path with its digest).
fn check_expected(found: &Found, expected: &[(PathBuf, String)]) -> Result<(), TrustError> {
    for file in &found.files {
        let shown = expected.iter().find(|(path, _)| *path == file.path);
        if shown.is_none_or(|(_, digest)| *digest != file.digest) {
            return Err(TrustError::ChangedSinceReview {
                file: protocol::error::echo(&file.path.display().to_string()).into_owned(),
            });
        }
    }
    if let Some((gone, _)) = expected
        .iter()
        .find(|(path, _)| !found.files.iter().any(|file| file.path == *path))
    {
        return Err(TrustError::ChangedSinceReview {
            file: protocol::error::echo(&gone.display().to_string()).into_owned(),
        });
    }
    Ok(())
}

/// The canonical `path` and its project root: its git root (the walk of
/// `workspace::project_dirs`), or the directory itself outside a repository. Only a directory
/// of the user's own on a real filesystem is a project. Blocking.
pub(crate) fn project_root_of(path: &Path) -> Result<(PathBuf, PathBuf), TrustError> {
    // The path is the client's: quoted in errors at most `protocol::error::echo` long.
    let shown = || protocol::error::echo(&path.display().to_string()).into_owned();
    let canonical =
        std::fs::canonicalize(path).map_err(|_| TrustError::NotADirectory { path: shown() })?;
    let metadata =
        std::fs::metadata(&canonical).map_err(|_| TrustError::NotADirectory { path: shown() })?;
    if !metadata.is_dir() {
        return Err(TrustError::NotADirectory { path: shown() });
    }
    if !agentd_core::regular_file::owned_by_us(&metadata) {
        return Err(TrustError::NotYours {
            path: shown(),
            owner: agentd_core::platform::owner_of(&metadata),
        });
    }
    if agentd_core::platform::on_pseudo_filesystem(&canonical) {
        return Err(TrustError::PseudoFilesystem { path: shown() });
    }
    let root = project_root(&canonical);
    Ok((canonical, root))
}

/// The project root of a canonical workspace: the git root, or the workspace itself.
pub fn project_root(workspace: &Path) -> PathBuf {
    let dirs = agentd_core::workspace::project_dirs(workspace);
    match (dirs.in_repository, dirs.dirs.last()) {
        (true, Some(root)) => root.clone(),
        _ => workspace.to_path_buf(),
    }
}

#[cfg(test)]
mod tests;
