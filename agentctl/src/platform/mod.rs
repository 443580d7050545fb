//! What agentctl needs of the operating system, per platform: the user, the terminal's raw
//! mode and size, signals, and detaching the daemon it starts. One implementation per
//! platform with the same functions; the rest of agentctl names no `libc` or
//! `std::os::unix` for these.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;
