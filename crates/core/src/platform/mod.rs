//! The seams between agentd and the operating system for files and users: who owns a file,
//! its permission bits, opening without following a link or blocking on a FIFO, what a
//! non-regular file is. One implementation per platform, the same functions in each, so the
//! rest of the code names no `std::os::unix` or `libc` for these.
//!
//! On Unix they are what the daemon always did (uids, modes, `O_NOFOLLOW | O_NONBLOCK`). On
//! Windows a file has no uid and no mode bits: the daemon's files live under the user's
//! profile, whose ACL gives them to the user already, so an owner check passes and a mode is
//! nothing to set; "no follow" opens a reparse point itself (`FILE_FLAG_OPEN_REPARSE_POINT`),
//! which then is not a regular file and is refused as a symlink is on Unix.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;
