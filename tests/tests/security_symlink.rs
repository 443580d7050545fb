//! Protected paths and the workspace boundary hold at execution time, on the path a write
//! really reaches: a symlink made earlier in the same batch (after the gate judged the paths)
//! cannot lead `write_file` or `edit_file` into `.git`, `.agents` or out of the workspace.

use agentd_tests::mock_llm::Format;
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use serde_json::json;

/// Tools run without asking, so only the hard limits decide.
const BYPASS: &str = "[permissions]\ndefault_mode = \"bypass\"\n";

/// A workspace with a `.git` (hooks dir, config) and an `.agents` dir.
fn repository(s: &Scenario) {
    let workspace = s.workspace();
    std::fs::create_dir_all(workspace.join(".git/hooks")).unwrap();
    std::fs::write(workspace.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    std::fs::create_dir_all(workspace.join(".agents")).unwrap();
}

#[tokio::test]
async fn a_symlink_made_in_the_batch_does_not_lead_writes_into_protected_paths() {
    let s = Scenario::start_with(Format::OpenAi, BYPASS).await;
    repository(&s);
    let results = s.run_batch(vec![
            (
                "c_links",
                "run_shell",
                json!({"command": "ln -s .git foo && ln -s .git/config cfg && ln -s .agents nested"}),
            ),
            (
                "c_hook",
                "write_file",
                json!({"path": "foo/hooks/post-checkout", "content": "#!/bin/sh\necho owned\n"}),
            ),
            (
                "c_edit",
                "edit_file",
                json!({"path": "foo/config", "oldText": "bare = false", "newText": "bare = true"}),
            ),
            (
                "c_final",
                "write_file",
                json!({"path": "cfg", "content": "[core]\n\thooksPath = /tmp\n"}),
            ),
            (
                "c_nested",
                "write_file",
                json!({"path": "nested/deeper/settings.json", "content": "{}"}),
            ),
        ],
    )
    .await;
    let workspace = s.workspace();
    assert!(!results[0].1, "the links were not made: {:?}", results[0]);
    for (result, protected) in results[1..].iter().zip([".git", ".git", ".git", ".agents"]) {
        assert!(
            result.1,
            "a write through a link was not refused: {result:?}"
        );
        assert!(
            result.0.contains(&format!("`{protected}` is protected")),
            "{result:?}"
        );
    }
    assert!(!workspace.join(".git/hooks/post-checkout").exists());
    assert_eq!(
        std::fs::read_to_string(workspace.join(".git/config")).unwrap(),
        "[core]\n\tbare = false\n"
    );
    assert!(!workspace.join(".agents/deeper").exists());
    let left: Vec<_> = std::fs::read_dir(workspace.join(".git"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "temp files left in .git: {left:?}");
}

#[tokio::test]
async fn a_symlink_made_in_the_batch_does_not_lead_writes_out_of_the_workspace() {
    let s = Scenario::start_with(Format::OpenAi, BYPASS).await;
    let outside = s.daemon.env.path("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("kept.txt"), "kept\n").unwrap();
    let command = format!(
        "ln -s {0} out && ln -s {0}/kept.txt kept",
        outside.display()
    );
    let results = s
        .run_batch(vec![
            ("c_links", "run_shell", json!({ "command": command })),
            (
                "c_into",
                "write_file",
                json!({"path": "out/new.txt", "content": "x"}),
            ),
            (
                "c_over",
                "write_file",
                json!({"path": "kept", "content": "x"}),
            ),
            (
                "c_edit",
                "edit_file",
                json!({"path": "kept", "oldText": "kept", "newText": "gone"}),
            ),
        ])
        .await;
    assert!(!results[0].1, "the links were not made: {:?}", results[0]);
    for result in &results[1..] {
        assert!(
            result.1,
            "a write out of the workspace was not refused: {result:?}"
        );
        assert!(result.0.contains("escapes the workspace"), "{result:?}");
    }
    assert!(!outside.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(outside.join("kept.txt")).unwrap(),
        "kept\n"
    );
}

#[tokio::test]
async fn writes_through_links_inside_the_workspace_still_work() {
    let s = Scenario::start_with(Format::OpenAi, BYPASS).await;
    let workspace = s.workspace();
    std::fs::create_dir_all(workspace.join("real")).unwrap();
    std::fs::write(workspace.join("real/a.txt"), "one\n").unwrap();
    std::fs::set_permissions(
        workspace.join("real/a.txt"),
        std::os::unix::fs::PermissionsExt::from_mode(0o640),
    )
    .unwrap();
    let results = s
        .run_batch(vec![
            (
                "c_links",
                "run_shell",
                json!({"command": "ln -s real alias && ln -s real/a.txt a-link"}),
            ),
            (
                "c_new",
                "write_file",
                json!({"path": "alias/sub/b.txt", "content": "two\n"}),
            ),
            (
                "c_edit",
                "edit_file",
                json!({"path": "a-link", "oldText": "one", "newText": "uno"}),
            ),
        ])
        .await;
    for result in &results {
        assert!(!result.1, "{result:?}");
    }
    assert_eq!(
        std::fs::read_to_string(workspace.join("real/sub/b.txt")).unwrap(),
        "two\n"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("real/a.txt")).unwrap(),
        "uno\n"
    );
    let link = std::fs::symlink_metadata(workspace.join("a-link")).unwrap();
    assert!(link.file_type().is_symlink(), "the link was replaced");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(workspace.join("real/a.txt"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o640);
}
