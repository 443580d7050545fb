//! Listings and searches honour Read deny and ask rules and the workspace boundary on every path they
//! return, not only on the path they were called with: `grep`, `glob` and `list_dir` withhold
//! what a deny rule covers (saying how many entries, never which), never walk into a denied
//! directory, and never show a symlink that leads outside the workspace.

use agentd_tests::mock_llm::Format;
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use serde_json::json;

/// Deny rules for a secrets directory (its contents) and for `*.pem` files at any depth; tools
/// run without asking, so only the rules and the hard limits decide.
const DENY_SECRETS: &str = "[permissions]\n\
     default_mode = \"bypass\"\n\
     deny = [\"Read(./secrets/**)\", \"Read(*.pem)\"]\n";

/// A workspace where every file holds `TOKEN=…`: one visible source file, two files under the
/// denied `secrets/`, a denied `id.pem`, a symlink to a denied file and a symlink out of the
/// workspace.
fn secrets_tree(s: &Scenario) {
    let workspace = s.workspace();
    for (path, content) in [
        ("src/app.txt", "TOKEN=visible\n"),
        ("secrets/api.txt", "TOKEN=hidden-api\n"),
        ("secrets/deep/db.txt", "TOKEN=hidden-db\n"),
        ("id.pem", "TOKEN=hidden-pem\n"),
    ] {
        let path = workspace.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    std::os::unix::fs::symlink(
        workspace.join("secrets/api.txt"),
        workspace.join("leak.txt"),
    )
    .unwrap();
    let outside = s.daemon.env.path("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("other.txt"), "TOKEN=outside\n").unwrap();
    std::os::unix::fs::symlink(&outside, workspace.join("elsewhere")).unwrap();
}

both_formats!(grep_withholds_lines_of_denied_files_and_says_how_many);
async fn grep_withholds_lines_of_denied_files_and_says_how_many(format: Format) {
    let s = Scenario::start_with(format, DENY_SECRETS).await;
    secrets_tree(&s);
    let results = s
        .run_batch(vec![
            ("c_all", "grep", json!({"pattern": "TOKEN"})),
            (
                "c_dir",
                "grep",
                json!({"pattern": "TOKEN", "path": "secrets"}),
            ),
            (
                "c_glob",
                "grep",
                json!({"pattern": "TOKEN", "glob": "*.pem"}),
            ),
        ])
        .await;

    // `secrets/` is not entered (one entry), `id.pem` is withheld (one entry); the symlinks are
    // never searched.
    assert_eq!(
        results[0],
        (
            "src/app.txt:1: TOKEN=visible\n[2 entries withheld by permission rules]\n".to_owned(),
            false
        )
    );
    assert_eq!(
        results[1],
        (
            "no matches for `TOKEN` in secrets\n[1 entry withheld by permission rules]\n"
                .to_owned(),
            false
        )
    );
    assert_eq!(
        results[2],
        (
            "no matches for `TOKEN` in .\n[2 entries withheld by permission rules]\n".to_owned(),
            false
        )
    );
}

both_formats!(glob_and_list_dir_withhold_denied_entries_and_links_out_of_the_workspace);
async fn glob_and_list_dir_withhold_denied_entries_and_links_out_of_the_workspace(format: Format) {
    let s = Scenario::start_with(format, DENY_SECRETS).await;
    secrets_tree(&s);
    let results = s
        .run_batch(vec![
            ("c_glob", "glob", json!({"pattern": "**/*"})),
            ("c_list", "list_dir", json!({})),
            ("c_secrets", "list_dir", json!({"path": "secrets"})),
        ])
        .await;

    assert_eq!(
        results[0],
        (
            "src/app.txt\n[2 entries withheld by permission rules]\n".to_owned(),
            false
        )
    );
    // `secrets/` itself is not covered by `secrets/**` (its contents are); `leak.txt` leads to
    // a denied file, `elsewhere` out of the workspace.
    assert_eq!(
        results[1],
        (
            "secrets/\nsrc/\n[2 entries withheld by permission rules]\n\
             [1 entry withheld: symlinks that lead outside the workspace]\n"
                .to_owned(),
            false
        )
    );
    assert_eq!(
        results[2],
        (
            "no entries of secrets can be shown\n[2 entries withheld by permission rules]\n"
                .to_owned(),
            false
        )
    );
}

/// Deny rules of every layer filter, and a rule for one tool filters that tool only: a project
/// `Grep(…)` deny hides lines from grep while glob still lists the file.
#[tokio::test]
async fn project_deny_rules_filter_and_a_grep_rule_leaves_glob_alone() {
    let s = Scenario::start(Format::OpenAi).await;
    let workspace = s.workspace();
    std::fs::create_dir_all(workspace.join(".agents")).unwrap();
    std::fs::write(
        workspace.join(".agents/settings.toml"),
        "[permissions]\ndeny = [\"Grep(notes/**)\"]\n",
    )
    .unwrap();
    std::fs::create_dir_all(workspace.join("notes")).unwrap();
    std::fs::write(workspace.join("notes/todo.txt"), "TOKEN=private\n").unwrap();
    std::fs::write(workspace.join("readme.txt"), "TOKEN=public\n").unwrap();
    let results = s
        .run_batch(vec![
            ("c_grep", "grep", json!({"pattern": "TOKEN"})),
            ("c_glob", "glob", json!({"pattern": "*.txt"})),
        ])
        .await;

    assert_eq!(
        results[0],
        (
            "readme.txt:1: TOKEN=public\n[1 entry withheld by permission rules]\n".to_owned(),
            false
        )
    );
    assert_eq!(
        results[1],
        ("notes/todo.txt\nreadme.txt\n".to_owned(), false)
    );
}

/// An ask rule for reading withholds from searches too: a search cannot stop to ask per file,
/// and showing the lines would read the file without the approval the rule requires.
#[tokio::test]
async fn read_ask_rules_withhold_from_searches_and_listings() {
    let s = Scenario::start_with(
        Format::OpenAi,
        "[permissions]\ndefault_mode = \"bypass\"\nask = [\"Read(./private/**)\"]\n",
    )
    .await;
    let workspace = s.workspace();
    std::fs::create_dir_all(workspace.join("private")).unwrap();
    std::fs::write(workspace.join("private/diary.txt"), "TOKEN=private\n").unwrap();
    std::fs::write(workspace.join("readme.txt"), "TOKEN=public\n").unwrap();
    let results = s
        .run_batch(vec![
            ("c_grep", "grep", json!({"pattern": "TOKEN"})),
            ("c_glob", "glob", json!({"pattern": "**/*.txt"})),
        ])
        .await;
    assert_eq!(
        results[0],
        (
            "readme.txt:1: TOKEN=public\n[1 entry withheld by permission rules]\n".to_owned(),
            false
        )
    );
    assert_eq!(
        results[1],
        (
            "readme.txt\n[1 entry withheld by permission rules]\n".to_owned(),
            false
        )
    );
}
