//! The shell's sandbox on Windows: none yet. `daemon/status` says so, and the permission
//! rules, approvals and the workspace checks of the file tools still apply; `[sandbox]
//! pass_env` is honoured.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::ProcessSpec;
pub use super::sandbox_config::{SandboxConfig, SandboxSection};

/// What a child enters before it runs: nothing on Windows (the type has no values).
#[derive(Debug)]
pub enum Confinement {}

/// Why the shell runs unconfined here, as `daemon/status` says it.
const NO_SANDBOX: &str = "no sandbox on Windows yet (permission rules and approvals still apply)";

/// The daemon's sandbox for `run_shell`: the configuration only.
#[derive(Debug)]
pub struct ShellSandbox {
    config: SandboxConfig,
    reason: String,
}

impl ShellSandbox {
    /// No sandbox, for `reason`.
    pub fn none(reason: &str) -> Self {
        Self {
            config: SandboxConfig {
                enabled: false,
                ..SandboxConfig::default()
            },
            reason: reason.to_owned(),
        }
    }

    /// Nothing to probe: there is no sandbox on Windows.
    pub async fn probe(config: SandboxConfig, _daemon_socket: Option<PathBuf>) -> Self {
        let reason = if config.enabled {
            NO_SANDBOX.to_owned()
        } else {
            "disabled in config ([sandbox] enabled = false)".to_owned()
        };
        tracing::warn!("run_shell is not sandboxed: {reason}");
        Self { config, reason }
    }

    /// `none: <why>` (`daemon/status`).
    pub fn status(&self) -> String {
        format!("none: {}", self.reason)
    }

    /// The shell's environment: `base` plus the `[sandbox] pass_env` variables the daemon has.
    pub(crate) fn shell_env(&self, base: Vec<(OsString, OsString)>) -> Vec<(OsString, OsString)> {
        super::sandbox_config::with_pass_env(&self.config, base)
    }

    /// `spec` with `pass_env`; nothing confines it.
    pub async fn apply(self: &Arc<Self>, mut spec: ProcessSpec) -> io::Result<ProcessSpec> {
        spec.env = self.shell_env(spec.env);
        Ok(spec)
    }

    /// `spec` as it is: nothing confines a server either.
    pub async fn confine_server(
        self: &Arc<Self>,
        spec: ProcessSpec,
        _workspace: &Path,
    ) -> io::Result<ProcessSpec> {
        Ok(spec)
    }
}
