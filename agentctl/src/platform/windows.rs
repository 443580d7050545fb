//! Windows: the console API, ctrl-c/ctrl-break, detached processes.

/// No uid on Windows: the pipe is named by the user name instead, so this is never used in a
/// path there.
pub fn current_uid() -> u32 {
    0
}
