//! Checkpoints of a workspace's files, so a session can see what its runs changed (`diff`) and
//! go back (`rewind`), whatever changed them: `write_file`, `edit_file`, a shell command, an MCP
//! tool, a person.
//!
//! Each workspace gets a private git object store under the state dir
//! (`<state>/checkpoints/<hash of the root>/`), driven through the `git` command with its own
//! `GIT_DIR` and index and the workspace as work tree: never the user's `.git`, whose
//! directories git itself never enters. Why git and why its command: its index keeps each
//! file's stat data, so a checkpoint of a 10,000-file tree where little changed is one
//! directory walk and no file reads (the cost that matters, run before each writing tool
//! batch); its object store deduplicates content across checkpoints; `.gitignore` is honoured
//! as users expect; and the command is on every developer machine, where a library would add a
//! large dependency to build for the same work. A checkpoint is the tree of the files, or, when
//! files were left out, a commit of it with a fixed identity and date whose message lists them;
//! either way its id is a function of the files alone. Without `git`, checkpoints are off and
//! `daemon/status` says why.
//!
//! Left out, and reported: files over `[checkpoints] max_file_bytes`, nested repositories; a
//! workspace with more than `max_files` changed or new files at once is not checkpointed (the
//! run goes on; a warning says so), nor is a home directory or `/` as workspace.

mod compare;
mod git;
mod restore;
mod restore_fs;
mod snapshot;
#[cfg(test)]
mod tests;

pub use compare::{Change, ChangeKind};
pub use git::GitError;
pub use restore::{RestorePlan, Restored};
pub use snapshot::{SkipReason, Skipped, Snapshot};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use git::Git;

/// A file bigger than this is not put in a checkpoint (`[checkpoints] max_file_bytes`).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// More changed or new files than this at once and the checkpoint is not taken
/// (`[checkpoints] max_files`): a workspace that big wants a `.gitignore`.
pub const DEFAULT_MAX_FILES: usize = 100_000;

/// `[checkpoints]` of config.toml.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointSettings {
    pub enabled: bool,
    pub max_file_bytes: u64,
    pub max_files: usize,
}

impl Default for CheckpointSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_files: DEFAULT_MAX_FILES,
        }
    }
}

/// A path relative to the workspace root, as git gives it (bytes, `/`-separated).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelPath(pub Vec<u8>);

impl RelPath {
    pub fn display(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }

    pub fn as_path(&self) -> &Path {
        agentd_core::platform::path_from_bytes(&self.0)
    }

    fn from_path(path: &Path) -> RelPath {
        RelPath(path.as_os_str().as_encoded_bytes().to_vec())
    }
}

/// Why a checkpoint (or a comparison) could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// Checkpoints are off (config, no git): the reason.
    #[error("{0}")]
    Off(String),
    /// This workspace is not checkpointed: why.
    #[error("{0}")]
    Refused(String),
    #[error(
        "more than {max_files} files changed or new at once; checkpoints of this workspace are skipped (add a .gitignore for generated files, or raise [checkpoints] max_files)"
    )]
    TooManyFiles { max_files: usize },
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("{0}")]
    Internal(String),
}

/// What `daemon/status` says of checkpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointStatus {
    pub enabled: bool,
    /// Why they are off.
    pub reason: Option<String>,
}

/// The daemon's checkpoint stores, one per workspace root, made on first use.
pub struct Checkpoints {
    dir: PathBuf,
    settings: CheckpointSettings,
    /// `git --version`, or why git cannot be used; asked on first use.
    git: tokio::sync::OnceCell<Result<String, String>>,
    stores: Mutex<HashMap<PathBuf, Arc<Store>>>,
    /// Home, never checkpointed as a whole.
    home: Option<PathBuf>,
}

/// One workspace's store; one checkpoint at a time (they share its index).
struct Store {
    git: Git,
    state: tokio::sync::Mutex<StoreState>,
}

#[derive(Default)]
struct StoreState {
    ready: bool,
    last: Option<Snapshot>,
    /// A checkpoint that timed out or met too many files: why, and since when. Until
    /// [`REFUSAL_LASTS`] has passed the next ones are refused at once instead of each batch
    /// waiting for the same failure.
    refused: Option<(std::time::Instant, String)>,
}

/// How long a workspace whose checkpoint timed out or met too many files is not tried again.
pub const REFUSAL_LASTS: std::time::Duration = std::time::Duration::from_secs(600);

impl Checkpoints {
    /// The stores under `dir` (`<state>/checkpoints`), with `settings`; `home` is the user's
    /// home directory (a workspace that is home, or `/`, is never checkpointed).
    pub fn new(dir: PathBuf, settings: CheckpointSettings, home: Option<PathBuf>) -> Arc<Self> {
        Arc::new(Self {
            dir,
            settings,
            git: tokio::sync::OnceCell::new(),
            stores: Mutex::new(HashMap::new()),
            home,
        })
    }

    pub fn settings(&self) -> CheckpointSettings {
        self.settings
    }

    /// Whether checkpoints are taken, else why not (asks git once).
    pub async fn status(&self) -> CheckpointStatus {
        match self.usable().await {
            Ok(()) => CheckpointStatus {
                enabled: true,
                reason: None,
            },
            Err(reason) => CheckpointStatus {
                enabled: false,
                reason: Some(reason),
            },
        }
    }

    async fn usable(&self) -> Result<(), String> {
        if !self.settings.enabled {
            return Err("checkpoints are off ([checkpoints] enabled = false)".to_owned());
        }
        let probed = self
            .git
            .get_or_init(|| async { git::probe(&std::env::temp_dir()).await })
            .await;
        probed.as_ref().map(|_| ()).map_err(Clone::clone)
    }

    async fn store(&self, workspace: &Path) -> Result<Arc<Store>, CheckpointError> {
        self.usable().await.map_err(CheckpointError::Off)?;
        let workspace = workspace.to_path_buf();
        let root = tokio::task::spawn_blocking(move || workspace.canonicalize())
            .await
            .map_err(|error| CheckpointError::Internal(error.to_string()))?
            .map_err(|error| {
                CheckpointError::Refused(format!("the workspace cannot be read: {error}"))
            })?;
        if root == Path::new("/") || self.home.as_deref() == Some(root.as_path()) {
            return Err(CheckpointError::Refused(format!(
                "{} is not checkpointed (a home directory or / as workspace); start the session in a project directory to have checkpoints",
                root.display()
            )));
        }
        // The store inside the workspace would be checkpointed into itself, growing each time.
        if self.dir.starts_with(&root) {
            return Err(CheckpointError::Refused(format!(
                "{} is not checkpointed: the daemon's state dir ({}) is inside it",
                root.display(),
                self.dir.display()
            )));
        }
        let mut stores = self
            .stores
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let store = stores.entry(root.clone()).or_insert_with(|| {
            Arc::new(Store {
                git: Git {
                    git_dir: self.dir.join(store_name(&root)),
                    work_tree: root,
                },
                state: tokio::sync::Mutex::new(StoreState::default()),
            })
        });
        Ok(Arc::clone(store))
    }

    /// Takes a checkpoint of `workspace` now.
    pub async fn snapshot(&self, workspace: &Path) -> Result<Snapshot, CheckpointError> {
        let store = self.store(workspace).await?;
        let mut state = store.state.lock().await;
        if let Some((since, why)) = &state.refused {
            if since.elapsed() < REFUSAL_LASTS {
                return Err(CheckpointError::Refused(why.clone()));
            }
            state.refused = None;
        }
        if !state.ready {
            init(&self.dir, &store.git).await?;
            state.ready = true;
        }
        match snapshot::take(&store.git, &self.settings, state.last.as_ref()).await {
            Ok(snapshot) => {
                state.last = Some(snapshot.clone());
                Ok(snapshot)
            }
            Err(error) => {
                if matches!(
                    error,
                    CheckpointError::TooManyFiles { .. }
                        | CheckpointError::Git(GitError::TimedOut { .. })
                ) {
                    let why = format!(
                        "{error}; not tried again for {} minutes",
                        REFUSAL_LASTS.as_secs() / 60
                    );
                    state.refused = Some((std::time::Instant::now(), why));
                }
                Err(error)
            }
        }
    }

    /// The paths that differ from checkpoint `from` to `to` of `workspace`.
    pub async fn changes(
        &self,
        workspace: &Path,
        from: &str,
        to: &str,
    ) -> Result<Vec<Change>, CheckpointError> {
        let store = self.store(workspace).await?;
        compare::changes(&store.git, from, to).await
    }

    /// The unified diff from checkpoint `from` to `to`, at most `limit` bytes (and whether it
    /// was cut).
    pub async fn diff(
        &self,
        workspace: &Path,
        from: &str,
        to: &str,
        limit: usize,
    ) -> Result<(String, bool), CheckpointError> {
        let store = self.store(workspace).await?;
        compare::unified(&store.git, from, to, limit).await
    }

    /// What bringing `workspace` (now `current`) back to checkpoint `target` would do; `last`
    /// is the session's last checkpoint.
    pub async fn plan(
        &self,
        workspace: &Path,
        target: &str,
        current: &Snapshot,
        last: Option<&str>,
    ) -> Result<RestorePlan, CheckpointError> {
        let store = self.store(workspace).await?;
        restore::plan(&store.git, target, current, last).await
    }

    /// Carries out `plan` on `workspace`.
    pub async fn apply(
        &self,
        workspace: &Path,
        plan: &RestorePlan,
    ) -> Result<Restored, CheckpointError> {
        let store = self.store(workspace).await?;
        // No checkpoint of this workspace meanwhile: it would record a half-restored tree.
        let _state = store.state.lock().await;
        restore::apply(&store.git, plan).await
    }
}

/// The store's directory name for `root`: a hash of the path (stable across releases).
fn store_name(root: &Path) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(root.as_os_str().as_encoded_bytes());
    digest[..12].iter().map(|b| format!("{b:02x}")).collect()
}

/// The store's git config: nothing that runs code, nothing that rewrites content, no gc (the
/// objects of checkpoints are reachable from session files only).
const STORE_CONFIG: &str = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = false\n\tautocrlf = false\n\tsymlinks = true\n\tfsmonitor = false\n\tquotepath = false\n[gc]\n\tauto = 0\n";

/// Makes the store's repository if it does not exist yet (private, like all state).
async fn init(dir: &Path, git: &Git) -> Result<(), CheckpointError> {
    let dir = dir.to_path_buf();
    let git_dir = git.git_dir.clone();
    let root = git.work_tree.clone();
    let exists = tokio::task::spawn_blocking(move || -> Result<bool, CheckpointError> {
        agentd_core::paths::prepare_private_dir(&dir)
            .map_err(|error| CheckpointError::Internal(format!("{error:#}")))?;
        let recorded = git_dir.join("agentd-root");
        match std::fs::read(&recorded) {
            Ok(bytes) => {
                if bytes != root.as_os_str().as_encoded_bytes() {
                    return Err(CheckpointError::Internal(format!(
                        "the checkpoint store {} belongs to another workspace",
                        git_dir.display()
                    )));
                }
                Ok(git_dir.join("objects").is_dir())
            }
            Err(_) => Ok(false),
        }
    })
    .await
    .map_err(|error| CheckpointError::Internal(error.to_string()))??;
    if exists {
        // A git killed with the daemon (kill -9 mid-checkpoint) leaves its lock: nothing else
        // uses this store (one daemon per user, one checkpoint at a time), so it is stale.
        let lock = git.git_dir.join("index.lock");
        let _ = tokio::task::spawn_blocking(move || std::fs::remove_file(lock)).await;
        return Ok(());
    }
    git.run(&["init", "-q", "--template="], None, 4096).await?;
    let git_dir = git.git_dir.clone();
    let root = git.work_tree.clone();
    tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        agentd_core::atomic_file::replace_atomically(
            &git_dir.join("config"),
            STORE_CONFIG.as_bytes(),
            0o600,
        )?;
        agentd_core::atomic_file::replace_atomically(
            &git_dir.join("agentd-root"),
            root.as_os_str().as_encoded_bytes(),
            0o600,
        )
    })
    .await
    .map_err(|error| CheckpointError::Internal(error.to_string()))?
    .map_err(|error| {
        CheckpointError::Internal(format!("cannot set up the checkpoint store: {error}"))
    })?;
    Ok(())
}
