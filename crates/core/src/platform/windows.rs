//! Windows: no uids and no mode bits (the user's profile ACL keeps the daemon's files the
//! user's), reparse points opened as themselves instead of followed.

use std::fs::{DirBuilder, File, FileType, Metadata, OpenOptions};
use std::io;
use std::os::windows::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// `FILE_FLAG_OPEN_REPARSE_POINT`: a symlink or junction is opened itself, not followed.
const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;

/// Windows has no uid: 0 stands for "this user" wherever a uid is compared or named.
pub fn current_uid() -> u32 {
    0
}

/// Every file counts as this user's (see the module's doc): the same value as
/// [`current_uid`].
pub fn owner_of(_metadata: &Metadata) -> u32 {
    current_uid()
}

/// No mode bits: a directory reads as 0o700, a read-only file as 0o400, any other as 0o600
/// (what the daemon would have set on Unix).
pub fn mode_of(metadata: &Metadata) -> u32 {
    if metadata.is_dir() {
        0o700
    } else if metadata.permissions().readonly() {
        0o400
    } else {
        0o600
    }
}

/// Nothing to set: there are no mode bits.
pub fn set_mode(_path: &Path, _mode: u32) -> io::Result<()> {
    Ok(())
}

/// Nothing to set: there are no mode bits.
pub fn set_file_mode(_file: &File, _mode: u32) -> io::Result<()> {
    Ok(())
}

/// Nothing to set: there are no mode bits.
pub fn create_mode(options: &mut OpenOptions, _mode: u32) -> &mut OpenOptions {
    options
}

/// Nothing to set: there are no mode bits.
pub fn dir_mode(builder: &mut DirBuilder, _mode: u32) -> &mut DirBuilder {
    builder
}

/// A reparse point (symlink, junction) at the path is opened itself, which then is not a
/// regular file and is refused by the callers' kind check. Opening never waits on Windows.
pub fn no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
}

/// Opening never waits on Windows: nothing to add.
pub fn non_blocking(options: &mut OpenOptions) -> &mut OpenOptions {
    options
}

/// [`no_follow`] opens a link instead of refusing it: never.
pub fn is_link_refused(_error: &io::Error) -> bool {
    false
}

/// No socket files on Windows (the daemon listens on a named pipe).
pub fn is_socket(_file_type: &FileType) -> bool {
    false
}

/// A short name for what a non-regular file is, for error messages.
pub fn kind_of(file_type: &FileType) -> &'static str {
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else if file_type.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// The path the file was opened by, resolved: Windows resolves links at open, so the
/// canonical path of the name is where it leads (a link swapped in after the open is not
/// seen, unlike Unix's `/proc/self/fd`).
pub fn real_path(_file: &File, opened_as: &Path) -> io::Result<PathBuf> {
    opened_as.canonicalize()
}

/// No stable file id is read on Windows (std keeps it unstable): 0 for the device and the
/// inode, and the kind and [`mode_of`] for the mode, so size and time tell files apart.
pub fn identity(metadata: &Metadata) -> (u64, u64, u32) {
    let kind = if metadata.is_dir() {
        0o040_000
    } else if metadata.file_type().is_symlink() {
        0o120_000
    } else {
        0o100_000
    };
    (0, 0, kind | mode_of(metadata))
}

/// What a special file (neither a regular file nor a directory) is, for a tool's refusal.
pub fn special_file_name(_file_type: &FileType) -> &'static str {
    "special file"
}

/// The path whose bytes `bytes` are (as a program such as git prints them: UTF-8 on Windows);
/// bytes that are not UTF-8 name no file, and give the replacement character.
pub fn path_from_bytes(bytes: &[u8]) -> &Path {
    Path::new(std::str::from_utf8(bytes).unwrap_or("\u{fffd}"))
}

/// No signals on Windows.
pub fn exit_signal(_status: &std::process::ExitStatus) -> Option<i32> {
    None
}

/// Windows has no kernel pseudo filesystems like procfs: never.
pub fn on_pseudo_filesystem(_path: &Path) -> bool {
    false
}
