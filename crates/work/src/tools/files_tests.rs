//! Tests of read_file, write_file, edit_file and list_dir.

use serde_json::json;

use super::*;
use crate::tools::Tool;
use crate::tools::test_support::{DenyUnder, call, workspace};

#[tokio::test]
async fn read_file_numbers_lines() {
    let (_dir, ctx) = workspace();
    std::fs::write(ctx.workspace.join("a.txt"), "one\ntwo\r\nthree").unwrap();
    let output = call(&ReadFile, json!({"path": "a.txt"}), &ctx).await;
    assert_eq!(
        output,
        ToolOutput::ok("     1\tone\n     2\ttwo\n     3\tthree\n")
    );
}

#[tokio::test]
async fn read_file_pages_with_offset_and_limit() {
    let (_dir, ctx) = workspace();
    let text: String = (1..=10).map(|n| format!("line {n}\n")).collect();
    std::fs::write(ctx.workspace.join("a.txt"), text).unwrap();
    let output = call(
        &ReadFile,
        json!({"path": "a.txt", "offset": 3, "limit": 2}),
        &ctx,
    )
    .await;
    assert!(!output.is_error);
    assert_eq!(
        output.content,
        "     3\tline 3\n     4\tline 4\n[showing lines 3-4; the file has more: call read_file \
         with offset=5 to read on]\n"
    );
    let output = call(&ReadFile, json!({"path": "a.txt", "offset": 9}), &ctx).await;
    assert_eq!(output.content, "     9\tline 9\n    10\tline 10\n");
    let output = call(&ReadFile, json!({"path": "a.txt", "offset": 11}), &ctx).await;
    assert!(output.is_error);
    assert!(
        output.content.contains("has 10 lines"),
        "{}",
        output.content
    );
}

#[tokio::test]
async fn read_file_default_limit_truncates() {
    let (_dir, mut ctx) = workspace();
    ctx.limits.read_file_default_lines = 2;
    ctx.limits.read_file_max_line_chars = 5;
    std::fs::write(ctx.workspace.join("a.txt"), "1234567\nb\nc\n").unwrap();
    let output = call(&ReadFile, json!({"path": "a.txt"}), &ctx).await;
    assert!(
        output
            .content
            .starts_with("     1\t12345 [… line cut]\n     2\tb\n")
    );
    assert!(output.content.contains("offset=3"), "{}", output.content);
}

#[tokio::test]
async fn read_file_errors() {
    let (_dir, ctx) = workspace();
    std::fs::write(ctx.workspace.join("bin"), b"\x7fELF\0\0\x01").unwrap();
    std::fs::create_dir(ctx.workspace.join("dir")).unwrap();
    std::fs::write(ctx.workspace.join("empty"), "").unwrap();
    let cases = [
        (json!({"path": "bin"}), "binary"),
        (json!({"path": "dir"}), "is a directory"),
        (json!({"path": "missing"}), "cannot open missing"),
        (json!({"path": "../x"}), "path escapes the workspace"),
        (
            json!({}),
            "invalid arguments for read_file: missing field `path`",
        ),
        (json!({"path": "a", "lines": 3}), "unknown field `lines`"),
    ];
    for (input, expected) in cases {
        let output = call(&ReadFile, input.clone(), &ctx).await;
        assert!(output.is_error, "{input}");
        assert!(
            output.content.contains(expected),
            "{input}: {}",
            output.content
        );
    }
    let output = call(&ReadFile, json!({"path": "empty"}), &ctx).await;
    assert_eq!(output, ToolOutput::ok("(empty is empty)"));
}

#[tokio::test]
async fn write_file_creates_parents_and_overwrites() {
    let (_dir, ctx) = workspace();
    let output = call(
        &WriteFile,
        json!({"path": "a/b/c.txt", "content": "héllo"}),
        &ctx,
    )
    .await;
    assert_eq!(output, ToolOutput::ok("created a/b/c.txt (6 bytes)"));
    assert_eq!(
        std::fs::read_to_string(ctx.workspace.join("a/b/c.txt")).unwrap(),
        "héllo"
    );
    let output = call(
        &WriteFile,
        json!({"path": "a/b/c.txt", "content": "x"}),
        &ctx,
    )
    .await;
    assert_eq!(output, ToolOutput::ok("overwrote a/b/c.txt (1 bytes)"));
    assert_eq!(
        std::fs::read_to_string(ctx.workspace.join("a/b/c.txt")).unwrap(),
        "x"
    );
    // No temp files are left behind.
    let names: Vec<_> = std::fs::read_dir(ctx.workspace.join("a/b"))
        .unwrap()
        .collect();
    assert_eq!(names.len(), 1);
}

#[tokio::test]
async fn write_file_keeps_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, ctx) = workspace();
    let path = ctx.workspace.join("run.sh");
    std::fs::write(&path, "old").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let output = call(
        &WriteFile,
        json!({"path": "run.sh", "content": "new"}),
        &ctx,
    )
    .await;
    assert!(!output.is_error, "{}", output.content);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);
}

#[tokio::test]
async fn write_file_refuses_escapes_and_directories() {
    let (dir, ctx) = workspace();
    let outside = dir
        .path()
        .canonicalize()
        .unwrap()
        .with_file_name("agentd-outside-test");
    let output = call(
        &WriteFile,
        json!({"path": outside.to_str().unwrap(), "content": "x"}),
        &ctx,
    )
    .await;
    assert!(
        output.content.starts_with("path escapes the workspace"),
        "{}",
        output.content
    );
    assert!(!outside.exists());
    std::fs::create_dir(ctx.workspace.join("d")).unwrap();
    let output = call(&WriteFile, json!({"path": "d", "content": "x"}), &ctx).await;
    assert!(output.is_error && output.content.contains("is a directory"));
}

#[tokio::test]
async fn edit_file_replaces_a_unique_match() {
    let (_dir, ctx) = workspace();
    let path = ctx.workspace.join("a.rs");
    std::fs::write(&path, "fn a() {}\nfn b() {}\nfn c() {}\n").unwrap();
    let output = call(
        &EditFile,
        json!({"path": "a.rs", "oldText": "fn b() {}", "newText": "fn b() {\n    1\n}"}),
        &ctx,
    )
    .await;
    assert!(!output.is_error, "{}", output.content);
    assert_eq!(
        output.content,
        "edited a.rs: replaced 1 occurrence\n     1\tfn a() {}\n     2\tfn b() {\n     3\t    \
         1\n     4\t}\n     5\tfn c() {}\n"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "fn a() {}\nfn b() {\n    1\n}\nfn c() {}\n"
    );
}

#[tokio::test]
async fn edit_file_errors_say_what_to_do() {
    let (_dir, ctx) = workspace();
    let path = ctx.workspace.join("a.txt");
    std::fs::write(&path, "x = 1\nx = 1\n  y = 2\n").unwrap();
    let cases = [
        (
            json!({"path": "a.txt", "oldText": "x = 1", "newText": "x = 2"}),
            "matches 2 times",
        ),
        (
            json!({"path": "a.txt", "oldText": "z", "newText": "w"}),
            "was not found",
        ),
        (
            json!({"path": "a.txt", "oldText": "  y = 2  ", "newText": "w"}),
            "different leading or trailing whitespace",
        ),
        (
            json!({"path": "a.txt", "oldText": "", "newText": "w"}),
            "oldText is empty",
        ),
        (
            json!({"path": "a.txt", "oldText": "x", "newText": "x"}),
            "the same",
        ),
        (
            json!({"path": "nope", "oldText": "x", "newText": "y"}),
            "cannot read nope",
        ),
        (
            json!({"path": "a.txt", "old_text": "x", "newText": "y"}),
            "unknown field `old_text`",
        ),
    ];
    for (input, expected) in cases {
        let output = call(&EditFile, input.clone(), &ctx).await;
        assert!(output.is_error, "{input}");
        assert!(
            output.content.contains(expected),
            "{input}: {}",
            output.content
        );
    }
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "x = 1\nx = 1\n  y = 2\n"
    );
}

#[tokio::test]
async fn edit_file_replace_all() {
    let (_dir, ctx) = workspace();
    let path = ctx.workspace.join("a.txt");
    std::fs::write(&path, "x = 1\nx = 1\n").unwrap();
    let output = call(
        &EditFile,
        json!({"path": "a.txt", "oldText": "x", "newText": "y", "replaceAll": true}),
        &ctx,
    )
    .await;
    assert!(
        output
            .content
            .starts_with("edited a.txt: replaced 2 occurrences\n")
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "y = 1\ny = 1\n");
}

#[tokio::test]
async fn list_dir_sorts_and_marks_directories() {
    let (_dir, mut ctx) = workspace();
    std::fs::create_dir(ctx.workspace.join("src")).unwrap();
    std::fs::write(ctx.workspace.join("b.txt"), "").unwrap();
    std::fs::write(ctx.workspace.join(".hidden"), "").unwrap();
    std::os::unix::fs::symlink(ctx.workspace.join("src"), ctx.workspace.join("link")).unwrap();
    let output = call(&ListDir, json!({}), &ctx).await;
    assert_eq!(output, ToolOutput::ok(".hidden\nb.txt\nlink/\nsrc/\n"));
    ctx.limits.listing_max_entries = 2;
    let output = call(&ListDir, json!({"path": "."}), &ctx).await;
    assert_eq!(
        output.content,
        ".hidden\nb.txt\n[… 2 more entries not shown]\n"
    );
    let output = call(&ListDir, json!({"path": "src"}), &ctx).await;
    assert_eq!(output, ToolOutput::ok("src is empty"));
    let output = call(&ListDir, json!({"path": "b.txt"}), &ctx).await;
    assert!(output.is_error);
    let output = call(&ListDir, json!({"path": ".."}), &ctx).await;
    assert!(output.content.starts_with("path escapes the workspace"));
}

#[test]
fn schemas_use_camel_case_and_required_fields() {
    let schema = EditFile.input_schema();
    let properties = schema["properties"].as_object().unwrap();
    let mut names: Vec<_> = properties.keys().cloned().collect();
    names.sort();
    assert_eq!(names, ["newText", "oldText", "path", "replaceAll"]);
    assert_eq!(schema["required"], json!(["path", "oldText", "newText"]));
    assert_eq!(schema["type"], "object");
    assert!(schema.get("$schema").is_none());
}

#[tokio::test]
async fn edit_file_keeps_crlf_line_ends() {
    let (_dir, ctx) = workspace();
    let path = ctx.workspace.join("a.txt");
    std::fs::write(&path, "one\r\ntwo\r\nthree\r\n").unwrap();
    let output = call(
        &EditFile,
        json!({"path": "a.txt", "oldText": "one\ntwo", "newText": "1\n2"}),
        &ctx,
    )
    .await;
    assert!(!output.is_error, "{}", output.content);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "1\r\n2\r\nthree\r\n"
    );
}

#[tokio::test]
async fn file_tools_refuse_a_fifo_without_blocking() {
    let (_dir, ctx) = workspace();
    let fifo = ctx.workspace.join("pipe");
    agentd_core::test_support::mkfifo(&fifo);
    let inputs = [
        (&ReadFile as &dyn Tool, json!({"path": "pipe"})),
        (
            &EditFile as &dyn Tool,
            json!({"path": "pipe", "oldText": "a", "newText": "b"}),
        ),
    ];
    for (tool, input) in inputs {
        let output = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            call(tool, input.clone(), &ctx),
        )
        .await
        .unwrap_or_else(|_| panic!("{} blocked on a FIFO", tool.name()));
        assert!(output.is_error, "{input}");
        assert_eq!(
            output.content,
            "pipe is a named pipe (FIFO), not a regular file; only regular files are read (it \
             could block forever)"
        );
    }
}

#[tokio::test]
async fn list_dir_withholds_denied_entries_and_links_out_of_the_workspace() {
    let (dir, mut ctx) = workspace();
    let root = ctx.workspace.clone();
    std::fs::create_dir_all(root.join("secret/inner")).unwrap();
    std::fs::write(root.join("secret/key.txt"), "").unwrap();
    std::fs::write(root.join("a.txt"), "").unwrap();
    let outside = dir.path().join("../").canonicalize().unwrap();
    std::os::unix::fs::symlink(&outside, root.join("up")).unwrap();
    std::os::unix::fs::symlink(root.join("secret/key.txt"), root.join("key-link")).unwrap();
    std::os::unix::fs::symlink(root.join("secret"), root.join("secret-link")).unwrap();
    std::os::unix::fs::symlink(root.join("missing"), root.join("dangling")).unwrap();
    DenyUnder::install(&mut ctx, "secret");

    // `secret/` itself is not denied (its contents are), nor is a link to it; a dangling link
    // leads nowhere and shows as a name.
    let output = call(&ListDir, json!({}), &ctx).await;
    assert_eq!(
        output,
        ToolOutput::ok(
            "a.txt\ndangling\nsecret-link/\nsecret/\n[1 entry withheld by permission rules]\n\
             [1 entry withheld: symlinks that lead outside the workspace]\n"
        )
    );
    let output = call(&ListDir, json!({"path": "secret"}), &ctx).await;
    assert_eq!(
        output,
        ToolOutput::ok(
            "no entries of secret can be shown\n[2 entries withheld by permission rules]\n"
        )
    );
    ctx.limits.listing_max_entries = 1;
    let output = call(&ListDir, json!({}), &ctx).await;
    assert_eq!(
        output.content,
        "a.txt\n[… 3 more entries not shown]\n[1 entry withheld by permission rules]\n\
         [1 entry withheld: symlinks that lead outside the workspace]\n"
    );
}
