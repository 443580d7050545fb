//! Helpers shared by the unit tests of agentd's crates: compiled for this crate's tests and,
//! through the `test-support` feature, for those of the crates above.

// Test helpers fail loudly and say why a test is skipped.
#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::path::Path;

/// Make a FIFO at `path` (the special file several readers must refuse without blocking).
pub fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
}

/// The other user tests make files of: `nobody`.
pub const OTHER_UID: u32 = 65534;

/// Gives `path` to another user (`nobody`); `false`, after saying so, when the test does not
/// run as root and cannot.
pub fn give_to_other_user(test: &str, path: &Path) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("{test} needs root to create files owned by another uid");
        return false;
    }
    std::os::unix::fs::chown(path, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
    true
}
