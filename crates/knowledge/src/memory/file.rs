//! Reading and writing one store file. Reads are bounded and refuse another user's file;
//! writes replace the file atomically (`atomic_file`, 0600), so a crash leaves the old file or
//! the new one, never a torn mix. Blocking: callers use `spawn_blocking`.

use std::path::Path;

use anyhow::Context;

use super::entries::Entries;

/// Bytes of a store file read at most: far above any sensible limit (4 bytes a char at most),
/// so a huge or endless file cannot fill the daemon's memory.
pub(crate) const MAX_FILE_BYTES: usize = 256 * 1024;

/// A store file as read.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    pub(crate) entries: Entries,
    /// The file is longer than [`MAX_FILE_BYTES`]: what was read is only its start, and
    /// saving it would lose the rest, so it must not be written.
    pub(crate) truncated: bool,
}

/// Reads the store at `path`; a missing file is an empty store. The file must be ours and in
/// its own directory: a store that is a symlink to a file elsewhere (`~/.ssh/id_ed25519`) is
/// refused, never read into a prompt.
pub(crate) fn load(path: &Path) -> anyhow::Result<Loaded> {
    let dir = path.parent().unwrap_or(Path::new("."));
    match agentd_core::regular_file::read_own_text_within(path, dir, MAX_FILE_BYTES) {
        Ok(read) => Ok(Loaded {
            entries: Entries::parse(&read.text),
            truncated: read.truncated,
        }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Loaded::default()),
        Err(error) => Err(error).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Writes `entries` to `path` atomically.
pub(crate) fn save(path: &Path, entries: &Entries) -> anyhow::Result<()> {
    save_with(path, entries, &|| Ok(()))
}

/// [`save`], with `before_rename` called once the temp file is written and synced (tests use
/// it to stop there, as a crash would).
pub(crate) fn save_with(
    path: &Path,
    entries: &Entries,
    before_rename: &dyn Fn() -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let mut text = entries.render();
    if !text.is_empty() {
        text.push('\n');
    }
    let options = agentd_core::atomic_file::Options {
        before_rename: Some(before_rename),
        ..Default::default()
    };
    agentd_core::atomic_file::replace_atomically_with(path, text.as_bytes(), 0o600, &options)
        .with_context(|| format!("cannot replace {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_crash_between_temp_write_and_rename_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("MEMORY.md");
        save(&path, &Entries::parse("old entry")).unwrap();
        let crash = || Err(std::io::Error::other("simulated crash"));
        let error = save_with(&path, &Entries::parse("new entry"), &crash).unwrap_err();
        assert!(
            format!("{error:#}").contains("simulated crash"),
            "{error:#}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old entry\n");
        assert_eq!(load(&path).unwrap().entries, Entries::parse("old entry"));
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("MEMORY.md")]);
    }

    #[test]
    fn a_leftover_temp_file_is_not_read_and_saves_still_work() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("USER.md");
        save(&path, &Entries::parse("kept")).unwrap();
        // What a daemon killed after writing its temp file leaves behind.
        std::fs::write(dir.path().join(".USER.md.1.0.tmp"), "torn").unwrap();
        assert_eq!(load(&path).unwrap().entries, Entries::parse("kept"));
        save(&path, &Entries::parse("kept\n§\nnext")).unwrap();
        assert_eq!(load(&path).unwrap().entries.as_slice().len(), 2);
    }

    #[test]
    fn files_are_private_and_a_missing_file_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("MEMORY.md");
        let loaded = load(&path).unwrap();
        assert!(loaded.entries.is_empty() && !loaded.truncated);
        save(&path, &Entries::parse("a")).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn an_oversized_file_is_marked_truncated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("MEMORY.md");
        std::fs::write(&path, "x".repeat(MAX_FILE_BYTES + 1)).unwrap();
        assert!(load(&path).unwrap().truncated);
    }
}
