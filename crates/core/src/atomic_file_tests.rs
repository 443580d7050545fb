//! Tests of the atomic file writer.

use super::*;
use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn mode_of(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

fn open_dir(path: &Path) -> File {
    File::open(path).unwrap()
}

#[test]
fn the_content_is_replaced_and_a_new_file_gets_the_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    replace_atomically(&path, b"first", 0o600).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"first");
    assert_eq!(mode_of(&path), 0o600);
    // Owner bits only: no umask takes those away.
    replace_atomically(&path, b"second, longer", 0o400).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"second, longer");
    assert_eq!(mode_of(&path), 0o400, "the mode given is the new file's");
    assert_eq!(names_in(dir.path()), ["state.json"]);
}

#[test]
fn keep_existing_mode_keeps_the_replaced_files_bits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    let keep = Options {
        keep_existing_mode: true,
        ..Options::default()
    };
    replace_atomically_with(&path, b"new", 0o600, &keep).unwrap();
    assert_eq!(mode_of(&path), 0o600, "a new file gets the mode given");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o751)).unwrap();
    replace_atomically_with(&path, b"again", 0o600, &keep).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"again");
    assert_eq!(mode_of(&path), 0o751);
}

#[test]
fn a_symlink_at_the_temp_name_is_not_followed_nor_removed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    replace_atomically(&path, b"old", 0o600).unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::write(&elsewhere, "theirs").unwrap();
    let temp = OsStr::new(".state.json.planted.tmp");
    std::os::unix::fs::symlink(&elsewhere, dir.path().join(temp)).unwrap();
    let handle = open_dir(dir.path());
    let result = replace_through(
        handle.as_fd(),
        temp,
        OsStr::new("state.json"),
        b"new",
        0o600,
        &Options::default(),
    );
    assert!(
        matches!(&result, Err(Failure::Taken(error)) if error.kind() == io::ErrorKind::AlreadyExists),
        "the taken name was not refused"
    );
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "theirs");
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    let planted = std::fs::symlink_metadata(dir.path().join(temp)).unwrap();
    assert!(
        planted.file_type().is_symlink(),
        "someone else's link was removed"
    );
    // A writer that meets a taken name moves on to a free one.
    replace_in_dir(
        handle.as_fd(),
        OsStr::new("state.json"),
        b"new",
        0o600,
        &Options::default(),
    )
    .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"new");
}

#[test]
fn a_symlink_at_the_target_is_replaced_not_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::write(&elsewhere, "theirs").unwrap();
    let path = dir.path().join("state.json");
    std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
    replace_atomically(&path, b"ours", 0o600).unwrap();
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "theirs");
    assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
    assert_eq!(std::fs::read(&path).unwrap(), b"ours");
}

#[test]
fn a_failure_before_the_rename_leaves_the_old_content_and_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    replace_atomically(&path, b"old", 0o600).unwrap();
    let crash = || Err(io::Error::other("simulated crash"));
    let stop = Options {
        before_rename: Some(&crash),
        ..Options::default()
    };
    let error = replace_atomically_with(&path, b"new", 0o600, &stop).unwrap_err();
    assert!(error.to_string().contains("simulated crash"), "{error}");
    assert!(
        error.to_string().contains("cannot write .state.json."),
        "{error}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    assert_eq!(names_in(dir.path()), ["state.json"]);
}

#[test]
fn a_failed_rename_leaves_the_target_and_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    // A non-empty directory at the target's name: the rename over it fails.
    let path = dir.path().join("state.json");
    std::fs::create_dir(&path).unwrap();
    std::fs::write(path.join("inside"), "kept").unwrap();
    let error = replace_atomically(&path, b"new", 0o600).unwrap_err();
    assert!(error.to_string().contains("cannot rename"), "{error}");
    assert_eq!(
        std::fs::read_to_string(path.join("inside")).unwrap(),
        "kept"
    );
    assert_eq!(names_in(dir.path()), ["state.json"]);
}

#[test]
fn a_missing_directory_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing/state.json");
    let error = replace_atomically(&path, b"new", 0o600).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::NotFound);
    assert!(error.to_string().contains("missing"), "{error}");
}

#[test]
fn temp_names_are_told_apart_from_records() {
    let temp = temp_name(OsStr::new("task_1.json"));
    assert!(is_temp_name(&temp.to_string_lossy()), "{temp:?}");
    assert!(!is_temp_name("task_1.json"));
    assert_ne!(temp, temp_name(OsStr::new("task_1.json")));
}
