//! Unix: the child leads its own process group (made before exec), gets SIGKILL when the
//! daemon dies (`PR_SET_PDEATHSIG`), and the whole group is signalled; what left the group is
//! found by its marker (see `supervisor`).

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;

use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop, ProcessGroup};

use super::super::sandbox::Confinement;
use super::super::{scrubbed_env, supervisor};

/// The arguments as they are: an argument vector needs no quoting (`verbatim` is for
/// Windows' command lines).
pub(crate) fn add_args(
    command: &mut tokio::process::Command,
    args: &[std::ffi::OsString],
    _verbatim: bool,
) {
    command.args(args);
}

/// Sets up `command` to run in its own group, die with the daemon and enter `confinement`
/// (before exec).
pub(crate) fn prepare(
    command: &mut tokio::process::Command,
    confinement: Option<Arc<Confinement>>,
) -> io::Result<()> {
    let daemon = i32::try_from(std::process::id()).map_err(io::Error::other)?;
    // SAFETY: the hook runs in the forked child before exec and only calls async-signal-safe
    // functions (setpgid, prctl, getppid; the confinement's unshare, mount, open, write,
    // close, prctl and landlock_restrict_self on what the daemon prepared).
    unsafe {
        command.pre_exec(move || {
            die_with_the_daemon(daemon)?;
            match &confinement {
                Some(confinement) => confinement.enter(),
                None => Ok(()),
            }
        });
    }
    Ok(())
}

/// The wrappers: the group (made again by process-wrap, a no-op after `prepare`'s) and
/// kill-on-drop. [`wait_leader`] reaches the leader through these two.
pub(crate) fn wrap(wrapped: &mut CommandWrap) {
    wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
}

/// Waits for the leader only (the tokio child inside the `KillOnDrop` and `ProcessGroup`
/// wrappers). process-wrap's group wait blocks on `waitpid(-pgid)` until every member is
/// gone, and the daemon is a child subreaper: a member the command left running
/// (`(sleep 60 &)`, a daemonizing tool) is re-parented to the daemon, so that wait would last
/// as long as the orphan. The caller kills the group right after.
pub(crate) async fn wait_leader(child: &mut Box<dyn ChildWrapper>) -> io::Result<ExitStatus> {
    child.inner_mut().inner_mut().wait().await
}

/// SIGKILL to the whole group.
pub(crate) fn kill_group(_child: &mut dyn ChildWrapper, pgid: i32) {
    kill_pgid(pgid);
}

/// SIGTERM to the whole group.
pub(crate) fn terminate_group(_child: &mut dyn ChildWrapper, pgid: i32) {
    signal_group(pgid, libc::SIGTERM);
}

/// Records the group for a next daemon (see `supervisor`). Blocking.
pub(crate) fn record(pgid: i32) -> Option<PathBuf> {
    supervisor::record_group(pgid)
}

/// Kills what left the group but carries its marker. Blocking (a `/proc` scan).
pub(crate) fn kill_escaped(marker: &str, pgid: i32) -> usize {
    supervisor::kill_marked(marker, pgid)
}

/// SIGKILL to every process of group `pgid`; a group that is already gone is fine.
pub(crate) fn kill_pgid(pgid: i32) {
    signal_group(pgid, libc::SIGKILL);
}

/// `signal` to every process of group `pgid`; a group that is already gone is fine.
fn signal_group(pgid: i32, signal: libc::c_int) {
    if pgid <= 1 {
        return;
    }
    // SAFETY: killpg only sends a signal; the pgid is that of a group this process created.
    let result = unsafe { libc::killpg(pgid, signal) };
    if result != 0 {
        let error = io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::ESRCH) {
            tracing::warn!(pgid, %error, "could not kill process group");
        }
    }
}

/// In the child before exec: its own process group first (so even a child that fails from here
/// on is a group leader, which the orphan reaper never touches), then SIGKILL when the daemon
/// dies, and give up if it already has. A privileged daemon (root) also takes
/// [`CAPS_THAT_OPEN_THE_DAEMON`] out of the child's bounding set (gone after exec): with any of
/// them, root's tools could still read the non-dumpable daemon's environment and memory
/// (`daemon::harden_process`). Without the privilege to drop them there is nothing to drop, so
/// that failure is ignored.
fn die_with_the_daemon(daemon: i32) -> io::Result<()> {
    // SAFETY: setpgid, prctl and getppid are async-signal-safe and touch only this process.
    unsafe {
        if libc::setpgid(0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        for capability in CAPS_THAT_OPEN_THE_DAEMON {
            libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0);
        }
        if libc::getppid() != daemon {
            return Err(io::Error::other("agentd exited while starting the process"));
        }
    }
    Ok(())
}

/// Capabilities that let a process read a non-dumpable process's `/proc/<pid>/environ`, `maps`
/// and `mem` (checked on Linux 6.18: `CAP_SYS_PTRACE`, and `CAP_SYS_ADMIN` or `CAP_PERFMON`
/// through `perfmon_capable`), by number from `<linux/capability.h>`; the libc crate does not
/// name them. Tools of a root daemon run without them.
const CAPS_THAT_OPEN_THE_DAEMON: [libc::c_ulong; 3] = [19, 21, 38];

/// Runs `program args` as a short-lived child (in its own process group, so the orphan
/// reaper leaves it to us) with `setup` before exec: Ok when the child exited 0, else what it
/// said on stderr. How the sandbox finds out, once, what the kernel lets a child do.
pub(crate) async fn try_in_child(
    program: OsString,
    args: Vec<OsString>,
    setup: impl FnMut() -> io::Result<()> + Send + Sync + 'static,
) -> io::Result<()> {
    // The sandbox's probes: a child of the process wrapper's own (clippy.toml).
    #[allow(clippy::disallowed_methods)]
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .current_dir("/")
        .env_clear()
        .envs(scrubbed_env())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // SAFETY: `setup` is the caller's async-signal-safe hook (see its contract).
    unsafe {
        command.pre_exec(setup);
    }
    let output = command.output().await?;
    if output.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&output.stderr);
    let said = said.trim();
    Err(io::Error::other(if said.is_empty() {
        format!("the probe exited with {}", output.status)
    } else {
        said.chars().take(300).collect()
    }))
}
