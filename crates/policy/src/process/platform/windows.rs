//! Windows: the child runs in a Job Object made with kill-on-close (process-wrap's
//! `JobObject` with `KillOnDrop`), so everything it starts is in the job and ends when the
//! job is terminated or its last handle closes: on drop, and when the daemon dies (the system
//! closes its handles). There is no polite signal to a job: a stop is a kill.

use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::Arc;

use process_wrap::tokio::{ChildWrapper, CommandWrap, JobObject, KillOnDrop};

use super::super::sandbox::Confinement;

/// `CREATE_NO_WINDOW`: a console child of the daemon opens no console window of its own.
const CREATE_NO_WINDOW: u32 = 0x0800_0000;

/// No console window for the child; there is no confinement on Windows (`confinement` is
/// always `None`: the type has no values there).
pub(crate) fn prepare(
    command: &mut tokio::process::Command,
    confinement: Option<Arc<Confinement>>,
) -> io::Result<()> {
    if let Some(confinement) = confinement {
        match *confinement {}
    }
    command.creation_flags(CREATE_NO_WINDOW);
    Ok(())
}

/// The arguments, quoted by the C runtime's rules unless `verbatim` (then each is put on the
/// command line as written, after one space).
pub(crate) fn add_args(
    command: &mut tokio::process::Command,
    args: &[std::ffi::OsString],
    verbatim: bool,
) {
    for arg in args {
        if verbatim {
            command.raw_arg(arg);
        } else {
            command.arg(arg);
        }
    }
}

/// The wrappers: the job, and kill-on-close for it.
pub(crate) fn wrap(wrapped: &mut CommandWrap) {
    wrapped.wrap(JobObject).wrap(KillOnDrop);
}

/// Waits for the leader (the job's wait returns once the leader has exited and reaps the rest
/// in the background); the caller terminates the job right after.
pub(crate) async fn wait_leader(child: &mut Box<dyn ChildWrapper>) -> io::Result<ExitStatus> {
    child.wait().await
}

/// Terminates every process in the job; one already ended is fine.
pub(crate) fn kill_group(child: &mut dyn ChildWrapper, pid: i32) {
    if let Err(error) = child.start_kill() {
        tracing::debug!(pid, %error, "cannot terminate the job (already ended?)");
    }
}

/// No polite stop for a job: the same as [`kill_group`].
pub(crate) fn terminate_group(child: &mut dyn ChildWrapper, pid: i32) {
    kill_group(child, pid);
}

/// Nothing to record: the job ends with the daemon.
pub(crate) fn record(_pid: i32) -> Option<PathBuf> {
    None
}

/// Nothing escapes a job.
pub(crate) fn kill_escaped(_marker: &str, _pid: i32) -> usize {
    0
}
