//! Where `write_file` and `edit_file` really write, on Windows: the path resolved in the
//! workspace (links followed only while they stay inside), every directory on the way
//! checked by the path it really has before the next is made, the hard limits checked on the
//! final path, the file opened without following a reparse point and replaced through
//! `atomic_file`. Unlike Unix's `openat2(RESOLVE_BENEATH)`, a link swapped in between these
//! checks and the write is not caught. Blocking: call it on the blocking pool.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::text_file;
use super::write_limits::{canonical_workspace, check_limits, escapes};
use agentd_core::workspace::{display_path, is_notes_name, notes_through_link};

/// A file about to be written: its directory's real path, checked, and the file's name in it.
pub(crate) struct WriteTarget {
    dir: PathBuf,
    name: OsString,
    /// How the path is shown to the model (relative to the workspace).
    pub(crate) shown: String,
}

impl WriteTarget {
    /// Resolves `path` (as the model gave it) in `workspace`, creating missing directories
    /// when `create_parents` is set, each checked before anything is made in it.
    pub(crate) fn open(
        workspace: &Path,
        path: &str,
        create_parents: bool,
    ) -> Result<WriteTarget, String> {
        let workspace = canonical_workspace(workspace)?;
        let resolved = agentd_core::workspace::resolve_in_workspace(&workspace, path)?;
        // The file's own name may be a link: write to what it leads to (inside the workspace).
        let resolved = match resolved.canonicalize() {
            Ok(real) => real,
            Err(error) if error.kind() == io::ErrorKind::NotFound => resolved,
            Err(error) => return Err(format!("{path}: cannot open: {error}")),
        };
        check_limits(&resolved, &workspace, path)?;
        let name = resolved
            .file_name()
            .map(|name| name.to_os_string())
            .ok_or_else(|| format!("{path} is the workspace directory; give a file path"))?;
        let parent = resolved
            .parent()
            .ok_or_else(|| escapes(path, &resolved, &workspace))?;
        let relative = parent
            .strip_prefix(&workspace)
            .map_err(|_| escapes(path, &resolved, &workspace))?;
        let mut dir = workspace.clone();
        for component in relative.components() {
            dir.push(component.as_os_str());
            match std::fs::symlink_metadata(&dir) {
                Ok(meta) if meta.is_dir() => {}
                Ok(meta) if meta.file_type().is_symlink() => {
                    let real = dir
                        .canonicalize()
                        .map_err(|error| format!("{path}: cannot open: {error}"))?;
                    check_limits(&real, &workspace, path)?;
                    dir = real;
                }
                Ok(_) => {
                    return Err(format!(
                        "{path}: a part of the path is a file, not a directory"
                    ));
                }
                Err(error) if create_parents && error.kind() == io::ErrorKind::NotFound => {
                    check_limits(&dir, &workspace, path)?;
                    std::fs::create_dir(&dir).map_err(|error| {
                        format!("cannot create the directories for {path}: {error}")
                    })?;
                }
                Err(error) => return Err(format!("{path}: cannot open: {error}")),
            }
        }
        let real = dir.join(&name);
        check_limits(&real, &workspace, path)?;
        let shown = display_path(&workspace, &real);
        if is_notes_name(&name) && !Path::new(path).file_name().is_some_and(is_notes_name) {
            return Err(notes_through_link(path, &shown));
        }
        Ok(WriteTarget { dir, name, shown })
    }

    fn path(&self) -> PathBuf {
        self.dir.join(&self.name)
    }

    /// Whether the file exists now (a directory at its name is an error).
    pub(crate) fn exists(&self) -> Result<bool, String> {
        match std::fs::symlink_metadata(self.path()) {
            Ok(meta) if meta.is_dir() => {
                Err(format!("{} is a directory; give a file path", self.shown))
            }
            Ok(_) => Ok(true),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(format!("cannot look at {}: {error}", self.shown)),
        }
    }

    /// Opens the file for reading: a regular file only (a link put in its place since is
    /// opened as itself and refused).
    pub(crate) fn open_read(&self) -> Result<File, text_file::OpenError> {
        let file = agentd_core::platform::no_follow(std::fs::OpenOptions::new().read(true))
            .open(self.path())?;
        text_file::check_kind(&file.metadata()?.file_type())?;
        Ok(file)
    }

    /// Replaces the file with `bytes` (`atomic_file`).
    pub(crate) fn write_atomic(&self, bytes: &[u8]) -> io::Result<()> {
        agentd_core::atomic_file::replace_atomically(&self.path(), bytes, 0o666)
    }
}
