//! Unix: uids, termios, `TIOCGWINSZ`, signals.

/// The real user id of this process (the socket path is named by it).
pub fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}
