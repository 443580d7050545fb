//! Windows: by path, each component looked at without following it before it is used.

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

use super::EntryMode;

/// The workspace directory.
pub(crate) struct Root(PathBuf);

impl Root {
    pub(crate) fn open(path: &Path) -> io::Result<Root> {
        let root = path.canonicalize()?;
        if !std::fs::metadata(&root)?.is_dir() {
            return Err(io::Error::other("the workspace is not a directory"));
        }
        Ok(Root(root))
    }

    /// The directory of `relative` (its parent components), each checked to be a directory
    /// and no link; missing ones are made when `create` is set. The file's name in it.
    fn parent_of<'a>(&self, relative: &'a Path, create: bool) -> io::Result<(PathBuf, &'a OsStr)> {
        let (names, name) = super::split_plain(relative)?;
        let mut dir = self.0.clone();
        for part in names {
            dir.push(part);
            match std::fs::symlink_metadata(&dir) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    return Err(io::Error::other(format!(
                        "{} is in the way (a symlink or a file where a directory was)",
                        part.to_string_lossy()
                    )));
                }
                Err(error) if error.kind() == io::ErrorKind::NotFound && create => {
                    std::fs::create_dir(&dir)?;
                }
                Err(error) => return Err(error),
            }
        }
        Ok((dir, name))
    }

    /// Writes `content` at `relative` as `mode`, replacing what is there (a file or a link; a
    /// directory is refused). Windows has no executable bit: `Executable` is a file.
    pub(crate) fn write(&self, relative: &Path, mode: EntryMode, content: &[u8]) -> io::Result<()> {
        let (dir, name) = self.parent_of(relative, true)?;
        let path = dir.join(name);
        let existing = match std::fs::symlink_metadata(&path) {
            Ok(meta) => Some(meta),
            Err(error) if error.kind() == io::ErrorKind::NotFound => None,
            Err(error) => return Err(error),
        };
        if existing.as_ref().is_some_and(|meta| meta.is_dir()) {
            return Err(io::Error::other("a directory is in the way"));
        }
        match mode {
            EntryMode::Symlink => {
                if existing.is_some() {
                    std::fs::remove_file(&path)?;
                }
                let target = std::str::from_utf8(content).map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        "a link target that is not UTF-8",
                    )
                })?;
                std::os::windows::fs::symlink_file(target, &path)
            }
            EntryMode::File | EntryMode::Executable => {
                agentd_core::atomic_file::replace_atomically(&path, content, 0o666)
            }
        }
    }

    /// Removes the file or link at `relative` (gone already: fine), then each parent left
    /// empty that `keep_dir` does not keep, up to the workspace.
    pub(crate) fn remove(
        &self,
        relative: &Path,
        keep_dir: &dyn Fn(&Path) -> bool,
    ) -> io::Result<()> {
        let (dir, name) = match self.parent_of(relative, false) {
            Ok(found) => found,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(error) => return Err(error),
        };
        let path = dir.join(name);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => {
                return Err(io::Error::other("a directory is there now; left alone"));
            }
            Ok(_) => std::fs::remove_file(&path)?,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
        let mut parent = relative.parent();
        while let Some(dir) = parent.filter(|dir| !dir.as_os_str().is_empty()) {
            if keep_dir(dir) {
                break;
            }
            // Fails (and stops) unless the directory is empty.
            if std::fs::remove_dir(self.0.join(dir)).is_err() {
                break;
            }
            parent = dir.parent();
        }
        Ok(())
    }
}
