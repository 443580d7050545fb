//! Tests of glob and grep.

use serde_json::json;

use super::*;
use crate::tools::test_support::{DenyUnder, call, workspace};

/// A small tree: sources, a gitignored build dir, a hidden dir and a binary file.
fn tree(root: &Path) {
    for (path, content) in [
        (".gitignore", "target/\n"),
        ("Cargo.toml", "[package]\nname = \"demo\"\n"),
        ("src/main.rs", "fn main() {\n    // TODO: more\n}\n"),
        ("src/lib/mod.rs", "pub fn todo() {}\n"),
        ("target/out.rs", "fn main() {}\n"),
        (".hidden/x.rs", "fn main() {}\n"),
    ] {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    std::fs::write(root.join("src/blob.rs"), b"fn main\0binary").unwrap();
}

#[tokio::test]
async fn glob_matches_names_at_any_depth_and_skips_ignored() {
    let (_dir, ctx) = workspace();
    tree(&ctx.workspace);
    let output = call(&Glob, json!({"pattern": "*.rs"}), &ctx).await;
    assert_eq!(
        output,
        ToolOutput::ok("src/blob.rs\nsrc/lib/mod.rs\nsrc/main.rs\n")
    );
}

#[tokio::test]
async fn glob_with_slash_matches_relative_paths() {
    let (_dir, ctx) = workspace();
    tree(&ctx.workspace);
    let output = call(&Glob, json!({"pattern": "src/*.rs"}), &ctx).await;
    assert_eq!(output.content, "src/blob.rs\nsrc/main.rs\n");
    let output = call(&Glob, json!({"pattern": "**/mod.rs"}), &ctx).await;
    assert_eq!(output.content, "src/lib/mod.rs\n");
    let output = call(&Glob, json!({"pattern": "*.rs", "path": "src/lib"}), &ctx).await;
    assert_eq!(output.content, "src/lib/mod.rs\n");
}

#[tokio::test]
async fn glob_caps_and_reports_errors() {
    let (_dir, mut ctx) = workspace();
    tree(&ctx.workspace);
    ctx.limits.listing_max_entries = 1;
    let output = call(&Glob, json!({"pattern": "*.rs"}), &ctx).await;
    assert_eq!(
        output.content,
        "src/blob.rs\n[… 2 more files not shown; narrow the pattern or path]\n"
    );
    let output = call(&Glob, json!({"pattern": "*.py"}), &ctx).await;
    assert_eq!(output, ToolOutput::ok("no files match `*.py` in ."));
    let output = call(&Glob, json!({"pattern": "a[", "path": "src"}), &ctx).await;
    assert!(output.is_error && output.content.starts_with("invalid glob"));
    let output = call(&Glob, json!({"pattern": "*", "path": ".."}), &ctx).await;
    assert!(output.content.starts_with("path escapes the workspace"));
    let output = call(&Glob, json!({"pattern": "*", "path": "nope"}), &ctx).await;
    assert_eq!(output, ToolOutput::error("nope does not exist"));
}

#[tokio::test]
async fn grep_finds_lines_in_text_files() {
    let (_dir, ctx) = workspace();
    tree(&ctx.workspace);
    let output = call(&Grep, json!({"pattern": "fn main"}), &ctx).await;
    assert_eq!(output, ToolOutput::ok("src/main.rs:1: fn main() {\n"));
    let output = call(&Grep, json!({"pattern": "(?i)todo"}), &ctx).await;
    assert_eq!(
        output.content,
        "src/lib/mod.rs:1: pub fn todo() {}\nsrc/main.rs:2:     // TODO: more\n"
    );
}

#[tokio::test]
async fn grep_narrows_by_path_and_glob() {
    let (_dir, ctx) = workspace();
    tree(&ctx.workspace);
    let output = call(
        &Grep,
        json!({"pattern": "(?i)todo", "path": "src/main.rs"}),
        &ctx,
    )
    .await;
    assert_eq!(output.content, "src/main.rs:2:     // TODO: more\n");
    let output = call(
        &Grep,
        json!({"pattern": "(?i)todo", "glob": "mod.rs"}),
        &ctx,
    )
    .await;
    assert_eq!(output.content, "src/lib/mod.rs:1: pub fn todo() {}\n");
    let output = call(&Grep, json!({"pattern": "name", "glob": "*.toml"}), &ctx).await;
    assert_eq!(output.content, "Cargo.toml:2: name = \"demo\"\n");
}

#[tokio::test]
async fn grep_caps_and_reports_errors() {
    let (_dir, mut ctx) = workspace();
    tree(&ctx.workspace);
    ctx.limits.grep_max_matches = 1;
    let output = call(&Grep, json!({"pattern": "fn"}), &ctx).await;
    assert_eq!(
        output.content,
        "src/lib/mod.rs:1: pub fn todo() {}\n[… stopped at 1 matches; narrow the pattern, path \
         or glob]\n"
    );
    let output = call(&Grep, json!({"pattern": "nothing here"}), &ctx).await;
    assert_eq!(output, ToolOutput::ok("no matches for `nothing here` in ."));
    let output = call(&Grep, json!({"pattern": "fn("}), &ctx).await;
    assert!(output.is_error);
    assert!(
        output.content.starts_with("invalid regex `fn(`"),
        "{}",
        output.content
    );
    let output = call(&Grep, json!({"pattern": "x", "path": "/"}), &ctx).await;
    assert!(output.content.starts_with("path escapes the workspace"));
    let output = call(&Grep, json!({"path": "src"}), &ctx).await;
    assert_eq!(
        output,
        ToolOutput::error("invalid arguments for grep: missing field `pattern`")
    );
}

#[tokio::test]
async fn grep_skips_a_fifo_without_blocking() {
    let (_dir, ctx) = workspace();
    let fifo = ctx.workspace.join("pipe");
    agentd_core::test_support::mkfifo(&fifo);
    for input in [
        json!({"pattern": "x", "path": "pipe"}),
        json!({"pattern": "x"}),
    ] {
        let output = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            call(&Grep, input.clone(), &ctx),
        )
        .await
        .expect("grep blocked on a FIFO");
        assert!(
            output.content.starts_with("no matches"),
            "{input}: {output:?}"
        );
    }
}

/// `tree` plus `src/secret/` (denied by the rules installed) and a symlink to a file in it.
fn tree_with_secrets(ctx: &mut ToolContext) -> std::sync::Arc<DenyUnder> {
    tree(&ctx.workspace);
    std::fs::create_dir_all(ctx.workspace.join("src/secret/deep")).unwrap();
    std::fs::write(ctx.workspace.join("src/secret/key.rs"), "fn main() {}\n").unwrap();
    std::fs::write(
        ctx.workspace.join("src/secret/deep/db.rs"),
        "fn main() {}\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(
        ctx.workspace.join("src/secret/key.rs"),
        ctx.workspace.join("src/link.rs"),
    )
    .unwrap();
    DenyUnder::install(ctx, "src/secret")
}

#[tokio::test]
async fn grep_and_glob_skip_a_denied_directory_without_entering_it() {
    let (_dir, mut ctx) = workspace();
    let rules = tree_with_secrets(&mut ctx);
    let output = call(&Grep, json!({"pattern": "fn main"}), &ctx).await;
    assert_eq!(
        output,
        ToolOutput::ok("src/main.rs:1: fn main() {\n[1 entry withheld by permission rules]\n")
    );
    let output = call(&Glob, json!({"pattern": "*.rs"}), &ctx).await;
    assert_eq!(
        output,
        ToolOutput::ok(
            "src/blob.rs\nsrc/lib/mod.rs\nsrc/main.rs\n[1 entry withheld by permission rules]\n"
        )
    );
    assert!(!rules.looked_inside(), "{:?}", rules.asked.lock().unwrap());
}

#[tokio::test]
async fn a_denied_search_root_is_not_walked() {
    let (_dir, mut ctx) = workspace();
    let rules = tree_with_secrets(&mut ctx);
    let output = call(
        &Grep,
        json!({"pattern": "fn", "path": "src/secret/deep"}),
        &ctx,
    )
    .await;
    assert_eq!(
        output,
        ToolOutput::ok(
            "no matches for `fn` in src/secret/deep\n[1 entry withheld by permission rules]\n"
        )
    );
    let output = call(
        &Glob,
        json!({"pattern": "*", "path": "src/secret/deep"}),
        &ctx,
    )
    .await;
    assert_eq!(
        output,
        ToolOutput::ok(
            "no files match `*` in src/secret/deep\n[1 entry withheld by permission rules]\n"
        )
    );
    // A denied file named as the root is withheld too (the gate applies only the rules of
    // the tool itself, these rules may come from `read_file`).
    let output = call(
        &Grep,
        json!({"pattern": "fn", "path": "src/secret/key.rs"}),
        &ctx,
    )
    .await;
    assert_eq!(
        output,
        ToolOutput::ok(
            "no matches for `fn` in src/secret/key.rs\n[1 entry withheld by permission rules]\n"
        )
    );
    let asked = rules.asked.lock().unwrap();
    assert!(
        !asked
            .iter()
            .any(|path| path.starts_with(ctx.workspace.join("src/secret/deep/db.rs"))),
        "{asked:?}"
    );
}

#[tokio::test]
async fn withheld_files_are_counted_only_when_the_pattern_would_show_them() {
    let (_dir, mut ctx) = workspace();
    std::fs::create_dir_all(ctx.workspace.join("src")).unwrap();
    std::fs::write(ctx.workspace.join("src/a.rs"), "x\n").unwrap();
    std::fs::write(ctx.workspace.join("src/b.txt"), "x\n").unwrap();
    std::fs::write(ctx.workspace.join("c.rs"), "x\n").unwrap();
    // Everything under `src` is denied, the directory itself is not: the walk is pruned there.
    DenyUnder::install(&mut ctx, "src");
    let output = call(&Glob, json!({"pattern": "*.md"}), &ctx).await;
    assert_eq!(
        output,
        ToolOutput::ok("no files match `*.md` in .\n[1 entry withheld by permission rules]\n")
    );
    // Rules that cover single files only: a file the glob would not show is not counted.
    let (_dir, mut ctx) = workspace();
    std::fs::write(ctx.workspace.join("a.rs"), "x\n").unwrap();
    std::fs::write(ctx.workspace.join("b.txt"), "x\n").unwrap();
    std::fs::write(ctx.workspace.join("c.rs"), "x\n").unwrap();
    ctx.read_filter = ReadFilter::new(std::sync::Arc::new(DenyFiles(vec![
        ctx.workspace.join("a.rs"),
        ctx.workspace.join("b.txt"),
    ])));
    let output = call(&Glob, json!({"pattern": "*.rs"}), &ctx).await;
    assert_eq!(
        output,
        ToolOutput::ok("c.rs\n[1 entry withheld by permission rules]\n")
    );
    let output = call(&Grep, json!({"pattern": "x", "glob": "*.txt"}), &ctx).await;
    assert_eq!(
        output,
        ToolOutput::ok("no matches for `x` in .\n[1 entry withheld by permission rules]\n")
    );
    let output = call(&Grep, json!({"pattern": "x"}), &ctx).await;
    assert_eq!(
        output,
        ToolOutput::ok("c.rs:1: x\n[2 entries withheld by permission rules]\n")
    );
}

/// Read rules that deny exactly these files.
struct DenyFiles(Vec<PathBuf>);

impl agentd_policy::permission::ReadRules for DenyFiles {
    fn denies(&self, _tool: &str, path: &Path) -> bool {
        self.0.iter().any(|denied| denied == path)
    }

    fn denies_everything_under(&self, _tool: &str, _dir: &Path) -> bool {
        false
    }
}
