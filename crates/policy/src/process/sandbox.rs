//! The shell's sandbox (`[sandbox]` in config.toml): what the kernel offers, found once at
//! startup ([`ShellSandbox::probe`]), said in `daemon/status` ([`ShellSandbox::status`]), and
//! the [`Confinement`] each `run_shell` child applies to itself before exec
//! ([`ShellSandbox::apply`]).
//!
//! With Landlock the shell writes only in the session's workspace (`.git` included), the temp
//! dir, the devices a shell needs (and GPU devices, for CUDA and ROCm programs) and the dirs
//! `[sandbox] writable` lists; it reads and runs everything else. Landlock cannot carve a
//! read-only subtree out of a writable one, so the project's configuration
//! ([`super::protected`]: `.agents/`, `.claude/`, `skills/`, `.mcp.json`, `.git/hooks/`,
//! `.git/config`, `AGENTS.md`, `CLAUDE.md` of the workspace up to its git root; those that
//! exist when the command starts, files as well as dirs: a mount needs something to cover, and
//! a file's mount also refuses its unlink and a rename over it) is made of read-only bind
//! mounts in a mount namespace of the child, where the kernel lets us make one, and the
//! daemon's socket is covered there by `/dev/null`. `[sandbox] network = false` denies
//! TCP bind and connect (Landlock ABI 4 and later). From ABI 6 the shell is scoped: it cannot
//! signal a process outside its sandbox (the daemon, the user's other programs) nor connect to
//! an abstract unix socket made outside it. Without Landlock the shell runs as before, and the
//! status says why.

use std::ffi::{CString, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use landlock::{
    ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
    path_beneath_rules,
};

use super::ProcessSpec;
pub use super::confine::Confinement;
pub(crate) use super::confine::Namespaces;
use super::confine::ReadOnlyMounts;
pub use super::sandbox_config::{SandboxConfig, SandboxSection};

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

/// Where [`gpu_devices`] looks.
const DEVICE_DIR: &str = "/dev";

/// Names in `/dev` of GPU compute devices (NVIDIA's `nvidia*`, the DRM dir, AMD's `kfd`):
/// CUDA and ROCm open them read-write and drive them with ioctls, so a confined shell could
/// not run GPU programs without them.
fn is_gpu_device(name: &str) -> bool {
    name.starts_with("nvidia") || name == "dri" || name == "kfd"
}

/// The GPU device files and dirs present in `dev`.
fn gpu_devices(dev: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dev) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_str().is_some_and(is_gpu_device))
        .map(|entry| entry.path())
        .collect()
}

/// The Landlock ABI from which TCP bind and connect can be denied.
const FIRST_NETWORK_ABI: i32 = 4;

/// The Landlock ABI from which a sandboxed process can be scoped: no signal to a process
/// outside its sandbox (the daemon, the user's other programs) and no connection to an
/// abstract unix socket made outside it.
const FIRST_SCOPE_ABI: i32 = 6;

/// The daemon's sandbox for `run_shell`: the configuration and what this kernel enforces.
#[derive(Debug)]
pub struct ShellSandbox {
    config: SandboxConfig,
    support: Support,
    /// The daemon's socket, covered in the shell's mount namespace: a shell that reached it
    /// could answer its own approvals or trust its own project.
    daemon_socket: Option<PathBuf>,
}

/// What the kernel lets the daemon enforce, found at startup.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Support {
    /// No sandbox, and why (said in `daemon/status`).
    None(String),
    Landlock {
        abi: i32,
        /// How the child gets its read-only mounts, or why it cannot.
        mounts: Result<Mounts, String>,
    },
}

/// How a shell gets its read-only mounts.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Mounts {
    /// Between fork and exec: a root daemon's child makes a mount namespace directly.
    InChild,
    /// Through `agentd __sandbox-exec` ([`super::sandbox_exec`]): a child of an unprivileged
    /// daemon needs a user namespace, whose id maps a process can only write while it is
    /// dumpable, and a forked child of the non-dumpable daemon never is. The re-executed
    /// binary is a fresh, dumpable process that holds no secret.
    Helper,
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
            daemon_socket: None,
        }
    }

    /// Finds what this kernel offers for `config`: the Landlock ABI, then whether a child may
    /// make a mount namespace (tried once, in short-lived children). `daemon_socket` is hidden
    /// from the shell where it can be.
    pub async fn probe(config: SandboxConfig, daemon_socket: Option<PathBuf>) -> Self {
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
            } => tracing::warn!("run_shell may write the project's configuration: {why}"),
            Support::Landlock { .. } => {}
        }
        let sandbox = Self {
            config,
            support,
            daemon_socket,
        };
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
                    Ok(_) => {
                        status.push_str(", read-only project configuration");
                        if self.daemon_socket.is_some() {
                            status.push_str(", daemon socket hidden");
                        }
                    }
                    Err(why) => {
                        status.push_str(&format!(
                            ", project configuration writable and the daemon socket reachable ({why})"
                        ));
                    }
                }
                if *abi >= FIRST_SCOPE_ABI {
                    status.push_str(", signals and abstract sockets scoped");
                } else {
                    status.push_str(&format!(
                        ", signals and abstract sockets not scoped (needs landlock abi {FIRST_SCOPE_ABI})"
                    ));
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
    pub(crate) fn shell_env(&self, base: Vec<(OsString, OsString)>) -> Vec<(OsString, OsString)> {
        super::sandbox_config::with_pass_env(&self.config, base)
    }

    /// `spec` (a shell in the workspace `spec.cwd`) confined: its environment with `pass_env`,
    /// and the [`Confinement`] it enters before exec, or the helper that confines it. Opens
    /// every allowed path on the blocking pool (a path on a hung network mount blocks).
    pub async fn apply(self: &Arc<Self>, mut spec: ProcessSpec) -> io::Result<ProcessSpec> {
        spec.env = self.shell_env(spec.env);
        let workspace = spec.cwd.clone();
        self.confine_in(spec, workspace).await
    }

    /// `spec` (a project's MCP server) confined as a shell in `workspace` is, its environment
    /// left as it is.
    pub async fn confine_server(
        self: &Arc<Self>,
        spec: ProcessSpec,
        workspace: &Path,
    ) -> io::Result<ProcessSpec> {
        self.confine_in(spec, workspace.to_path_buf()).await
    }

    async fn confine_in(
        self: &Arc<Self>,
        spec: ProcessSpec,
        workspace: PathBuf,
    ) -> io::Result<ProcessSpec> {
        if matches!(self.support, Support::None(_)) {
            return Ok(spec);
        }
        let sandbox = Arc::clone(self);
        tokio::task::spawn_blocking(move || sandbox.confine(spec, &workspace))
            .await
            .map_err(io::Error::other)?
    }

    fn confine(&self, mut spec: ProcessSpec, workspace: &Path) -> io::Result<ProcessSpec> {
        let Support::Landlock { abi, mounts } = &self.support else {
            return Ok(spec);
        };
        let deny_network = !self.config.network && *abi >= FIRST_NETWORK_ABI;
        let writable = self.writable_paths(workspace);
        match mounts {
            Ok(Mounts::Helper) => {
                let plan = super::sandbox_exec::Plan {
                    abi: *abi,
                    deny_network,
                    writable,
                    read_only: super::protected::existing(workspace),
                    masked: self.masked_files(),
                };
                spec.args = plan.to_args(&spec.program, &spec.args);
                spec.program = super::sandbox_exec::HELPER_PROGRAM.into();
            }
            Ok(Mounts::InChild) | Err(_) => {
                let ruleset = landlock_ruleset(*abi, deny_network, &writable)?;
                let mounts = match mounts {
                    Ok(_) => Some(
                        read_only_mounts_of(
                            Namespaces::MountOnly,
                            &super::protected::existing(workspace),
                        )?
                        .masking(&self.masked_files())?,
                    ),
                    Err(_) => None,
                };
                spec.confinement = Some(Arc::new(Confinement { mounts, ruleset }));
            }
        }
        Ok(spec)
    }

    /// The files covered by `/dev/null` in the shell's mount namespace: the daemon's socket,
    /// when it is one (a bind mount needs something there).
    fn masked_files(&self) -> Vec<PathBuf> {
        use std::os::unix::fs::FileTypeExt;
        self.daemon_socket
            .iter()
            .filter(|socket| {
                std::fs::symlink_metadata(socket).is_ok_and(|meta| meta.file_type().is_socket())
            })
            .cloned()
            .collect()
    }

    /// Where a shell in `workspace` may write.
    fn writable_paths(&self, workspace: &Path) -> Vec<PathBuf> {
        let mut writable = vec![workspace.to_path_buf(), std::env::temp_dir()];
        writable.extend(self.config.writable.iter().cloned());
        writable.extend(WRITABLE_DEVICES.iter().map(PathBuf::from));
        writable.extend(gpu_devices(Path::new(DEVICE_DIR)));
        writable
    }
}

/// A Landlock ruleset for `abi`: read and execute everywhere, everything in `writable`, with
/// `deny_network` no TCP bind or connect, and from [`FIRST_SCOPE_ABI`] on no signal or
/// abstract-socket connection out of the sandbox. Paths that do not exist are left out.
pub(crate) fn landlock_ruleset(
    abi: i32,
    deny_network: bool,
    writable: &[PathBuf],
) -> io::Result<std::os::fd::OwnedFd> {
    let abi_level = ABI::from(abi);
    let error = |error: landlock::RulesetError| io::Error::other(format!("landlock: {error}"));
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(abi_level))
        .map_err(error)?;
    if deny_network {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(error)?;
    }
    if abi >= FIRST_SCOPE_ABI {
        ruleset = ruleset
            .scope(Scope::Signal | Scope::AbstractUnixSocket)
            .map_err(error)?;
    }
    let created = ruleset
        .create()
        .map_err(error)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi_level)))
        .map_err(error)?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(abi_level)))
        .map_err(error)?;
    Option::<std::os::fd::OwnedFd>::from(created)
        .ok_or_else(|| io::Error::other("landlock: the kernel did not create a ruleset"))
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
/// child's own namespace, so nothing changes outside): in the child itself when the daemon is
/// root, else (or when that fails) through the helper in a user namespace.
async fn probe_mounts() -> Result<Mounts, String> {
    let root = std::env::temp_dir();
    let mut failures = Vec::new();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let dirs = [root.clone()];
        let mounts =
            tokio::task::spawn_blocking(move || read_only_mounts_of(Namespaces::MountOnly, &dirs))
                .await
                .map_err(io::Error::other);
        let result = match mounts {
            Ok(Ok(mounts)) => {
                super::try_in_child("sh".into(), vec!["-c".into(), ":".into()], move || {
                    mounts.enter()
                })
                .await
            }
            Ok(Err(error)) | Err(error) => Err(error),
        };
        match result {
            Ok(()) => return Ok(Mounts::InChild),
            Err(error) => failures.push(format!("mount namespace: {error}")),
        }
    }
    let plan = super::sandbox_exec::Plan {
        abi: 0,
        deny_network: false,
        writable: Vec::new(),
        read_only: vec![root],
        masked: Vec::new(),
    };
    let args = plan.to_args(std::ffi::OsStr::new("sh"), &["-c".into(), ":".into()]);
    match super::try_in_child(super::sandbox_exec::HELPER_PROGRAM.into(), args, || Ok(())).await {
        Ok(()) => Ok(Mounts::Helper),
        Err(error) => {
            failures.push(format!("user namespace: {error}"));
            Err(format!("no mount namespace: {}", failures.join("; ")))
        }
    }
}

pub(crate) fn read_only_mounts_of(
    namespaces: Namespaces,
    dirs: &[PathBuf],
) -> io::Result<ReadOnlyMounts> {
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
        masked: Vec::new(),
        uid_map: format!("{uid} {uid} 1").into_bytes(),
        gid_map: format!("{gid} {gid} 1").into_bytes(),
    })
}

impl ReadOnlyMounts {
    /// These mounts, also covering each of `files` with `/dev/null`.
    pub(crate) fn masking(mut self, files: &[PathBuf]) -> io::Result<Self> {
        for file in files {
            self.masked
                .push(CString::new(file.as_os_str().as_bytes()).map_err(io::Error::other)?);
        }
        Ok(self)
    }
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
