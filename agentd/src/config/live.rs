//! The live configuration: the [`Config`] in use, swapped whole when config.toml changes to a
//! valid file and kept when it changes to an invalid one (the error is kept beside it, with its
//! file:line:col). Readers take a snapshot (`Arc<Config>`): what they assemble from it (a run,
//! an MCP start) keeps those settings for its whole life, and the next reader sees the new
//! ones. The lock is a std `RwLock` held only to clone or swap an `Arc`, never across an await.
//!
//! Reloads (the file watch, SIGHUP, `daemon/reload`) go through [`LiveConfig::reload`], one at
//! a time. The watch polls the file's identity ([`Fingerprint`]: device, inode, size, mtime)
//! instead of using inotify (`notify`): it needs no dependency, sees a file that does not exist
//! yet, a file replaced by rename (as editors save) and a directory made later, and costs one
//! stat a second. A change is reloaded once it held still for one poll, so a file caught
//! half-written is not reported invalid.

use agentd_policy::process::shell_program::set_windows_shell;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use super::Config;

/// How often the watch looks at config.toml: an edit applies within two of these (one to see
/// it, one to see it held still), and a stat a second costs nothing.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// The environment a reload reads (provider keys, `${VAR}` of MCP entries).
pub type Env = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The configuration in use and how the file stands against it.
pub struct LiveConfig {
    path: PathBuf,
    env: Env,
    state: RwLock<Arc<ConfigState>>,
    /// The configuration the daemon started with (the defaults if the file was unusable): the
    /// settings read only at start are compared with it.
    started: Arc<Config>,
    /// One reload at a time (the watch, a signal and a request may meet).
    reloading: tokio::sync::Mutex<()>,
}

/// What is loaded, from which file content, and what became of the last read.
#[derive(Clone, Debug)]
pub struct ConfigState {
    /// The configuration in use, or why there is none (the file was unusable from the start).
    pub config: Result<Arc<Config>, String>,
    /// When the configuration in use was loaded.
    pub loaded_at: SystemTime,
    /// The text the configuration in use was made of (None: there was no file).
    loaded_text: Option<String>,
    /// The file as last read, whether it loaded or not.
    read: Fingerprint,
    /// Why the file as last read is not in use (it does not load).
    pub error: Option<String>,
    /// Settings the file changes that apply only at a restart.
    pub needs_restart: Vec<String>,
}

/// How config.toml stands against the configuration in use (`daemon/status`'s `configState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileState {
    /// The file is what is loaded.
    Current,
    /// The file differs from what is loaded: not read yet, or it changes settings that apply
    /// only at a restart.
    Changed,
    /// The file as last read does not load; the previous configuration stays in use.
    Invalid,
}

/// The identity of the file at a moment: a change of any part is an edit to look at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fingerprint {
    /// None: no file (or it cannot be inspected).
    identity: Option<(u64, u64, u64, Option<std::time::SystemTime>)>,
}

/// What a reload did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReloadOutcome {
    /// A new configuration is in use.
    Reloaded,
    /// The file holds what is already in use.
    Unchanged,
    /// The file does not load; the previous configuration stays.
    Invalid,
}

/// The report of one reload.
#[derive(Clone, Debug)]
pub struct Reload {
    pub outcome: ReloadOutcome,
    /// Why the file does not load (`Invalid`).
    pub error: Option<String>,
    /// Settings that changed but apply only at a restart.
    pub needs_restart: Vec<String>,
    /// The configuration in use now, if any.
    pub current: Option<Arc<Config>>,
    /// Whether the state changed from invalid to current without a new configuration (the
    /// file went back to what is in use).
    pub recovered: bool,
}

impl Fingerprint {
    /// The fingerprint of what `std::fs::metadata` said of the file.
    pub fn of(metadata: std::io::Result<std::fs::Metadata>) -> Fingerprint {
        Fingerprint {
            identity: metadata.ok().map(|meta| {
                let (device, inode, _) = agentd_core::platform::identity(&meta);
                (device, inode, meta.len(), meta.modified().ok())
            }),
        }
    }

    /// The file at `path` now, without blocking the runtime.
    pub async fn now(path: &Path) -> Fingerprint {
        Fingerprint::of(tokio::fs::metadata(path).await)
    }
}

impl LiveConfig {
    /// Loads config.toml at `path` once, at start (blocking: before any client). An unusable
    /// file is kept as the error, and the daemon serves what needs no configuration.
    pub fn load(path: PathBuf, env: Env) -> LiveConfig {
        let read = Fingerprint::of(std::fs::metadata(&path));
        let text = super::read_text(&path);
        let config = match &text {
            Ok(text) => super::from_text(Some(&path), text.as_deref(), &*env)
                .map(Arc::new)
                .map_err(|err| err.to_string()),
            Err(err) => Err(err.to_string()),
        };
        if let Err(err) = &config {
            tracing::error!("configuration error: {err}");
        }
        // What the daemon is built with while the file is unusable: the environment alone.
        let started = match &config {
            Ok(config) => Arc::clone(config),
            Err(_) => Arc::new(super::without_file(&path, &*env)),
        };
        set_windows_shell(started.windows_shell);
        let state = ConfigState {
            error: config.as_ref().err().cloned(),
            config,
            loaded_at: SystemTime::now(),
            loaded_text: text.ok().flatten(),
            read,
            needs_restart: Vec::new(),
        };
        LiveConfig {
            path,
            env,
            state: RwLock::new(Arc::new(state)),
            started,
            reloading: tokio::sync::Mutex::new(()),
        }
    }

    /// The configuration in use now, or why there is none. Cheap: an `Arc` clone.
    pub fn snapshot(&self) -> Result<Arc<Config>, String> {
        self.state().config.clone()
    }

    /// The whole state now.
    pub fn state(&self) -> Arc<ConfigState> {
        match self.state.read() {
            Ok(state) => Arc::clone(&state),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// The configuration the daemon started with (what the settings read once came from).
    pub fn started(&self) -> &Config {
        &self.started
    }

    /// Where config.toml is looked for.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How the file on disk stands against what is loaded now.
    pub async fn file_state(&self) -> FileState {
        let now = Fingerprint::now(&self.path).await;
        self.state().file_state(now)
    }

    /// Whether the watch should reload: the file is not what was last read, and it is what the
    /// previous poll saw (`previous`, updated here), so it held still for one interval.
    pub async fn poll(&self, previous: &mut Option<Fingerprint>) -> bool {
        let now = Fingerprint::now(&self.path).await;
        let held_still = *previous == Some(now);
        *previous = Some(now);
        held_still && now != self.state().read
    }

    /// Reads config.toml again: a valid new configuration is swapped in, an invalid one is
    /// kept as the error beside the configuration in use, the same text changes nothing.
    pub async fn reload(&self) -> Reload {
        let _one_at_a_time = self.reloading.lock().await;
        let path = self.path.clone();
        let env = Arc::clone(&self.env);
        let read = tokio::task::spawn_blocking(move || {
            let read = Fingerprint::of(std::fs::metadata(&path));
            let text = super::read_text(&path).map_err(|err| err.to_string());
            let parsed = text.as_ref().ok().map(|text| {
                super::from_text(Some(&path), text.as_deref(), &*env).map_err(|e| e.to_string())
            });
            (read, text, parsed)
        })
        .await;
        let (fingerprint, text, parsed) = match read {
            Ok(read) => read,
            Err(join) => {
                let error = format!("{}: the reload failed: {join}", self.path.display());
                (Fingerprint::default(), Err(error), None)
            }
        };
        let previous = self.state();
        let (next, reload) = transition(&previous, &self.started, fingerprint, text, parsed);
        if let Ok(config) = &next.config {
            // The shell applies to the next script: nothing holds it.
            set_windows_shell(config.windows_shell);
        }
        match self.state.write() {
            Ok(mut state) => *state = Arc::new(next),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(next),
        }
        reload
    }
}

impl ConfigState {
    /// How the file with fingerprint `now` stands against this state.
    pub fn file_state(&self, now: Fingerprint) -> FileState {
        if now != self.read {
            FileState::Changed
        } else if self.error.is_some() {
            FileState::Invalid
        } else if !self.needs_restart.is_empty() {
            FileState::Changed
        } else {
            FileState::Current
        }
    }
}

/// The state after reading the file (`fingerprint`, `text`; `parsed` when it was read) over
/// `state`, and the report of what happened. Pure, so the state machine is tested alone.
fn transition(
    state: &ConfigState,
    started: &Config,
    fingerprint: Fingerprint,
    text: Result<Option<String>, String>,
    parsed: Option<Result<Config, String>>,
) -> (ConfigState, Reload) {
    let current = state.config.as_ref().ok().cloned();
    let mut next = ConfigState {
        read: fingerprint,
        ..state.clone()
    };
    let invalid = |mut next: ConfigState, error: String| {
        next.error = Some(error.clone());
        let reload = Reload {
            outcome: ReloadOutcome::Invalid,
            error: Some(error),
            needs_restart: next.needs_restart.clone(),
            current: current.clone(),
            recovered: false,
        };
        (next, reload)
    };
    let text = match text {
        Ok(text) => text,
        Err(error) => return invalid(next, error),
    };
    if current.is_some() && text == state.loaded_text {
        next.error = None;
        let reload = Reload {
            outcome: ReloadOutcome::Unchanged,
            error: None,
            needs_restart: next.needs_restart.clone(),
            current,
            recovered: state.error.is_some(),
        };
        return (next, reload);
    }
    match parsed {
        Some(Ok(config)) => {
            let config = Arc::new(config);
            next.needs_restart = super::restart_only::changed(started, &config);
            next.config = Ok(Arc::clone(&config));
            next.loaded_at = SystemTime::now();
            next.loaded_text = text;
            next.error = None;
            let reload = Reload {
                outcome: ReloadOutcome::Reloaded,
                error: None,
                needs_restart: next.needs_restart.clone(),
                current: Some(config),
                recovered: false,
            };
            (next, reload)
        }
        Some(Err(error)) => invalid(next, error),
        None => invalid(next, "the file was not read".to_owned()),
    }
}

#[cfg(test)]
#[path = "live_tests.rs"]
mod tests;
