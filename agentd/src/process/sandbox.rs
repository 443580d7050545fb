//! The shell's sandbox (`[sandbox]` in config.toml): what the kernel offers, found once at
//! startup ([`ShellSandbox::probe`]), said in `daemon/status` ([`ShellSandbox::status`]), and
//! the [`Confinement`] each `run_shell` child applies to itself before exec
//! ([`ShellSandbox::prepare`]).
//!
//! With Landlock the shell writes only in the session's workspace (`.git` included), the temp
//! dir, the devices a shell needs and the dirs `[sandbox] writable` lists; it reads and runs
//! everything else. Landlock cannot carve a read-only subtree out of a writable one, so the
//! workspace's `.agents/`, `.claude/` and `skills/` are read-only bind mounts in a mount
//! namespace of the child, where the kernel lets us make one. `[sandbox] network = false`
//! denies TCP bind and connect (Landlock ABI 4 and later). Without Landlock the shell runs as
//! before, and the status says why.

use std::ffi::{CString, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use landlock::{
    ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, path_beneath_rules,
};

pub use super::confine::Confinement;
use super::confine::{Namespaces, ReadOnlyMounts};

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

/// Workspace directories the shell may read but not write: the project's agent settings
/// and skills, which would otherwise let a command loosen the policy of the next run.
pub const READ_ONLY_IN_WORKSPACE: [&str; 3] = [".agents", ".claude", "skills"];

/// Devices a shell writes or opens for writing in ordinary use; directories among them are
/// writable below.
const WRITABLE_DEVICES: [&str; 9] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// The Landlock ABI from which TCP bind and connect can be denied.
const FIRST_NETWORK_ABI: i32 = 4;

/// The daemon's sandbox for `run_shell`: the configuration and what this kernel enforces.
#[derive(Debug)]
pub struct ShellSandbox {
    config: SandboxConfig,
    support: Support,
}

/// What the kernel lets the daemon enforce, found at startup.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Support {
    /// No sandbox, and why (said in `daemon/status`).
    None(String),
    Landlock {
        abi: i32,
        /// How the child makes read-only mounts, or why it cannot.
        mounts: Result<Namespaces, String>,
    },
}

impl ShellSandbox {
    /// No sandbox, for `reason` (tests and contexts built without a daemon).
    pub fn none(reason: &str) -> Self {
        Self {
            config: SandboxConfig {
                enabled: false,
                ..SandboxConfig::default()
            },
            support: Support::None(reason.to_owned()),
        }
    }

    /// Finds what this kernel offers for `config`: the Landlock ABI, then whether a child may
    /// make a mount namespace (tried once, in a short-lived child).
    pub async fn probe(config: SandboxConfig) -> Self {
        let support = if !config.enabled {
            Support::None("disabled in config ([sandbox] enabled = false)".to_owned())
        } else {
            match landlock_abi() {
                Err(why) => Support::None(why),
                Ok(abi) => Support::Landlock {
                    abi,
                    mounts: probe_mounts().await,
                },
            }
        };
        match &support {
            Support::None(why) => tracing::warn!("run_shell is not sandboxed: {why}"),
            Support::Landlock {
                mounts: Err(why), ..
            } => tracing::warn!("run_shell's .agents/, .claude/ and skills/ stay writable: {why}"),
            Support::Landlock { .. } => {}
        }
        let sandbox = Self { config, support };
        tracing::info!(sandbox = %sandbox.status(), "shell sandbox");
        sandbox
    }

    /// `landlock abi N` and what is enforced, or `none: <why>` (`daemon/status`).
    pub fn status(&self) -> String {
        match &self.support {
            Support::None(why) => format!("none: {why}"),
            Support::Landlock { abi, mounts } => {
                let mut status = format!("landlock abi {abi}");
                match mounts {
                    Ok(_) => status.push_str(", read-only .agents/.claude/skills"),
                    Err(why) => {
                        status.push_str(&format!(", .agents/.claude/skills writable ({why})"));
                    }
                }
                if !self.config.network {
                    if *abi >= FIRST_NETWORK_ABI {
                        status.push_str(", network denied");
                    } else {
                        status.push_str(&format!(
                            ", network allowed (denying it needs landlock abi {FIRST_NETWORK_ABI})"
                        ));
                    }
                }
                status
            }
        }
    }

    /// The shell's environment: `base` plus the `[sandbox] pass_env` variables the daemon has.
    pub fn shell_env(&self, mut base: Vec<(OsString, OsString)>) -> Vec<(OsString, OsString)> {
        for name in &self.config.pass_env {
            if let Some(value) = std::env::var_os(name) {
                base.retain(|(existing, _)| existing.as_os_str() != name.as_str());
                base.push((name.into(), value));
            }
        }
        base
    }

    /// What a shell in `workspace` applies to itself, or None when there is no sandbox. Opens
    /// every allowed path (on the blocking pool: a path on a hung network mount blocks).
    pub async fn prepare(self: &Arc<Self>, workspace: &Path) -> io::Result<Option<Confinement>> {
        let Support::Landlock { abi, mounts } = &self.support else {
            return Ok(None);
        };
        let (abi, mounts) = (*abi, mounts.clone().ok());
        let sandbox = Arc::clone(self);
        let workspace = workspace.to_path_buf();
        tokio::task::spawn_blocking(move || sandbox.confinement(abi, mounts, &workspace))
            .await
            .map_err(io::Error::other)?
            .map(Some)
    }

    fn confinement(
        &self,
        abi: i32,
        namespaces: Option<Namespaces>,
        workspace: &Path,
    ) -> io::Result<Confinement> {
        let ruleset = self
            .ruleset(abi, workspace)
            .map_err(|error| io::Error::other(format!("landlock ruleset: {error}")))?;
        let mounts = match namespaces {
            Some(namespaces) => Some(read_only_mounts(namespaces, workspace)?),
            None => None,
        };
        Ok(Confinement { mounts, ruleset })
    }

    fn ruleset(&self, abi: i32, workspace: &Path) -> Result<std::os::fd::OwnedFd, String> {
        let abi_level = ABI::from(abi);
        let error = |error: landlock::RulesetError| error.to_string();
        let mut ruleset = Ruleset::default()
            .handle_access(AccessFs::from_all(abi_level))
            .map_err(error)?;
        if !self.config.network && abi >= FIRST_NETWORK_ABI {
            ruleset = ruleset
                .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
                .map_err(error)?;
        }
        let mut writable = vec![workspace.to_path_buf(), std::env::temp_dir()];
        writable.extend(self.config.writable.iter().cloned());
        writable.extend(WRITABLE_DEVICES.iter().map(PathBuf::from));
        let created = ruleset
            .create()
            .map_err(error)?
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi_level)))
            .map_err(error)?
            .add_rules(path_beneath_rules(writable, AccessFs::from_all(abi_level)))
            .map_err(error)?;
        Option::<std::os::fd::OwnedFd>::from(created)
            .ok_or_else(|| "the kernel did not create a ruleset".to_owned())
    }
}

/// The kernel's Landlock ABI version, or why there is none.
fn landlock_abi() -> Result<i32, String> {
    /// `LANDLOCK_CREATE_RULESET_VERSION` from `<linux/landlock.h>`.
    const CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute and the version flag the call only returns a number.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if abi > 0 {
        return i32::try_from(abi).map_err(|_| format!("unexpected landlock abi {abi}"));
    }
    let error = io::Error::last_os_error();
    Err(match error.raw_os_error() {
        Some(libc::ENOSYS) => "the kernel has no landlock".to_owned(),
        Some(libc::EOPNOTSUPP) => {
            "landlock is disabled in this kernel (boot with lsm=landlock,…)".to_owned()
        }
        _ => format!("landlock is unavailable: {error}"),
    })
}

/// Whether a child can make read-only bind mounts: tried for real on the temp dir (in the
/// child's own namespace, so nothing changes outside), without then with a user namespace.
async fn probe_mounts() -> Result<Namespaces, String> {
    let root = std::env::temp_dir();
    let mut failures = Vec::new();
    // SAFETY: geteuid has no preconditions.
    let candidates: &[Namespaces] = if unsafe { libc::geteuid() } == 0 {
        &[Namespaces::MountOnly, Namespaces::UserAndMount]
    } else {
        &[Namespaces::UserAndMount]
    };
    for &namespaces in candidates {
        let root = root.clone();
        let mounts = tokio::task::spawn_blocking(move || read_only_mounts_of(namespaces, &[root]))
            .await
            .map_err(|error| error.to_string())
            .and_then(|mounts| mounts.map_err(|error| error.to_string()));
        let result = match mounts {
            Ok(mounts) => super::try_in_child(move || mounts.enter()).await,
            Err(error) => Err(io::Error::other(error)),
        };
        match result {
            Ok(()) => return Ok(namespaces),
            Err(error) => failures.push(format!("{namespaces:?}: {error}")),
        }
    }
    Err(format!(
        "no mount namespace: {}",
        failures.join("; ").to_lowercase()
    ))
}

/// The workspace's read-only dirs that exist (symlinks resolved, so a link to a dir elsewhere
/// is covered where it points).
fn read_only_mounts(namespaces: Namespaces, workspace: &Path) -> io::Result<ReadOnlyMounts> {
    let dirs: Vec<PathBuf> = READ_ONLY_IN_WORKSPACE
        .iter()
        .filter_map(|name| std::fs::canonicalize(workspace.join(name)).ok())
        .filter(|dir| dir.is_dir())
        .collect();
    read_only_mounts_of(namespaces, &dirs)
}

fn read_only_mounts_of(namespaces: Namespaces, dirs: &[PathBuf]) -> io::Result<ReadOnlyMounts> {
    let mut prepared = Vec::with_capacity(dirs.len());
    for dir in dirs {
        let path = CString::new(dir.as_os_str().as_bytes()).map_err(io::Error::other)?;
        prepared.push((path.clone(), kept_mount_flags(&path)?));
    }
    // SAFETY: getuid and getgid have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    Ok(ReadOnlyMounts {
        namespaces,
        dirs: prepared,
        uid_map: format!("{uid} {uid} 1").into_bytes(),
        gid_map: format!("{gid} {gid} 1").into_bytes(),
    })
}

/// The flags of the mount holding `path` that a read-only remount must repeat: in a user
/// namespace the kernel refuses to clear them.
fn kept_mount_flags(path: &CString) -> io::Result<libc::c_ulong> {
    // SAFETY: statvfs fills the zeroed struct; the path is NUL-terminated.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    Ok(pairs
        .into_iter()
        .filter(|(st, _)| stat.f_flag & st != 0)
        .fold(0, |flags, (_, ms)| flags | ms))
}

#[cfg(test)]
#[path = "sandbox_tests.rs"]
mod tests;
