//! Unix: uids, permission bits, `O_NOFOLLOW`, `O_NONBLOCK`.

use std::fs::{DirBuilder, File, FileType, Metadata, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The real user id of this process.
pub fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// The uid owning what `metadata` describes.
pub fn owner_of(metadata: &Metadata) -> u32 {
    metadata.uid()
}

/// The permission bits (`0o7777`) of what `metadata` describes.
pub fn mode_of(metadata: &Metadata) -> u32 {
    metadata.mode() & 0o7777
}

/// Sets the permission bits of `path` (symlinks followed).
pub fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    std::fs::set_permissions(path, Permissions::from_mode(mode))
}

/// Sets the permission bits of an open file.
pub fn set_file_mode(file: &File, mode: u32) -> io::Result<()> {
    file.set_permissions(Permissions::from_mode(mode))
}

/// The mode a file created by `options` gets (less the umask).
pub fn create_mode(options: &mut OpenOptions, mode: u32) -> &mut OpenOptions {
    options.mode(mode)
}

/// The mode a directory created by `builder` gets (less the umask).
pub fn dir_mode(builder: &mut DirBuilder, mode: u32) -> &mut DirBuilder {
    builder.mode(mode)
}

/// Opens neither through a symlink at the last component nor waiting on a FIFO, never makes a
/// terminal the controlling one, and no child inherits the descriptor.
pub fn no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY | libc::O_CLOEXEC)
}

/// Opens without waiting on a FIFO (symlinks followed), and no child inherits the descriptor.
pub fn non_blocking(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
}

/// Whether `error` is the refusal of [`no_follow`] to open a symlink.
pub fn is_link_refused(error: &io::Error) -> bool {
    error.raw_os_error() == Some(libc::ELOOP)
}

/// Whether `file_type` is a socket.
pub fn is_socket(file_type: &FileType) -> bool {
    file_type.is_socket()
}

/// A short name for what a non-regular file is, for error messages.
pub fn kind_of(file_type: &FileType) -> &'static str {
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else if file_type.is_fifo() {
        "a named pipe"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_block_device() || file_type.is_char_device() {
        "a device"
    } else if file_type.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// The path an open file really has, from `/proc/self/fd` (which a process may always read of
/// itself): no link swapped in after the open changes it.
pub fn real_path(file: &File, _opened_as: &Path) -> io::Result<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

/// The device, inode and whole mode (type and permission bits) of what `metadata` describes:
/// what tells one file from another that took its name.
pub fn identity(metadata: &Metadata) -> (u64, u64, u32) {
    (metadata.dev(), metadata.ino(), metadata.mode())
}

/// What a special file (neither a regular file nor a directory) is, for a tool's refusal.
pub fn special_file_name(file_type: &FileType) -> &'static str {
    if file_type.is_fifo() {
        "named pipe (FIFO)"
    } else if file_type.is_socket() {
        "socket"
    } else if file_type.is_char_device() || file_type.is_block_device() {
        "device"
    } else {
        "special file"
    }
}

/// The path whose bytes `bytes` are (as a program such as git prints them).
pub fn path_from_bytes(bytes: &[u8]) -> &Path {
    use std::os::unix::ffi::OsStrExt;
    Path::new(std::ffi::OsStr::from_bytes(bytes))
}

/// The signal that ended a process, if one did.
pub fn exit_signal(status: &std::process::ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(status)
}

/// Whether `path` is on procfs, sysfs or another kernel filesystem that holds no projects
/// (`/proc/PID` is the user's own directory, and must not be trusted).
pub fn on_pseudo_filesystem(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    const PSEUDO: &[i64] = &[
        0x9fa0,      // proc
        0x6265_6572, // sysfs
        0x1cd1,      // devpts
        0x6367_7270, // cgroup2
        0x27e0eb,    // cgroup
        0x7363_6673, // securityfs
        0xcafe_4a11, // bpf
        0x6462_6720, // debugfs
        0x7472_6163, // tracefs
    ];
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return true;
    };
    // SAFETY: statfs writes into the zeroed struct we own; the path is NUL-terminated.
    let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::statfs(c_path.as_ptr(), &mut stat) } != 0 {
        return true;
    }
    #[allow(clippy::unnecessary_cast)]
    let kind = stat.f_type as i64;
    PSEUDO.contains(&kind)
}
