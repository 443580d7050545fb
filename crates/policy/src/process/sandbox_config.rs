//! `[sandbox]` of config.toml, the same on every platform (on Windows nothing enforces it yet
//! but `pass_env`).

use std::ffi::OsString;
use std::path::PathBuf;

/// `[sandbox]` of config.toml.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxConfig {
    /// `enabled = false` runs the shell unconfined (the permission mode never does).
    pub enabled: bool,
    /// `network = false` denies the shell TCP bind and connect where Landlock can (ABI ≥ 4).
    pub network: bool,
    /// Absolute directories the shell may write besides the workspace and the temp dir.
    pub writable: Vec<PathBuf>,
    /// Environment variables passed to the shell besides the scrubbed basics (API keys stay
    /// out unless listed here).
    pub pass_env: Vec<String>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            network: true,
            writable: Vec::new(),
            pass_env: Vec::new(),
        }
    }
}

/// `[sandbox]` as written in config.toml.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    enabled: Option<bool>,
    network: Option<bool>,
    #[serde(default)]
    writable: Vec<PathBuf>,
    #[serde(default)]
    pass_env: Vec<String>,
}

impl SandboxSection {
    /// The configuration it sets: `~/x` in `writable` is below `home`, and every path there
    /// must be absolute (the error names the key and what to write).
    pub fn resolve(mut self, home: Option<PathBuf>) -> Result<SandboxConfig, String> {
        for dir in &mut self.writable {
            if let (Ok(rest), Some(home)) = (dir.strip_prefix("~"), &home) {
                *dir = home.join(rest);
            }
        }
        if let Some(relative) = self.writable.iter().find(|dir| !dir.is_absolute()) {
            return Err(format!(
                "sandbox.writable: {} is not an absolute path; write the full path (or ~/…)",
                relative.display()
            ));
        }
        let defaults = SandboxConfig::default();
        Ok(SandboxConfig {
            enabled: self.enabled.unwrap_or(defaults.enabled),
            network: self.network.unwrap_or(defaults.network),
            writable: self.writable,
            pass_env: self.pass_env,
        })
    }
}

/// `base` plus the `[sandbox] pass_env` variables the daemon has (a shell's environment).
pub(crate) fn with_pass_env(
    config: &SandboxConfig,
    mut base: Vec<(OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    for name in &config.pass_env {
        if let Some(value) = std::env::var_os(name) {
            base.retain(|(existing, _)| existing.as_os_str() != name.as_str());
            base.push((name.into(), value));
        }
    }
    base
}
