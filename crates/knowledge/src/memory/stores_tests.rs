//! Tests of `MemoryStores`: where the stores are (per project by default, per user with
//! `scope = "user"`, a repository's own `.agents/memory/`), snapshots, memory off, and writers
//! that run at once.

use super::*;
use std::os::unix::fs::PermissionsExt;

/// Stores with `scope = "user"`: `MEMORY.md` beside `USER.md` in `data/memory/`.
fn stores(data: &Path) -> Arc<MemoryStores> {
    let settings = MemorySettings {
        scope: Scope::User,
        ..MemorySettings::default()
    };
    Arc::new(MemoryStores::new(data, data, settings))
}

#[tokio::test]
async fn the_users_stores_are_private_files_in_the_data_dir() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let stores = stores(data.path());
    let location = stores.locate(work.path(), MemoryTarget::Memory);
    assert_eq!(location.scope, Scope::User);
    assert_eq!(location.dir, data.path().join("memory"));
    let said = stores
        .edit(
            work.path().to_path_buf(),
            MemoryTarget::User,
            Edit::Add {
                content: "prefers short answers".to_owned(),
            },
        )
        .await
        .unwrap();
    assert!(said.contains("saved to USER.md (21/1,375 chars)"), "{said}");
    let dir_mode = std::fs::metadata(&location.dir)
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir_mode, 0o700);
    let file = location.dir.join("USER.md");
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let snapshot = stores.snapshot(work.path());
    assert_eq!(snapshot.user.entries.as_slice(), ["prefers short answers"]);
    assert!(snapshot.memory.entries.is_empty());
    assert_eq!(snapshot.memory.limit, DEFAULT_MEMORY_CHARS);
}

#[tokio::test]
async fn a_project_with_agents_memory_keeps_its_own_stores() {
    let data = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join(".git")).unwrap();
    std::fs::create_dir_all(root.path().join(".agents/memory")).unwrap();
    let sub = root.path().join("crates/a");
    std::fs::create_dir_all(&sub).unwrap();
    let stores = stores(data.path());
    let location = stores.locate(&sub, MemoryTarget::Memory);
    assert_eq!(location.scope, Scope::Project);
    assert!(location.in_repository);
    assert_eq!(location.dir, root.path().join(".agents/memory"));
    // USER.md stays the user's.
    assert_eq!(
        stores.locate(&sub, MemoryTarget::User).dir,
        data.path().join("memory")
    );
    stores
        .edit(
            sub.clone(),
            MemoryTarget::Memory,
            Edit::Add {
                content: "tests run with cargo nextest".to_owned(),
            },
        )
        .await
        .unwrap();
    let text = std::fs::read_to_string(root.path().join(".agents/memory/MEMORY.md")).unwrap();
    assert_eq!(text, "tests run with cargo nextest\n");
    assert!(!data.path().join("memory").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_at_once_lose_no_update() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let stores = stores(data.path());
    let mut writers = tokio::task::JoinSet::new();
    for n in 0..24 {
        let stores = stores.clone();
        let cwd = work.path().to_path_buf();
        writers.spawn(async move {
            stores
                .edit(
                    cwd,
                    MemoryTarget::Memory,
                    Edit::Add {
                        content: format!("fact {n}"),
                    },
                )
                .await
        });
    }
    while let Some(done) = writers.join_next().await {
        done.unwrap().unwrap();
    }
    let snapshot = stores.snapshot(work.path());
    let mut got: Vec<String> = snapshot.memory.entries.as_slice().to_vec();
    got.sort();
    let mut want: Vec<String> = (0..24).map(|n| format!("fact {n}")).collect();
    want.sort();
    assert_eq!(got, want);
}

#[tokio::test]
async fn refusals_change_nothing_and_are_errors() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let stores = Arc::new(MemoryStores::new(
        data.path(),
        data.path(),
        MemorySettings {
            limits: MemoryLimits {
                memory_chars: 10,
                user_chars: 10,
            },
            scope: Scope::User,
            disabled: false,
        },
    ));
    let cwd = work.path().to_path_buf();
    let add = |content: &str| Edit::Add {
        content: content.to_owned(),
    };
    stores
        .edit(cwd.clone(), MemoryTarget::Memory, add("abcdef"))
        .await
        .unwrap();
    let refused = stores
        .edit(cwd.clone(), MemoryTarget::Memory, add("ghijkl"))
        .await
        .unwrap_err();
    assert!(refused.contains("15/10 chars"), "{refused}");
    let again = stores
        .edit(cwd.clone(), MemoryTarget::Memory, add("abcdef"))
        .await
        .unwrap();
    assert!(again.starts_with("already saved"), "{again}");
    let text = std::fs::read_to_string(data.path().join("memory/MEMORY.md")).unwrap();
    assert_eq!(text, "abcdef\n");
}

#[tokio::test]
async fn a_file_too_big_to_read_whole_is_not_rewritten() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let dir = data.path().join("memory");
    std::fs::create_dir(&dir).unwrap();
    let big = "x".repeat(file::MAX_FILE_BYTES + 10);
    std::fs::write(dir.join("MEMORY.md"), &big).unwrap();
    let stores = stores(data.path());
    let refused = stores
        .edit(
            work.path().to_path_buf(),
            MemoryTarget::Memory,
            Edit::Remove {
                old_text: "x".to_owned(),
            },
        )
        .await
        .unwrap_err();
    assert!(refused.contains("shorten it by hand"), "{refused}");
    assert_eq!(std::fs::read_to_string(dir.join("MEMORY.md")).unwrap(), big);
    assert!(stores.snapshot(work.path()).memory.warning.is_some());
}

#[tokio::test]
async fn a_project_memory_dir_linked_out_of_the_project_is_not_used() {
    let data = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("MEMORY.md"), "SECRET elsewhere").unwrap();
    std::fs::create_dir(root.path().join(".git")).unwrap();
    std::fs::create_dir(root.path().join(".agents")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), root.path().join(".agents/memory")).unwrap();
    let stores = stores(data.path());
    let location = stores.locate(root.path(), MemoryTarget::Memory);
    assert_eq!(location.scope, Scope::User, "the linked dir was used");
    let snapshot = stores.snapshot(root.path());
    assert!(snapshot.memory.entries.is_empty());
    stores
        .edit(
            root.path().to_path_buf(),
            MemoryTarget::Memory,
            add_entry("note"),
        )
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(elsewhere.path().join("MEMORY.md")).unwrap(),
        "SECRET elsewhere"
    );
}

#[tokio::test]
async fn a_store_file_or_a_user_memory_dir_that_is_a_link_is_neither_read_nor_written() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let secret = elsewhere.path().join("id_ed25519");
    std::fs::write(&secret, "SECRET key").unwrap();
    let dir = data.path().join("memory");
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::symlink(&secret, dir.join("MEMORY.md")).unwrap();
    let stores = stores(data.path());
    let snapshot = stores.snapshot(work.path());
    assert!(snapshot.memory.entries.is_empty());
    let warning = snapshot.memory.warning.unwrap();
    assert!(warning.contains("through a symbolic link"), "{warning}");
    let refused = stores
        .edit(
            work.path().to_path_buf(),
            MemoryTarget::Memory,
            add_entry("x"),
        )
        .await
        .unwrap_err();
    assert!(refused.contains("through a symbolic link"), "{refused}");
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "SECRET key");

    // The whole store dir a link elsewhere: nothing read there, nothing written there.
    std::fs::remove_file(dir.join("MEMORY.md")).unwrap();
    std::fs::remove_dir(&dir).unwrap();
    std::fs::write(elsewhere.path().join("USER.md"), "SECRET profile").unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), &dir).unwrap();
    let snapshot = stores.snapshot(work.path());
    assert!(snapshot.user.entries.is_empty());
    let warning = snapshot.user.warning.unwrap();
    assert!(warning.contains("is a symbolic link"), "{warning}");
    let refused = stores
        .edit(
            work.path().to_path_buf(),
            MemoryTarget::User,
            add_entry("x"),
        )
        .await
        .unwrap_err();
    assert!(refused.contains("is a symbolic link"), "{refused}");
    assert_eq!(
        std::fs::read_to_string(elsewhere.path().join("USER.md")).unwrap(),
        "SECRET profile"
    );
}

#[test]
fn a_user_memory_dir_of_another_user_is_not_read() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let dir = data.path().join("memory");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("USER.md"), "planted").unwrap();
    let test = "a_user_memory_dir_of_another_user_is_not_read";
    if !agentd_core::test_support::give_to_other_user(test, &dir) {
        return;
    }
    let snapshot = stores(data.path()).snapshot(work.path());
    assert!(snapshot.user.entries.is_empty());
    let warning = snapshot.user.warning.unwrap();
    assert!(warning.contains("uid 65534"), "{warning}");
}

fn add_entry(content: &str) -> Edit {
    Edit::Add {
        content: content.to_owned(),
    }
}

#[tokio::test]
async fn by_default_each_project_root_keeps_its_own_memory_in_the_state_dir() {
    let data = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let projects = tempfile::tempdir().unwrap();
    let (one, two) = (projects.path().join("one"), projects.path().join("two"));
    for root in [&one, &two] {
        std::fs::create_dir_all(root.join(".git")).unwrap();
    }
    std::fs::create_dir_all(one.join("crates/a")).unwrap();
    let stores = MemoryStores::new(data.path(), state.path(), MemorySettings::default());
    stores
        .edit(
            one.join("crates/a"),
            MemoryTarget::Memory,
            add_entry("one uses make"),
        )
        .await
        .unwrap();
    stores
        .edit(two.clone(), MemoryTarget::User, add_entry("likes tea"))
        .await
        .unwrap();
    // Kept for the root, whichever directory of it the session is in.
    let snapshot = stores.snapshot(&one);
    assert_eq!(snapshot.memory.entries.as_slice(), ["one uses make"]);
    assert_eq!(snapshot.memory.location.scope, Scope::Project);
    assert_eq!(
        snapshot.memory.location.project_root.as_deref(),
        Some(one.as_path())
    );
    assert!(!snapshot.memory.location.in_repository);
    let dir = &snapshot.memory.location.dir;
    assert!(
        dir.starts_with(state.path().join("memory/projects")),
        "{dir:?}"
    );
    assert!(
        dir.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("one-"),
        "{dir:?}"
    );
    assert_eq!(
        std::fs::metadata(dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    // The other project sees none of it; USER.md is the same for both.
    let other = stores.snapshot(&two);
    assert!(other.memory.entries.is_empty());
    assert_ne!(other.memory.location.dir, *dir);
    assert_eq!(other.user.entries.as_slice(), ["likes tea"]);
    assert_eq!(snapshot.user.entries.as_slice(), ["likes tea"]);
    assert_eq!(snapshot.user.location.scope, Scope::User);
    // Nothing was written into either repository.
    assert!(!one.join(".agents").exists() && !two.join(".agents").exists());
    assert!(!data.path().join("memory/MEMORY.md").exists());
}

#[tokio::test]
async fn memory_off_saves_nothing_and_says_so() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let settings = MemorySettings {
        disabled: true,
        ..MemorySettings::default()
    };
    let stores = MemoryStores::new(data.path(), data.path(), settings);
    assert!(!stores.enabled());
    let refused = stores
        .edit(
            work.path().to_path_buf(),
            MemoryTarget::Memory,
            add_entry("x"),
        )
        .await
        .unwrap_err();
    assert!(refused.contains("enabled = false"), "{refused}");
    assert!(!stores.snapshot(work.path()).enabled);
    assert!(!data.path().join("memory").exists());
}

#[test]
fn a_project_key_is_its_name_and_a_hash_of_the_whole_root() {
    let key = location::key(Path::new("/src/my app"));
    assert!(key.starts_with("my_app-"), "{key}");
    assert_eq!(key.len(), "my_app-".len() + 16, "{key}");
    assert_ne!(key, location::key(Path::new("/other/my app")));
    assert_eq!(key, location::key(Path::new("/src/my app")));
}
