//! Tests of the trust store: pins per file, re-trust, the format from before pinning, and the
//! directories that can never be trusted.

use super::*;

fn repo() -> (tempfile::TempDir, PathBuf) {
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    let root = std::fs::canonicalize(repo.path()).unwrap();
    (repo, root)
}

#[test]
fn trust_persists_and_untrust_removes() {
    let state = tempfile::tempdir().unwrap();
    let (repo, root) = repo();
    std::fs::create_dir(repo.path().join("sub")).unwrap();

    let store = TrustStore::load(state.path()).unwrap();
    assert_eq!(
        store.trust(&repo.path().join("sub"), None).unwrap().root,
        root
    );
    assert!(store.project(&root).trusted());

    let reloaded = TrustStore::load(state.path()).unwrap();
    assert_eq!(reloaded.list(), vec![root.clone()]);
    assert_eq!(reloaded.untrust(repo.path()).unwrap(), (root.clone(), true));
    assert!(!reloaded.project(&root).trusted());
    assert!(TrustStore::load(state.path()).unwrap().list().is_empty());
}

#[test]
fn a_file_applies_only_with_the_content_trusted() {
    let state = tempfile::tempdir().unwrap();
    let (repo, root) = repo();
    let mcp = root.join(".mcp.json");
    std::fs::write(&mcp, "{}").unwrap();
    let store = TrustStore::load(state.path()).unwrap();
    assert_eq!(
        store.project(&root).verdict(&mcp, "{}"),
        FileTrust::Untrusted
    );

    let found = store.trust(repo.path(), None).unwrap();
    assert_eq!(found.files.len(), 1);
    assert_eq!(found.files[0].status, FileTrust::Untrusted);
    let project = TrustStore::load(state.path()).unwrap().project(&root);
    assert_eq!(project.verdict(&mcp, "{}"), FileTrust::Pinned);
    assert_eq!(project.verdict(&mcp, "{ }"), FileTrust::Changed);
    let settings = root.join(".claude/settings.json");
    assert_eq!(project.verdict(&settings, "{}"), FileTrust::New);
    let why = project.why_withheld(&settings, FileTrust::New);
    assert!(why.contains("is new since you trusted"), "{why}");
    assert!(project.how_to_trust().contains("agentctl trust --show"));
}

#[test]
fn a_review_says_what_changed_and_trusting_again_pins_it() {
    let state = tempfile::tempdir().unwrap();
    let (repo, root) = repo();
    std::fs::create_dir(root.join(".claude")).unwrap();
    std::fs::write(root.join(".mcp.json"), "{}").unwrap();
    let store = TrustStore::load(state.path()).unwrap();
    store.trust(repo.path(), None).unwrap();

    std::fs::write(root.join(".mcp.json"), r#"{"mcpServers":{}}"#).unwrap();
    std::fs::write(root.join(".claude/settings.local.json"), "{}").unwrap();
    let review = store.review(repo.path()).unwrap();
    let status: Vec<(String, FileTrust)> = review
        .files
        .iter()
        .map(|file| {
            (
                file.path.strip_prefix(&root).unwrap().display().to_string(),
                file.status,
            )
        })
        .collect();
    assert_eq!(
        status,
        vec![
            (".claude/settings.local.json".to_owned(), FileTrust::New),
            (".mcp.json".to_owned(), FileTrust::Changed),
        ]
    );

    // Trusting what the review showed pins it; a change after the review refuses the trust.
    let shown: Vec<(PathBuf, String)> = review
        .files
        .iter()
        .map(|file| (file.path.clone(), file.digest.clone()))
        .collect();
    std::fs::write(root.join(".mcp.json"), r#"{"mcpServers":{"x":{}}}"#).unwrap();
    let error = store.trust(repo.path(), Some(&shown)).unwrap_err();
    assert!(
        matches!(error, TrustError::ChangedSinceReview { .. }),
        "{error}"
    );
    assert_eq!(
        store
            .project(&root)
            .verdict(&root.join(".mcp.json"), r#"{"mcpServers":{"x":{}}}"#),
        FileTrust::Changed
    );
    let review = store.review(repo.path()).unwrap();
    let shown: Vec<(PathBuf, String)> = review
        .files
        .iter()
        .map(|file| (file.path.clone(), file.digest.clone()))
        .collect();
    store.trust(repo.path(), Some(&shown)).unwrap();
    let review = store.review(repo.path()).unwrap();
    assert!(
        review
            .files
            .iter()
            .all(|file| file.status == FileTrust::Pinned)
    );

    std::fs::remove_file(root.join(".mcp.json")).unwrap();
    assert_eq!(
        store.review(repo.path()).unwrap().removed,
        vec![root.join(".mcp.json")]
    );
}

#[test]
fn a_store_from_before_pinning_trusts_the_root_and_pins_nothing() {
    let state = tempfile::tempdir().unwrap();
    let (_repo, root) = repo();
    std::fs::write(
        state.path().join(TRUST_FILE),
        serde_json::json!({ "projects": [root] }).to_string(),
    )
    .unwrap();
    let store = TrustStore::load(state.path()).unwrap();
    let project = store.project(&root);
    assert!(project.trusted());
    let mcp = root.join(".mcp.json");
    assert_eq!(project.verdict(&mcp, "{}"), FileTrust::New);
    assert!(
        project
            .why_withheld(&mcp, FileTrust::New)
            .contains("before trust was pinned"),
    );
}

#[test]
fn a_missing_directory_cannot_be_trusted() {
    let state = tempfile::tempdir().unwrap();
    let store = TrustStore::empty(state.path());
    let error = store
        .trust(&state.path().join("nowhere"), None)
        .unwrap_err();
    assert!(error.to_string().contains("not a directory"), "{error}");
}

#[test]
fn kernel_directories_cannot_be_trusted() {
    let state = tempfile::tempdir().unwrap();
    let store = TrustStore::empty(state.path());
    let own_proc = PathBuf::from(format!("/proc/{}", std::process::id()));
    for path in [
        own_proc.as_path(),
        Path::new("/proc/self/fd"),
        Path::new("/sys"),
    ] {
        let error = store.trust(path, None).unwrap_err();
        assert!(
            matches!(
                error,
                TrustError::PseudoFilesystem { .. } | TrustError::NotYours { .. }
            ),
            "{}: {error}",
            path.display()
        );
    }
    assert!(store.list().is_empty());
}

#[test]
fn another_users_directory_cannot_be_trusted() {
    // As root, a directory given to another uid; otherwise `/`, which belongs to root.
    let other = tempfile::tempdir().unwrap();
    let path = if agentd_core::regular_file::current_uid() == 0 {
        std::os::unix::fs::chown(other.path(), Some(4242), Some(4242)).unwrap();
        other.path().to_path_buf()
    } else {
        PathBuf::from("/")
    };
    let state = tempfile::tempdir().unwrap();
    let store = TrustStore::empty(state.path());
    let error = store.trust(&path, None).unwrap_err();
    assert!(matches!(error, TrustError::NotYours { .. }), "{error}");
}

#[test]
fn a_file_too_big_to_read_is_never_pinned_and_said_unreadable() {
    let state = tempfile::tempdir().unwrap();
    let (repo, root) = repo();
    std::fs::write(
        root.join(".mcp.json"),
        " ".repeat(MAX_PINNED_FILE_BYTES + 1),
    )
    .unwrap();
    let store = TrustStore::load(state.path()).unwrap();
    let found = store.trust(repo.path(), None).unwrap();
    assert!(found.files.is_empty(), "{:?}", found.files);
    assert!(
        found.unreadable.len() == 1 && found.unreadable[0].contains("larger than"),
        "{:?}",
        found.unreadable
    );
    assert!(store.project(&root).pins.unwrap().files.is_empty());
}

#[test]
fn agent_definitions_are_pinned_and_a_removed_one_is_reported() {
    let state = tempfile::tempdir().unwrap();
    let (repo, root) = repo();
    let agents = root.join(".claude/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::create_dir_all(root.join(".agents/agents")).unwrap();
    let writer = agents.join("writer.md");
    let reader = root.join(".agents/agents/reader.md");
    std::fs::write(&writer, "---\ndescription: w\n---\nwrite").unwrap();
    std::fs::write(&reader, "---\ndescription: r\n---\nread").unwrap();
    // Not a definition: not pinned.
    std::fs::write(agents.join("notes.txt"), "x").unwrap();
    let store = TrustStore::load(state.path()).unwrap();
    let found = store.trust(repo.path(), None).unwrap();
    let mut pinned: Vec<&Path> = found.files.iter().map(|file| file.path.as_path()).collect();
    pinned.sort();
    assert_eq!(pinned, [reader.as_path(), writer.as_path()]);

    let project = store.project(&root);
    let text = "---\ndescription: w\n---\nwrite";
    assert_eq!(project.verdict(&writer, text), FileTrust::Pinned);
    assert_eq!(
        project.verdict_of_digest(&writer, &digest(text)),
        FileTrust::Pinned
    );
    assert_eq!(
        project.verdict_of_digest(&writer, &digest("changed")),
        FileTrust::Changed
    );

    std::fs::remove_file(&reader).unwrap();
    std::fs::write(agents.join("new.md"), "---\ndescription: n\n---\nnew").unwrap();
    let review = store.review(repo.path()).unwrap();
    assert_eq!(review.removed, std::slice::from_ref(&reader));
    let new = review
        .files
        .iter()
        .find(|file| file.path == agents.join("new.md"))
        .expect("a new definition is listed");
    assert_eq!(new.status, FileTrust::New);

    // Trusting again forgets the removed one's pin.
    store.trust(repo.path(), None).unwrap();
    let project = store.project(&root);
    assert_eq!(
        project.verdict(&reader, "---\ndescription: r\n---\nread"),
        FileTrust::New
    );
}
