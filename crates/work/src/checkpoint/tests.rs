//! The checkpoint stores against real git: snapshots, what they leave out, plans, restores.

use std::path::Path;
use std::sync::Arc;

use super::*;

struct Fixture {
    _state: tempfile::TempDir,
    work: tempfile::TempDir,
    checkpoints: Arc<Checkpoints>,
}

fn fixture(settings: CheckpointSettings) -> Fixture {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let checkpoints = Checkpoints::new(state.path().join("checkpoints"), settings, None);
    Fixture {
        _state: state,
        work,
        checkpoints,
    }
}

impl Fixture {
    fn root(&self) -> &Path {
        self.work.path()
    }

    fn write(&self, path: &str, text: &str) {
        let path = self.root().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.root().join(path)).ok()
    }

    async fn snapshot(&self) -> Snapshot {
        self.checkpoints.snapshot(self.root()).await.unwrap()
    }
}

fn paths(paths: &[RelPath]) -> Vec<String> {
    paths.iter().map(RelPath::display).collect()
}

#[tokio::test]
async fn an_unchanged_tree_gives_the_same_checkpoint_and_a_change_a_new_one() {
    let f = fixture(CheckpointSettings::default());
    f.write("a.txt", "one\n");
    let first = f.snapshot().await;
    assert_eq!(f.snapshot().await, first);
    f.write("a.txt", "two\n");
    let second = f.snapshot().await;
    assert_ne!(second.commit, first.commit);
    let changes = f
        .checkpoints
        .changes(f.root(), &first.commit, &second.commit)
        .await
        .unwrap();
    assert_eq!(
        changes,
        vec![Change {
            path: RelPath(b"a.txt".to_vec()),
            kind: ChangeKind::Modified
        }]
    );
    let (diff, cut) = f
        .checkpoints
        .diff(f.root(), &first.commit, &second.commit, 1 << 20)
        .await
        .unwrap();
    assert!(!cut);
    assert!(diff.contains("-one\n+two\n"), "{diff}");
}

#[tokio::test]
async fn ignored_oversized_and_nested_repositories_are_left_out_and_said() {
    let settings = CheckpointSettings {
        max_file_bytes: 100,
        ..Default::default()
    };
    let f = fixture(settings);
    f.write(".gitignore", "target/\n");
    f.write("target/out.bin", "built");
    f.write("big.bin", &"x".repeat(101));
    let nested = f.root().join("nested");
    let made = std::process::Command::new("git")
        .args(["init", "-q"])
        .arg(&nested)
        .status()
        .unwrap();
    assert!(made.success());
    f.write("nested/inside.txt", "x");
    f.write("src/lib.rs", "fn main() {}\n");
    let snapshot = f.snapshot().await;
    let skipped: Vec<String> = snapshot.skipped.iter().map(ToString::to_string).collect();
    assert_eq!(
        skipped,
        vec![
            "big.bin (101 bytes, too large)".to_owned(),
            "nested (a repository of its own)".to_owned()
        ]
    );
    // Created since, under the limit: removed by a restore; the big file is never touched.
    f.write("new.txt", "new");
    let now = f.snapshot().await;
    let plan = f
        .checkpoints
        .plan(f.root(), &snapshot.commit, &now, None)
        .await
        .unwrap();
    assert_eq!(paths(&plan.delete), vec!["new.txt"]);
    assert!(plan.restore.is_empty());
    f.checkpoints.apply(f.root(), &plan).await.unwrap();
    assert_eq!(f.read("new.txt"), None);
    assert!(f.read("big.bin").is_some());
    assert!(f.read("target/out.bin").is_some());
}

#[tokio::test]
async fn a_restore_undoes_edits_deletions_creations_and_modes_and_is_itself_undoable() {
    use std::os::unix::fs::PermissionsExt;
    let f = fixture(CheckpointSettings::default());
    f.write("keep.txt", "keep\n");
    f.write("edit.txt", "before\n");
    f.write("gone.txt", "still here\n");
    f.write("dir/inner.txt", "inner\n");
    std::os::unix::fs::symlink("keep.txt", f.root().join("link")).unwrap();
    let before = f.snapshot().await;
    // What a run's shell might do.
    f.write("edit.txt", "after\n");
    std::fs::remove_file(f.root().join("gone.txt")).unwrap();
    f.write("made/deep/new.txt", "new\n");
    std::fs::remove_file(f.root().join("link")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", f.root().join("link")).unwrap();
    std::fs::set_permissions(
        f.root().join("keep.txt"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let after = f.snapshot().await;
    let plan = f
        .checkpoints
        .plan(f.root(), &before.commit, &after, Some(&after.commit))
        .await
        .unwrap();
    assert_eq!(
        paths(&plan.restore),
        vec!["edit.txt", "gone.txt", "keep.txt", "link"]
    );
    assert_eq!(paths(&plan.delete), vec!["made/deep/new.txt"]);
    assert!(plan.conflicts.is_empty());
    let done = f.checkpoints.apply(f.root(), &plan).await.unwrap();
    assert!(done.failed.is_empty(), "{:?}", done.failed);
    assert_eq!((done.restored, done.deleted), (4, 1));
    assert_eq!(f.read("edit.txt").as_deref(), Some("before\n"));
    assert_eq!(f.read("gone.txt").as_deref(), Some("still here\n"));
    assert!(
        !f.root().join("made").exists(),
        "emptied directories go too"
    );
    assert_eq!(
        std::fs::read_link(f.root().join("link")).unwrap(),
        Path::new("keep.txt")
    );
    let mode = std::fs::metadata(f.root().join("keep.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0, "the executable bits are undone");
    assert_eq!(f.snapshot().await.commit, before.commit);
    // And back again.
    let now = f.snapshot().await;
    let redo = f
        .checkpoints
        .plan(f.root(), &after.commit, &now, None)
        .await
        .unwrap();
    f.checkpoints.apply(f.root(), &redo).await.unwrap();
    assert_eq!(f.snapshot().await.commit, after.commit);
    assert_eq!(f.read("made/deep/new.txt").as_deref(), Some("new\n"));
}

#[tokio::test]
async fn changes_since_the_sessions_last_checkpoint_are_conflicts() {
    let f = fixture(CheckpointSettings::default());
    f.write("a.txt", "a0\n");
    f.write("b.txt", "b0\n");
    let start = f.snapshot().await;
    f.write("a.txt", "a1 by the run\n");
    f.write("b.txt", "b1 by the run\n");
    let end_of_run = f.snapshot().await;
    // A person edits b afterwards.
    f.write("b.txt", "b2 by hand\n");
    let now = f.snapshot().await;
    let plan = f
        .checkpoints
        .plan(f.root(), &start.commit, &now, Some(&end_of_run.commit))
        .await
        .unwrap();
    assert_eq!(paths(&plan.restore), vec!["a.txt", "b.txt"]);
    assert_eq!(paths(&plan.conflicts), vec!["b.txt"]);
}

#[tokio::test]
async fn a_symlinked_directory_made_since_is_not_written_through() {
    let f = fixture(CheckpointSettings::default());
    let outside = tempfile::tempdir().unwrap();
    f.write("dir/file.txt", "mine\n");
    let before = f.snapshot().await;
    std::fs::remove_dir_all(f.root().join("dir")).unwrap();
    std::os::unix::fs::symlink(outside.path(), f.root().join("dir")).unwrap();
    let now = f.snapshot().await;
    let plan = f
        .checkpoints
        .plan(f.root(), &before.commit, &now, None)
        .await
        .unwrap();
    // The link is "created since" and goes first; the directory comes back.
    assert_eq!(paths(&plan.delete), vec!["dir"]);
    let done = f.checkpoints.apply(f.root(), &plan).await.unwrap();
    assert!(done.failed.is_empty(), "{:?}", done.failed);
    assert_eq!(f.read("dir/file.txt").as_deref(), Some("mine\n"));
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
}

#[tokio::test]
async fn too_many_new_files_refuse_the_checkpoint() {
    let settings = CheckpointSettings {
        max_files: 3,
        ..Default::default()
    };
    let f = fixture(settings);
    for n in 0..5 {
        f.write(&format!("f{n}"), "x");
    }
    let error = f.checkpoints.snapshot(f.root()).await.unwrap_err();
    assert!(error.to_string().contains("more than 3 files"), "{error}");
}

#[tokio::test]
async fn a_home_directory_and_off_are_refused_with_reasons() {
    let state = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let checkpoints = Checkpoints::new(
        state.path().join("c"),
        CheckpointSettings::default(),
        Some(home.path().canonicalize().unwrap()),
    );
    let error = checkpoints.snapshot(home.path()).await.unwrap_err();
    assert!(error.to_string().contains("home directory"), "{error}");
    let off = Checkpoints::new(
        state.path().join("c"),
        CheckpointSettings {
            enabled: false,
            ..Default::default()
        },
        None,
    );
    let status = off.status().await;
    assert!(!status.enabled);
    assert!(status.reason.unwrap().contains("enabled = false"));
}

#[tokio::test]
async fn a_fifo_in_the_workspace_is_never_opened() {
    let f = fixture(CheckpointSettings::default());
    let made = std::process::Command::new("mkfifo")
        .arg(f.root().join("gate"))
        .status()
        .unwrap();
    assert!(made.success());
    f.write("a.txt", "a");
    let snapshot = tokio::time::timeout(std::time::Duration::from_secs(10), f.snapshot())
        .await
        .expect("a checkpoint does not wait on a FIFO");
    let again = f.snapshot().await;
    assert_eq!(snapshot, again);
}

#[tokio::test]
async fn a_lock_left_by_a_killed_git_does_not_stop_the_next_daemons_checkpoints() {
    let f = fixture(CheckpointSettings::default());
    f.write("a.txt", "a");
    f.snapshot().await;
    // As a git killed mid-update leaves it; a new daemon's stores start afresh.
    let store_dir = std::fs::read_dir(f._state.path().join("checkpoints"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(store_dir.join("index.lock"), "").unwrap();
    let next = Checkpoints::new(
        f._state.path().join("checkpoints"),
        CheckpointSettings::default(),
        None,
    );
    f.write("a.txt", "b");
    next.snapshot(f.root()).await.unwrap();
}

#[tokio::test]
async fn a_workspace_with_too_many_files_is_not_walked_again_at_every_batch() {
    let settings = CheckpointSettings {
        max_files: 2,
        ..Default::default()
    };
    let f = fixture(settings);
    for n in 0..3 {
        f.write(&format!("f{n}"), "x");
    }
    let first = f.checkpoints.snapshot(f.root()).await.unwrap_err();
    assert!(
        matches!(first, CheckpointError::TooManyFiles { .. }),
        "{first}"
    );
    std::fs::remove_file(f.root().join("f0")).unwrap();
    let second = f.checkpoints.snapshot(f.root()).await.unwrap_err();
    assert!(
        matches!(&second, CheckpointError::Refused(why) if why.contains("not tried again")),
        "{second}"
    );
}

#[tokio::test]
async fn a_workspace_holding_the_store_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().canonicalize().unwrap();
    let checkpoints = Checkpoints::new(
        root.join("state/checkpoints"),
        CheckpointSettings::default(),
        None,
    );
    let error = checkpoints.snapshot(&root).await.unwrap_err();
    assert!(error.to_string().contains("state dir"), "{error}");
}
