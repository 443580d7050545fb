//! Project configuration out of the file tools' reach: `.mcp.json`, `.git/hooks`, `.git/config`
//! and the settings directories are refused in every mode, whether or not they exist and
//! however the path reaches them; notes files (`AGENTS.md`, `CLAUDE.md`) ask every time, only a
//! deny rule or plan mode deciding otherwise.

use std::path::Path;

use serde_json::json;

use super::policy_tests::{check, layer, workspace};
use super::{
    Decision, PermissionMode, Policy, RuleLayer, ToolRequest, asks_every_time, session_key,
};

fn write(path: &str) -> (&'static str, serde_json::Value, bool) {
    ("write_file", json!({"path": path, "content": "x"}), false)
}

fn edit(path: &str) -> (&'static str, serde_json::Value, bool) {
    (
        "edit_file",
        json!({"path": path, "oldText": "a", "newText": "b"}),
        false,
    )
}

fn shell(command: &str) -> (&'static str, serde_json::Value, bool) {
    ("run_shell", json!({ "command": command }), false)
}

/// Every allow a user could give: broad rules for both file tools and the shell.
fn allow_everything(mode: PermissionMode) -> Policy {
    Policy::new(
        mode,
        layer(
            RuleLayer::Session,
            &[
                "Bash",
                "Edit",
                "Write",
                "Write(*)",
                "write_file",
                "edit_file",
            ],
            &[],
            &[],
        ),
    )
}

#[test]
fn project_configuration_is_refused_in_every_mode_existing_or_not() {
    let (_dir, root) = workspace();
    std::fs::create_dir_all(root.join("src/a")).unwrap();
    std::fs::write(root.join("mcp-real.json"), "{}").unwrap();
    std::fs::write(root.join(".mcp.json"), "{}").unwrap();
    std::os::unix::fs::symlink(root.join(".mcp.json"), root.join("servers.json")).unwrap();
    std::fs::create_dir_all(root.join(".claude")).unwrap();
    std::os::unix::fs::symlink(root.join(".claude"), root.join("settings-dir")).unwrap();
    for mode in [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Bypass,
    ] {
        let policy = allow_everything(mode);
        check(
            &policy,
            &root,
            &[
                (
                    write(".mcp.json"),
                    "deny write_file .mcp.json: `.mcp.json` is protected",
                ),
                (edit(".mcp.json"), "deny edit_file .mcp.json: `.mcp.json`"),
                (write("sub/dir/.mcp.json"), "deny"),
                (write(".MCP.JSON"), "deny"),
                (
                    write("servers.json"),
                    "deny write_file servers.json: `.mcp.json`",
                ),
                (
                    write(".git/hooks/pre-commit"),
                    "deny write_file .git/hooks/pre-commit: `.git` is protected",
                ),
                (write(".git/config"), "deny"),
                (write(".git/HOOKS/post-checkout"), "deny"),
                (write("src/a/../../.claude/settings.json"), "deny"),
                (write("src/a/../../.agents/new/settings.toml"), "deny"),
                (write("settings-dir/settings.local.json"), "deny"),
                (write("missing/../.claude/x"), "deny"),
                (write(".claude/skills/x/SKILL.md"), "deny"),
                (write("skills/new/SKILL.md"), "deny"),
                (write("mcp-real.json"), "allow"),
                (write("docs/mcp.json"), "allow"),
            ],
        );
    }
}

#[test]
fn shell_writes_of_project_configuration_are_protected_targets() {
    let (_dir, root) = workspace();
    let policy = Policy::new(
        PermissionMode::AcceptEdits,
        layer(
            RuleLayer::Session,
            &["Bash(echo:*)", "Bash(cp:*)"],
            &[],
            &[],
        ),
    );
    check(
        &policy,
        &root,
        &[
            (
                shell("echo '{}' > .mcp.json"),
                "ask approval needed to run `echo '{}' > .mcp.json`: it writes `.mcp.json` \
                 (a protected path), and an allow rule",
            ),
            (shell("cp evil.json sub/.mcp.json"), "ask"),
            (
                shell("echo x >> AGENTS.md"),
                "ask approval needed to run `echo x >> AGENTS.md`: it writes `AGENTS.md` \
                 (a protected path)",
            ),
            (
                shell("echo x > .git/hooks/pre-commit"),
                "ask approval needed to run `echo x > .git/hooks/pre-commit`: it writes \
                 `.git/hooks/pre-commit` inside the protected `.git`",
            ),
            (shell("echo x > notes.md"), "allow"),
        ],
    );
}

#[test]
fn notes_files_ask_whatever_the_mode_or_allow_rules() {
    let (_dir, root) = workspace();
    std::fs::write(root.join("AGENTS.md"), "notes").unwrap();
    std::os::unix::fs::symlink(root.join("AGENTS.md"), root.join("CLAUDE.md")).unwrap();
    std::fs::write(root.join("README.md"), "readme").unwrap();
    std::fs::create_dir_all(root.join("web")).unwrap();
    std::os::unix::fs::symlink(root.join("README.md"), root.join("web/AGENTS.md")).unwrap();
    std::os::unix::fs::symlink(root.join("AGENTS.md"), root.join("notes-link")).unwrap();
    let reason = "ask approval needed to write_file AGENTS.md: `AGENTS.md` is read into every \
                  session's prompt";
    for mode in [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Bypass,
    ] {
        let mut policy = allow_everything(mode);
        // Even an "allow for session" naming the file exactly does not skip the question.
        let input = json!({"path": "AGENTS.md", "content": "x"});
        policy.allow_for_session(session_key(&ToolRequest {
            tool: "write_file",
            input: &input,
            read_only: false,
            workspace: &root,
        }));
        check(
            &policy,
            &root,
            &[
                (write("AGENTS.md"), reason),
                (edit("AGENTS.md"), "ask"),
                (write("./AGENTS.md"), "ask"),
                (write("agents.md"), "ask"),
                (
                    write("src/CLAUDE.md"),
                    "ask approval needed to write_file src/CLAUDE.md: `src/CLAUDE.md`",
                ),
                // CLAUDE.md leads to AGENTS.md, the file the approval names.
                (
                    write("CLAUDE.md"),
                    "ask approval needed to write_file CLAUDE.md: `AGENTS.md`",
                ),
                // The prompt reads web/AGENTS.md through its link: asked under that name.
                (
                    write("web/AGENTS.md"),
                    "ask approval needed to write_file web/AGENTS.md: `web/AGENTS.md`",
                ),
                (
                    write("notes-link"),
                    "deny notes-link leads to `AGENTS.md` through a symlink",
                ),
                (write("src/agents-notes.md"), "allow"),
                (("read_file", json!({"path": "AGENTS.md"}), true), "allow"),
            ],
        );
    }
}

#[test]
fn a_deny_rule_or_plan_mode_still_decides_notes_files() {
    let (_dir, root) = workspace();
    let denied = Policy::new(
        PermissionMode::Bypass,
        layer(RuleLayer::User, &["Edit"], &[], &["Edit(/AGENTS.md)"]),
    );
    check(
        &denied,
        &root,
        &[
            (
                write("AGENTS.md"),
                "deny write_file AGENTS.md is denied by the rule `Edit(/AGENTS.md)`",
            ),
            (write("src/AGENTS.md"), "ask"),
        ],
    );
    let plan = allow_everything(PermissionMode::Plan);
    check(&plan, &root, &[(write("AGENTS.md"), "deny plan mode")]);
}

#[test]
fn only_notes_file_writes_ask_every_time() {
    let (_dir, root) = workspace();
    let asks = |tool: &str, path: &str| {
        let input = json!({"path": path, "content": "x"});
        asks_every_time(&ToolRequest {
            tool,
            input: &input,
            read_only: false,
            workspace: Path::new(&root),
        })
    };
    assert!(asks("write_file", "AGENTS.md"));
    assert!(asks("edit_file", "sub/Claude.md"));
    assert!(!asks("write_file", "src/main.rs"));
    assert!(!asks("read_file", "AGENTS.md"));
    assert!(!asks("write_file", "../AGENTS.md"));
    let policy = allow_everything(PermissionMode::Bypass);
    let input = json!({"path": "src/main.rs", "content": "x"});
    let decision = policy.evaluate(&ToolRequest {
        tool: "write_file",
        input: &input,
        read_only: false,
        workspace: &root,
    });
    assert!(matches!(decision, Decision::Allow { .. }), "{decision:?}");
}
