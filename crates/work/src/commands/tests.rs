//! Tests of command files: templates, frontmatter, namespacing, discovery order, bad files and
//! the limits.

use super::*;
use pretty_assertions::assert_eq;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A repository `repo/` with a workspace `repo/app/` and a user commands dir beside them.
struct Tree {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    workspace: PathBuf,
    user: PathBuf,
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let repo = root.join("repo");
    let workspace = repo.join("app");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    let user = root.join("config/commands");
    std::fs::create_dir_all(&user).unwrap();
    Tree {
        _dir: dir,
        repo,
        workspace,
        user,
    }
}

fn names(found: &CommandFiles) -> Vec<&str> {
    found.commands.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn placeholders_expand_from_the_arguments() {
    let check = |template: &str, args: &str, expected: &str| {
        assert_eq!(expand(template, args), expected, "{template:?} {args:?}");
    };
    check(
        "Fix issue $1 in $2.",
        "42 src/lib.rs",
        "Fix issue 42 in src/lib.rs.",
    );
    check("Do: $ARGUMENTS!", "  a b  ", "Do: a b!");
    check("$1|$2|$3", "\"two words\" 'x y'", "two words|x y|");
    check("cost $5 and $0 and $$", "", "cost  and $0 and $$");
    check(
        "no placeholder\n",
        "extra words",
        "no placeholder\n\nARGUMENTS: extra words",
    );
    check("no placeholder", "", "no placeholder");
    check("$12 $ARGUMENTSX", "a", " aX");
    assert_eq!(
        split_args(r#"a\ b "c \"d\"" 'e\f'"#),
        ["a b", "c \"d\"", "e\\f"]
    );
}

#[test]
fn frontmatter_fields_and_the_description_from_the_body() {
    let tree = tree();
    write(
        &tree.workspace.join(".claude/commands/review.md"),
        "---\ndescription: Review a change\nargument-hint: \"[file]\"\nmodel: mock:other\nallowed-tools: Read, Grep, Bash(git diff:*), mcp__gh__search\n---\nReview $1.\n",
    );
    write(
        &tree.user.join("plain.md"),
        "\n\nSay hello to $ARGUMENTS\nthen stop\n",
    );
    let found = discover(&tree.workspace, Some(&tree.user), &[]);
    assert_eq!(found.problems, []);
    let review = found.get("review").unwrap();
    assert_eq!(review.description, "Review a change");
    assert_eq!(review.argument_hint.as_deref(), Some("[file]"));
    assert_eq!(review.model.as_deref(), Some("mock:other"));
    assert_eq!(
        review.allowed_tools.as_deref().unwrap(),
        ["read_file", "grep", "run_shell", "mcp__gh__search"]
    );
    assert_eq!(review.prompt("a.rs"), "Review a.rs.\n");
    assert!(matches!(review.source, CommandFileSource::Project(_)));
    let plain = found.get("plain").unwrap();
    assert_eq!(plain.description, "Say hello to $ARGUMENTS");
    assert_eq!(plain.allowed_tools, None);
    assert!(matches!(plain.source, CommandFileSource::User(_)));
}

#[test]
fn subdirectories_namespace_and_the_nearer_file_wins() {
    let tree = tree();
    write(
        &tree.workspace.join(".agents/commands/git/commit.md"),
        "near commit",
    );
    write(
        &tree.repo.join(".agents/commands/git/commit.md"),
        "far commit",
    );
    write(&tree.repo.join(".claude/commands/a/b/deep.md"), "deep");
    write(&tree.user.join("git/commit.md"), "user commit");
    write(&tree.user.join("mine.md"), "mine");
    let found = discover(&tree.workspace, Some(&tree.user), &[]);
    assert_eq!(names(&found), ["a:b:deep", "git:commit", "mine"]);
    assert_eq!(found.get("git:commit").unwrap().body, "near commit");
    let reasons: Vec<&str> = found.problems.iter().map(|p| p.reason.as_str()).collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons.iter().all(|r| r.contains("the nearer")),
        "{reasons:?}"
    );
}

#[test]
fn bad_files_are_problems_and_the_rest_is_offered() {
    let tree = tree();
    let dir = tree.workspace.join(".agents/commands");
    write(&dir.join("good.md"), "fine");
    write(&dir.join("broken.md"), "---\ndescription: never closed\n");
    write(&dir.join("empty.md"), "---\ndescription: nothing\n---\n");
    write(&dir.join("listy.md"), "---\ndescription:\n  - a\n---\nx");
    write(&dir.join("bad name!.md"), "x");
    write(&dir.join("help.md"), "mine");
    write(&dir.join("big.md"), &"x".repeat(65 * 1024));
    let found = discover(&tree.workspace, Some(&tree.user), &["help"]);
    assert_eq!(names(&found), ["good"]);
    let reason = |file: &str| {
        found
            .problems
            .iter()
            .find(|p| p.path == dir.join(file))
            .map(|p| p.reason.clone())
            .unwrap_or_else(|| panic!("{file} has no problem: {:?}", found.problems))
    };
    assert!(reason("broken.md").starts_with("bad frontmatter"));
    assert!(reason("empty.md").contains("body is empty"));
    assert!(reason("listy.md").contains("not a list"));
    assert!(reason("bad name!.md").contains("not a usable command name"));
    assert!(reason("help.md").contains("built-in"));
    assert!(reason("big.md").contains("larger than 64 KiB"));
}

#[test]
fn the_count_and_depth_are_capped() {
    let tree = tree();
    let dir = tree.workspace.join(".agents/commands");
    for n in 0..5 {
        write(&dir.join(format!("c{n}.md")), "x");
    }
    write(&dir.join("a/b/c/d/too-deep.md"), "x");
    let limits = CommandLimits {
        max_commands: 3,
        max_depth: 2,
        ..CommandLimits::default()
    };
    let found = discover_with(&tree.workspace, None, &[], &limits);
    assert_eq!(names(&found), ["c0", "c1", "c2"]);
    assert_eq!(
        found
            .problems
            .iter()
            .filter(|p| p.reason.contains("at most 3"))
            .count(),
        2
    );
    assert!(
        found
            .problems
            .iter()
            .any(|p| p.reason.contains("directories deep")),
        "{:?}",
        found.problems
    );
}

#[test]
fn a_link_out_of_the_project_is_not_read() {
    let tree = tree();
    let outside = tree.repo.parent().unwrap().join("secret.md");
    write(&outside, "secret");
    let dir = tree.workspace.join(".agents/commands");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("leak.md")).unwrap();
    let found = discover(&tree.workspace, None, &[]);
    assert_eq!(names(&found), Vec::<&str>::new());
    assert!(
        found.problems[0].reason.starts_with("not used"),
        "{:?}",
        found.problems
    );
}

#[test]
fn the_closest_names_come_first() {
    let names = ["help", "hooks", "git:commit", "compact", "cost", "status"];
    assert_eq!(closest("hepl", names, 3), ["help"]);
    assert_eq!(closest("co", names, 3), ["compact", "cost", "git:commit"]);
    assert_eq!(closest("co", names, 1), ["compact"]);
    assert_eq!(closest("comit", names, 1), ["git:commit"]);
    assert_eq!(closest("zzzzzz", names, 3), Vec::<String>::new());
    assert_eq!(closest(&"x".repeat(10_000), names, 3), Vec::<String>::new());
}
