//! Opening the files the daemon reads from its own directories (session logs, the lock file):
//! regular files only, and never in a way that blocks. A FIFO or a device planted there would
//! otherwise hang the opening thread (a FIFO's `open` waits for a writer). Also reading what
//! users and repositories provide, bounded, and the owner checks for files and directories
//! only the daemon's own user may provide (project settings and notes).

use std::fs::File;
use std::path::Path;

use crate::platform;

use anyhow::{Context, Result, bail};

/// Open `path` for reading. Opened with `O_NONBLOCK` (a FIFO does not wait for a writer) and
/// `O_NOFOLLOW` (a symlink is not followed out of the directory), then the opened descriptor's
/// own metadata must say "regular file", so nothing swapped in between the check and the open
/// gets through. On a regular file `O_NONBLOCK` changes nothing.
pub fn open(path: &Path) -> Result<File> {
    open_with(path, std::fs::OpenOptions::new().read(true))
}

/// As [`open`], with the caller's options (write, create, mode); the non-blocking and
/// no-follow flags are added here.
pub fn open_with(path: &Path, options: &mut std::fs::OpenOptions) -> Result<File> {
    let file = platform::no_follow(options).open(path).map_err(|err| {
        if platform::is_link_refused(&err) {
            anyhow::anyhow!(
                "{} is a symbolic link; only regular files are used there",
                path.display()
            )
        } else {
            anyhow::Error::new(err).context(format!("cannot open {}", path.display()))
        }
    })?;
    let metadata = file
        .metadata()
        .with_context(|| format!("cannot inspect {}", path.display()))?;
    if !metadata.is_file() {
        bail!(
            "{} is not a regular file ({}); remove it or move it away",
            path.display(),
            kind_of(&metadata.file_type())
        );
    }
    Ok(file)
}

pub use platform::{current_uid, kind_of};

/// What [`read_text`] found at a path.
#[derive(Debug, PartialEq, Eq)]
pub struct Text {
    pub text: String,
    /// The file held more than the cap; `text` is its head.
    pub truncated: bool,
}

/// The error inside what [`read_own_text`] returns for another user's file (find it with
/// [`OtherUsersFile::of`]).
#[derive(Debug, thiserror::Error)]
#[error(
    "{} belongs to another user (uid {owner}), and files of other users are never read; \
     if you trust it, make it yours: chown {} {}",
    path.display(),
    current_uid(),
    path.display()
)]
pub struct OtherUsersFile {
    pub path: std::path::PathBuf,
    pub owner: u32,
}

impl OtherUsersFile {
    /// The refusal inside `error`, when [`read_own_text`] refused another user's file.
    pub fn of(error: &std::io::Error) -> Option<&OtherUsersFile> {
        error.get_ref()?.downcast_ref::<OtherUsersFile>()
    }
}

/// Read a text file that a user or a repository provides (config, project settings, project
/// notes): symlinks are followed (`CLAUDE.md -> AGENTS.md` is common), but the file is opened
/// without blocking and must be a regular file, and at most `max_bytes` are read, so a FIFO,
/// a device or a huge file planted in a repository neither hangs a thread nor fills memory.
/// Invalid UTF-8 is replaced. A missing file keeps its `NotFound` kind for the caller.
pub fn read_text(path: &Path, max_bytes: usize) -> std::io::Result<Text> {
    let (file, _) = open_regular(path)?;
    read_capped(file, max_bytes)
}

/// As [`read_text`], for files that may change what the daemon lets a session do or tell its
/// model (project settings, project notes): the opened file (the target of a symlink) must
/// also belong to the user the daemon runs as. Another user's file is refused with a
/// `PermissionDenied` error that names its owner, never read: a file planted by another local
/// user in a shared directory must not choose rules or instructions.
pub fn read_own_text(path: &Path, max_bytes: usize) -> std::io::Result<Text> {
    let (file, metadata) = open_regular(path)?;
    refuse_other_users(path, &metadata)?;
    read_capped(file, max_bytes)
}

/// The error inside what [`read_own_text_within`] returns for a file a symlink leads out of
/// the directory it must stay in (find it with [`OutsideRoot::of`]).
#[derive(Debug, thiserror::Error)]
#[error(
    "{} leads to {} through a symbolic link, outside {}, and nothing is read through such a \
     link; put the file itself there instead of the link",
    path.display(),
    real.display(),
    root.display()
)]
pub struct OutsideRoot {
    pub path: std::path::PathBuf,
    /// Where the opened file really is.
    pub real: std::path::PathBuf,
    pub root: std::path::PathBuf,
}

impl OutsideRoot {
    /// The refusal inside `error`, when [`read_own_text_within`] refused a file out of its root.
    pub fn of(error: &std::io::Error) -> Option<&OutsideRoot> {
        error.get_ref()?.downcast_ref::<OutsideRoot>()
    }
}

/// A definition file's text (an agent definition, a slash command) read with
/// [`read_own_text_within`], or the reason it cannot be used, worded for a listing's
/// `problems`: too big ("shorten its prompt"), leading out of `root`, another user's, unreadable.
pub fn read_definition_text(path: &Path, root: &Path, max_bytes: usize) -> Result<String, String> {
    match read_own_text_within(path, root, max_bytes) {
        Ok(read) if read.truncated => Err(format!(
            "larger than {} KiB; shorten its prompt",
            max_bytes / 1024
        )),
        Ok(read) => Ok(read.text),
        Err(err) => {
            if let Some(refusal) = OutsideRoot::of(&err) {
                return Err(format!("not used: {refusal}"));
            }
            Err(match OtherUsersFile::of(&err) {
                Some(refusal) => refusal.to_string(),
                None => format!("cannot read it: {err}"),
            })
        }
    }
}

/// As [`read_own_text`], for files a project or the user's config dir provides that must not
/// lead elsewhere (skills, agent definitions): the opened file's real path (through
/// `/proc/self/fd`, so no link swapped in after a check gets through) must lie under `root`
/// (canonicalised here), or it is refused with [`OutsideRoot`] inside a `PermissionDenied`
/// error, never read. A `SKILL.md` linked to `~/.ssh/id_ed25519` or `/etc/shadow` is not
/// read into a model's context.
pub fn read_own_text_within(path: &Path, root: &Path, max_bytes: usize) -> std::io::Result<Text> {
    let (file, metadata) = open_regular(path)?;
    let root = root.canonicalize()?;
    let real = platform::real_path(&file, path)?;
    if !real.starts_with(&root) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            OutsideRoot {
                path: path.to_path_buf(),
                real,
                root,
            },
        ));
    }
    refuse_other_users(path, &metadata)?;
    read_capped(file, max_bytes)
}

/// The refusal of a file (`metadata`, opened from `path`) another user owns: a
/// `PermissionDenied` error with [`OtherUsersFile`] inside.
fn refuse_other_users(path: &Path, metadata: &std::fs::Metadata) -> std::io::Result<()> {
    if owned_by_us(metadata) {
        return Ok(());
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        OtherUsersFile {
            path: path.to_path_buf(),
            owner: platform::owner_of(metadata),
        },
    ))
}

/// Whether `path` (symlinks followed) is under `root` (symlinks followed); false when either
/// cannot be resolved.
pub fn resolves_within(path: &Path, root: &Path) -> bool {
    match (path.canonicalize(), root.canonicalize()) {
        (Ok(path), Ok(root)) => path.starts_with(root),
        _ => false,
    }
}

/// Whether `path` is a directory of ours reached without a symlink at its last component
/// (`lstat`): a store the daemon writes into must not be a link to somewhere else.
pub fn is_own_real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path)
        .is_ok_and(|metadata| metadata.is_dir() && owned_by_us(&metadata))
}

/// As [`read_own_text`], for the user's own config.toml: a file of root is read too (an
/// administrator may provide it), a file of any other user is refused the same way. The config
/// chooses providers, keys and rules, so it must not be one another local user can write.
pub fn read_config_text(path: &Path, max_bytes: usize) -> std::io::Result<Text> {
    let (file, metadata) = open_regular(path)?;
    let owner = platform::owner_of(&metadata);
    if owner != 0 && !owned_by_us(&metadata) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            OtherUsersFile {
                path: path.to_path_buf(),
                owner,
            },
        ));
    }
    read_capped(file, max_bytes)
}

/// Whether `metadata` (of a file or a directory) belongs to the user the daemon runs as.
pub fn owned_by_us(metadata: &std::fs::Metadata) -> bool {
    platform::owner_of(metadata) == current_uid()
}

/// Whether `path` is a directory of the user the daemon runs as (symlinks followed). False
/// for another user's directory, for anything else and for what cannot be inspected.
pub fn is_own_dir(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|metadata| metadata.is_dir() && owned_by_us(&metadata))
}

/// `path` opened for reading without blocking, and its metadata, which say "regular file".
fn open_regular(path: &Path) -> std::io::Result<(File, std::fs::Metadata)> {
    let file = platform::non_blocking(std::fs::OpenOptions::new().read(true)).open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(std::io::Error::other(format!(
            "{} is {}, not a regular file",
            path.display(),
            kind_of(&metadata.file_type())
        )));
    }
    Ok((file, metadata))
}

/// At most `max_bytes` of `file` as text (invalid UTF-8 replaced).
fn read_capped(file: File, max_bytes: usize) -> std::io::Result<Text> {
    use std::io::Read;
    let mut bytes = Vec::new();
    let limit = u64::try_from(max_bytes)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    file.take(limit).read_to_end(&mut bytes)?;
    let truncated = bytes.len() > max_bytes;
    bytes.truncate(max_bytes);
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
    };
    Ok(Text { text, truncated })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_a_directory_and_a_symlink_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.jsonl");
        crate::test_support::mkfifo(&fifo);
        let err = open(&fifo).unwrap_err().to_string();
        assert!(err.contains("named pipe"), "{err}");

        let err = open(dir.path()).unwrap_err().to_string();
        assert!(err.contains("directory"), "{err}");

        let target = dir.path().join("real.jsonl");
        std::fs::write(&target, "x").unwrap();
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = open(&link).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");

        open(&target).unwrap();
    }

    #[test]
    fn read_text_refuses_a_fifo_and_caps_a_big_file() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("AGENTS.md");
        crate::test_support::mkfifo(&fifo);
        let err = read_text(&fifo, 10).unwrap_err().to_string();
        assert!(err.contains("named pipe"), "{err}");

        let big = dir.path().join("big.md");
        std::fs::write(&big, "x".repeat(100)).unwrap();
        let link = dir.path().join("CLAUDE.md");
        std::os::unix::fs::symlink(&big, &link).unwrap();
        let read = read_text(&link, 10).unwrap();
        assert_eq!(
            read,
            Text {
                text: "x".repeat(10),
                truncated: true
            }
        );
        let read = read_text(&big, 100).unwrap();
        assert!(!read.truncated);

        let missing = read_text(&dir.path().join("none"), 10).unwrap_err();
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn read_own_text_within_refuses_a_link_out_of_its_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        std::fs::create_dir_all(root.join("skills/x")).unwrap();
        std::fs::write(root.join("shared.md"), "shared").unwrap();
        let outside = dir.path().join("id_ed25519");
        std::fs::write(&outside, "secret key").unwrap();
        let inside_link = root.join("skills/x/SKILL.md");
        std::os::unix::fs::symlink(root.join("shared.md"), &inside_link).unwrap();
        assert_eq!(
            read_own_text_within(&inside_link, &root, 100).unwrap().text,
            "shared"
        );
        let out_link = root.join("skills/x/other.md");
        std::os::unix::fs::symlink(&outside, &out_link).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("skills/up")).unwrap();
        for path in [out_link, root.join("skills/up/id_ed25519")] {
            let error = read_own_text_within(&path, &root, 100).unwrap_err();
            assert_eq!(error.kind(), std::io::ErrorKind::PermissionDenied);
            let refusal = OutsideRoot::of(&error).unwrap();
            assert_eq!(refusal.real, outside.canonicalize().unwrap());
            let message = error.to_string();
            assert!(
                message.contains("through a symbolic link") && !message.contains("secret"),
                "{message}"
            );
        }
        assert!(resolves_within(&root.join("skills/x"), &root));
        assert!(!resolves_within(&root.join("skills/up"), &root));
        assert!(is_own_real_dir(&root.join("skills")));
        assert!(!is_own_real_dir(&root.join("skills/up")), "a link to a dir");
    }

    #[test]
    fn read_own_text_refuses_another_users_file_even_through_our_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let theirs = dir.path().join("AGENTS.md");
        std::fs::write(&theirs, "planted").unwrap();
        let ours = dir.path().join("CLAUDE.md");
        std::fs::write(&ours, "ours").unwrap();
        assert_eq!(read_own_text(&ours, 10).unwrap().text, "ours");
        assert!(is_own_dir(dir.path()));
        assert!(!is_own_dir(&ours), "a file is no directory");
        let test = "read_own_text_refuses_another_users_file_even_through_our_symlink";
        if !crate::test_support::give_to_other_user(test, &theirs) {
            return;
        }
        let link = dir.path().join("link.md");
        std::os::unix::fs::symlink(&theirs, &link).unwrap();
        for path in [&theirs, &link] {
            let error = read_own_text(path, 10).unwrap_err();
            assert_eq!(error.kind(), std::io::ErrorKind::PermissionDenied);
            let refusal = OtherUsersFile::of(&error).unwrap();
            assert_eq!(refusal.owner, crate::test_support::OTHER_UID);
            let message = error.to_string();
            assert!(
                message.contains(&path.display().to_string())
                    && message.contains("uid 65534")
                    && message.contains("chown"),
                "{message}"
            );
        }
        // Anything else keeps its own error: no refusal inside.
        let missing = read_own_text(&dir.path().join("none"), 10).unwrap_err();
        assert!(OtherUsersFile::of(&missing).is_none());
        // Reading what users provide without the owner rule still works.
        assert_eq!(read_text(&theirs, 10).unwrap().text, "planted");
        crate::test_support::give_to_other_user(test, dir.path());
        assert!(!is_own_dir(dir.path()));
    }
}
