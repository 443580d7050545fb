//! Where `write_file` and `edit_file` really write: the file's directory opened beneath the
//! workspace directory (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`), the hard
//! limits checked again on the path that directory really has, and the file read and replaced
//! through that open directory, so a symlink made after the permission gate judged the path
//! (by a shell command earlier in the batch) cannot lead a write out of the workspace or into
//! a protected path. Blocking: call it on the blocking pool.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::text_file;
use super::write_limits::{canonical_workspace, check_limits, escapes};
use agentd_core::atomic_file::{c_name, open_at, stat_at};
use agentd_core::workspace::{display_path, is_notes_name, notes_through_link};

/// Times a lookup is retried when the kernel reports a rename raced with it (`EAGAIN`).
const LOOKUP_RETRIES: usize = 8;

/// A file about to be written: its directory held open, checked, and the file's name in it.
pub(crate) struct WriteTarget {
    /// The directory the file is in, opened `O_PATH` beneath the workspace.
    dir: OwnedFd,
    /// The file's name in `dir` (the final name: a symlink at the path was followed).
    name: OsString,
    /// How the path is shown to the model (relative to the workspace).
    pub(crate) shown: String,
}

impl WriteTarget {
    /// Opens the directory of `path` (as the model gave it) beneath `workspace`, creating
    /// missing directories when `create_parents` is set. A symlink on the way (the file's own
    /// name included) is followed only while it stays in the workspace; the directory reached
    /// and the file's final path must not be protected. Every directory is checked before
    /// anything is created in it, so a refused call leaves nothing behind.
    pub(crate) fn open(
        workspace: &Path,
        path: &str,
        create_parents: bool,
    ) -> Result<WriteTarget, String> {
        let workspace = canonical_workspace(workspace)?;
        let root = open_path(&workspace).map_err(|error| {
            format!(
                "workspace {} cannot be opened: {error}",
                workspace.display()
            )
        })?;
        // Resolved now, at execution: `..` after a missing directory, dangling links and
        // escapes are refused with the gate's messages; the lookup below makes sure the path
        // still leads where it resolved to.
        let resolved = agentd_core::workspace::resolve_in_workspace(&workspace, path)?;
        let relative = resolved
            .strip_prefix(&workspace)
            .map(Path::to_path_buf)
            .map_err(|_| escapes(path, &resolved, &workspace))?;
        // The file's own name may be a symlink: write to what it leads to (inside the
        // workspace), as the gate judged, never replace the link.
        let relative = match beneath(root.as_fd(), &relative, libc::O_PATH) {
            Ok(file) => {
                let real = fd_path(&file, path)?;
                real.strip_prefix(&workspace)
                    .map(Path::to_path_buf)
                    .map_err(|_| escapes(path, &real, &workspace))?
            }
            Err(error) if error.raw_os_error() == Some(libc::ENOENT) => relative,
            Err(error) => return Err(lookup_error(path, &workspace, &error)),
        };
        let name = relative
            .file_name()
            .map(OsStr::to_os_string)
            .ok_or_else(|| format!("{path} is the workspace directory; give a file path"))?;
        let parent = relative.parent().unwrap_or(Path::new(""));
        let dir = open_dir(root.as_fd(), parent, &workspace, path, create_parents)?;
        let real_dir = fd_path(&dir, path)?;
        let real = real_dir.join(&name);
        check_limits(&real, &workspace, path)?;
        let shown = display_path(&workspace, &real);
        // The gate asked about a notes file by the name the call gives; one reached through
        // a link of another name (made after the gate judged it) was never asked about.
        if is_notes_name(&name) && !Path::new(path).file_name().is_some_and(is_notes_name) {
            return Err(notes_through_link(path, &shown));
        }
        Ok(WriteTarget { dir, name, shown })
    }

    /// Whether the file exists now (a directory at its name is an error).
    pub(crate) fn exists(&self) -> Result<bool, String> {
        match stat_at(self.dir.as_fd(), &self.name) {
            Ok(stat) if stat.st_mode & libc::S_IFMT == libc::S_IFDIR => {
                Err(format!("{} is a directory; give a file path", self.shown))
            }
            Ok(_) => Ok(true),
            Err(error) if error.raw_os_error() == Some(libc::ENOENT) => Ok(false),
            Err(error) => Err(format!("cannot look at {}: {error}", self.shown)),
        }
    }

    /// Opens the file for reading: a regular file only (no symlink put in its place since,
    /// no FIFO or device), without blocking.
    pub(crate) fn open_read(&self) -> Result<File, text_file::OpenError> {
        let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW;
        let file = File::from(open_at(self.dir.as_fd(), &self.name, flags, 0)?);
        text_file::check_kind(&file.metadata()?.file_type())?;
        Ok(file)
    }

    /// Replaces the file with `bytes` through the open directory (`atomic_file::replace_in_dir`),
    /// keeping the permissions of a file it replaces (a new one: 0666 less the umask). A
    /// symlink put at the name since is replaced, never written through.
    pub(crate) fn write_atomic(&self, bytes: &[u8]) -> io::Result<()> {
        let options = agentd_core::atomic_file::Options {
            keep_existing_mode: true,
            ..Default::default()
        };
        agentd_core::atomic_file::replace_in_dir(
            self.dir.as_fd(),
            &self.name,
            bytes,
            0o666,
            &options,
        )
    }
}

fn lookup_error(path: &str, workspace: &Path, error: &io::Error) -> String {
    match error.raw_os_error() {
        Some(libc::EXDEV) => format!(
            "path escapes the workspace: {path} leads outside {} through a symlink; file \
             tools only work under the workspace root",
            workspace.display()
        ),
        Some(libc::ELOOP) => {
            format!("{path}: too many symlinks on the way, or a /proc link; give a plain path")
        }
        Some(libc::ENOTDIR) => format!("{path}: a part of the path is a file, not a directory"),
        _ => format!("{path}: cannot open: {error}"),
    }
}

/// Opens each directory of `parent` beneath `root` in turn, checking the path each one really
/// has before creating the next (when `create` is set).
fn open_dir(
    root: BorrowedFd<'_>,
    parent: &Path,
    workspace: &Path,
    path: &str,
    create: bool,
) -> Result<OwnedFd, String> {
    let mut current = beneath(root, Path::new("."), libc::O_PATH | libc::O_DIRECTORY)
        .map_err(|error| lookup_error(path, workspace, &error))?;
    let mut walked = PathBuf::new();
    for component in parent.components() {
        walked.push(component.as_os_str());
        let flags = libc::O_PATH | libc::O_DIRECTORY;
        current = match beneath(root, &walked, flags) {
            Ok(dir) => dir,
            Err(error) if create && error.raw_os_error() == Some(libc::ENOENT) => {
                let real = fd_path(&current, path)?.join(component.as_os_str());
                check_limits(&real, workspace, path)?;
                match mkdir_at(current.as_fd(), component.as_os_str()) {
                    Ok(()) => {}
                    Err(error) if error.raw_os_error() == Some(libc::EEXIST) => {}
                    Err(error) => {
                        return Err(format!("cannot create the directories for {path}: {error}"));
                    }
                }
                beneath(root, &walked, flags)
                    .map_err(|error| lookup_error(path, workspace, &error))?
            }
            Err(error) => return Err(lookup_error(path, workspace, &error)),
        };
        check_limits(&fd_path(&current, path)?, workspace, path)?;
    }
    Ok(current)
}

/// The path the open `file` has now (from `/proc/self/fd`, which a process may always read of
/// itself).
fn fd_path(file: &OwnedFd, path: &str) -> Result<PathBuf, String> {
    let link = format!("/proc/self/fd/{}", file.as_raw_fd());
    let real = std::fs::read_link(&link)
        .map_err(|error| format!("{path}: cannot tell where the path leads: {error}"))?;
    if !real.is_absolute() || real.as_os_str().as_bytes().ends_with(b" (deleted)") {
        return Err(format!(
            "{path}: the directory was removed or moved while writing; try again"
        ));
    }
    Ok(real)
}

/// `openat2(root, path, flags, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`; on a kernel without
/// `openat2` (before 5.6) a plain `openat`, whose result [`fd_path`] and [`check_limits`]
/// still judge by the path it really has.
fn beneath(root: BorrowedFd<'_>, path: &Path, flags: libc::c_int) -> io::Result<OwnedFd> {
    let name = c_name(path.as_os_str())?;
    // SAFETY: open_how is plain data; all-zero is its documented default.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
    let mut last = io::Error::from_raw_os_error(libc::EAGAIN);
    for _ in 0..LOOKUP_RETRIES {
        // SAFETY: the pointers are to live, correctly typed values for the call's duration.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                root.as_raw_fd(),
                name.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd >= 0 {
            // SAFETY: the kernel returned a new descriptor that nothing else owns.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) });
        }
        last = io::Error::last_os_error();
        match last.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => continue,
            Some(libc::ENOSYS) => return open_at(root, path.as_os_str(), flags, 0),
            _ => return Err(last),
        }
    }
    Err(last)
}

fn mkdir_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    let name = c_name(name)?;
    // SAFETY: a valid directory fd and a NUL-terminated name.
    if unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o777) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn open_path(path: &Path) -> io::Result<OwnedFd> {
    let name = c_name(path.as_os_str())?;
    // SAFETY: a NUL-terminated path.
    let fd = unsafe {
        libc::open(
            name.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A canonical workspace with `.git/config` and a `dir/` holding `file.txt`.
    fn workspace() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "kept\n").unwrap();
        std::fs::create_dir_all(root.join("dir")).unwrap();
        std::fs::write(root.join("dir/file.txt"), "old\n").unwrap();
        (dir, root)
    }

    #[test]
    fn a_directory_swapped_for_a_link_after_the_check_is_not_followed() {
        let (_dir, root) = workspace();
        let target = WriteTarget::open(&root, "dir/file.txt", false).unwrap();
        std::fs::rename(root.join("dir"), root.join("moved")).unwrap();
        std::os::unix::fs::symlink(".git", root.join("dir")).unwrap();
        target.write_atomic(b"new\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("moved/file.txt")).unwrap(),
            "new\n"
        );
        assert!(!root.join(".git/file.txt").exists());
    }

    #[test]
    fn a_file_swapped_for_a_link_after_the_check_is_replaced_not_written_through() {
        let (_dir, root) = workspace();
        let target = WriteTarget::open(&root, "dir/file.txt", false).unwrap();
        std::fs::remove_file(root.join("dir/file.txt")).unwrap();
        std::os::unix::fs::symlink(root.join(".git/config"), root.join("dir/file.txt")).unwrap();
        assert!(target.open_read().is_err(), "the read followed the link");
        target.write_atomic(b"new\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join(".git/config")).unwrap(),
            "kept\n"
        );
        let written = std::fs::symlink_metadata(root.join("dir/file.txt")).unwrap();
        assert!(written.file_type().is_file());
    }

    #[test]
    fn no_directory_is_created_inside_a_protected_path() {
        let (_dir, root) = workspace();
        std::fs::create_dir(root.join(".claude")).unwrap();
        std::os::unix::fs::symlink(".claude", root.join("alias")).unwrap();
        let error = WriteTarget::open(&root, "alias/new/settings.json", true)
            .err()
            .unwrap();
        assert!(error.contains("`.claude` is protected"), "{error}");
        assert_eq!(std::fs::read_dir(root.join(".claude")).unwrap().count(), 0);
    }

    #[test]
    fn protected_names_are_refused_when_reached_by_a_link_or_created() {
        let (_dir, root) = workspace();
        std::os::unix::fs::symlink("skills", root.join("s")).unwrap();
        std::fs::create_dir(root.join("skills")).unwrap();
        for path in ["s/x.md", "skills/x.md", "dir/.git/config", "dir/.Agents/x"] {
            let error = WriteTarget::open(&root, path, true).err().unwrap();
            assert!(error.contains("is protected"), "{path}: {error}");
        }
        assert!(!root.join("dir/.git").exists());
        assert!(!root.join("dir/.Agents").exists());
    }

    #[test]
    fn project_configuration_is_refused_existing_or_not_and_nothing_is_created() {
        let (_dir, root) = workspace();
        std::fs::create_dir(root.join("a")).unwrap();
        for path in [
            ".mcp.json",
            "dir/.mcp.json",
            ".git/hooks/pre-commit",
            ".git/config",
            "a/../.claude/settings.json",
            "a/.agents/settings.toml",
        ] {
            let error = WriteTarget::open(&root, path, true).err().unwrap();
            assert!(error.contains("is protected"), "{path}: {error}");
        }
        assert!(!root.join(".git/hooks").exists());
        assert!(!root.join(".claude").exists());
        assert!(!root.join("a/.agents").exists());
        assert_eq!(
            std::fs::read_to_string(root.join(".git/config")).unwrap(),
            "kept\n"
        );
    }

    #[test]
    fn a_notes_file_is_written_only_by_its_own_name() {
        let (_dir, root) = workspace();
        std::fs::write(root.join("AGENTS.md"), "notes\n").unwrap();
        std::os::unix::fs::symlink("AGENTS.md", root.join("notes")).unwrap();
        let error = WriteTarget::open(&root, "notes", false).err().unwrap();
        assert!(
            error.contains("notes leads to `AGENTS.md` through a symlink"),
            "{error}"
        );
        let target = WriteTarget::open(&root, "AGENTS.md", false).unwrap();
        target.write_atomic(b"approved\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("AGENTS.md")).unwrap(),
            "approved\n"
        );
    }

    #[test]
    fn writes_create_missing_directories_and_keep_the_mode() {
        let (_dir, root) = workspace();
        let target = WriteTarget::open(&root, "a/b/c.txt", true).unwrap();
        assert!(!target.exists().unwrap());
        target.write_atomic(b"c\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("a/b/c.txt")).unwrap(),
            "c\n"
        );

        std::fs::set_permissions(
            root.join("dir/file.txt"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        let target = WriteTarget::open(&root, "dir/file.txt", false).unwrap();
        assert!(target.exists().unwrap());
        target.write_atomic(b"new\n").unwrap();
        let mode = std::fs::metadata(root.join("dir/file.txt"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read_dir(root.join("dir")).unwrap().count(), 1);
    }

    #[test]
    fn a_directory_is_not_a_write_target() {
        let (_dir, root) = workspace();
        let error = WriteTarget::open(&root, "dir", true)
            .unwrap()
            .exists()
            .unwrap_err();
        assert!(error.contains("is a directory"), "{error}");
        assert!(WriteTarget::open(&root, ".", true).is_err());
    }
}
