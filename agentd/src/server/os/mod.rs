//! What the daemon does differently per platform: where it listens (a Unix socket, 0600, its
//! peer's uid checked; a named pipe on Windows, its DACL the user's only, its peer's token
//! user checked), stop signals (SIGTERM/SIGINT, SIGHUP to reload; ctrl-c, ctrl-break, close
//! and shutdown events on Windows), systemd's socket activation and notifications, and the
//! process hardening. One implementation per platform with the same functions.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;
