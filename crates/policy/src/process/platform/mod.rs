//! How a child's whole tree is held and ended, per platform: a process group with a death
//! signal on Unix ([`unix`]), a Job Object with kill-on-close on Windows ([`windows`]). The
//! same functions in each; `ChildProcess` uses only these.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub(super) use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(super) use windows::*;
