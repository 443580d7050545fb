//! What agentctl needs of the operating system, per platform: the user, the terminal's raw
//! mode and size, keys from stdin, Ctrl-C, and detaching the daemon it starts. One
//! implementation per platform with the same functions; the rest of agentctl names no `libc`,
//! `windows_sys` or `std::os::unix` for these.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;

/// How often the key reader looks at its stop flag while no key arrives: bounds how long it
/// outlives the prompt (the runtime waits for it at exit).
const KEY_POLL_MS: u32 = 100;

/// The standard stream whose terminal is measured.
#[derive(Clone, Copy, Debug)]
pub enum Stream {
    Stdout,
    Stderr,
}
