//! Helpers shared by the daemon crate's unit tests.

use std::path::Path;

/// Make a FIFO at `path` (the special file several readers must refuse without blocking).
pub fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
}
