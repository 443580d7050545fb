//! No tool process outlives the daemon that started it, even a daemon killed with SIGKILL.
//!
//! On Windows ([`windows`]) a Job Object with kill-on-close holds each child's tree: closing
//! it (the child dropped, or the daemon gone, whose handles the system closes) ends every
//! process in it, so there is nothing to record or reap. On Unix ([`unix`]), four layers, each covering what the one before misses:
//! - every group leader gets `PR_SET_PDEATHSIG` = SIGKILL (set in the child before exec), so it
//!   dies with the daemon;
//! - every tool process carries `AGENTD_PROCESS=<owner>.<n>` in its environment (inherited by
//!   what it starts), where `<owner>` names the daemon's socket; what escaped its group
//!   (`setsid … &`) is found through `/proc` and killed when its command ends, and whatever a
//!   previous daemon on the same socket left is killed when the next one starts;
//! - each live process group is recorded in `<state>/processes/<owner>-<pgid>` (with the boot
//!   id and the leader's start time), so a next daemon also kills group members that cleared
//!   their environment, and never a later group that reused the pgid;
//! - the daemon is a child subreaper, so orphans of its tools are re-parented to it rather than
//!   to init while it runs, and [`reap_orphans`] reaps them. It reaps by pid only, never with
//!   `waitpid(-1)`, and never a group leader that is not on its list: group leaders are the
//!   children tokio waits for.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::{install, reap_orphans};
#[cfg(unix)]
pub(crate) use unix::{kill_marked, new_marker, record_group};

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::new_marker;
#[cfg(windows)]
pub use windows::{install, reap_orphans};

/// The environment variable that marks every tool process (`<owner>.<n>`).
pub const MARKER_VAR: &str = "AGENTD_PROCESS";

/// FNV-1a: a hash that stays the same across builds (the owner must survive an upgrade); also
/// the digest of an MCP server's configuration.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
