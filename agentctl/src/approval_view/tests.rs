//! What approvals show: the command, the diff, the content head, the reason and the rules.

use protocol::approval::ApprovalDecision::*;
use serde_json::json;

use super::*;

fn approval(tool: &str, summary: &str, input: serde_json::Value, reason: &str) -> PendingApproval {
    PendingApproval {
        session_rule: None,
        always_rule: None,
        task_id: None,
        agent_type: None,
        parent_run_id: None,
        approval_id: "apr_1".to_owned(),
        session_id: "ses_1".to_owned(),
        run_id: "run_1".to_owned(),
        tool_call_id: "call_1".to_owned(),
        tool: tool.to_owned(),
        summary: summary.to_owned(),
        input,
        reason: reason.to_owned(),
        options: vec![AllowOnce, AllowSession, AllowAlways, Deny, DenyAndCancel],
        requested_at: "t".to_owned(),
        expires_at: "t".to_owned(),
    }
}

#[test]
fn a_shell_command_is_shown_in_full_and_the_rules_exactly() {
    let command = "cargo build &&\n  cargo test --workspace";
    let mut shell = approval(
        "run_shell",
        "cargo build && …",
        json!({ "command": command }),
        "approval needed to run `cargo build && …`: `&&` joins commands, so what it runs cannot be checked",
    );
    shell.session_rule = Some("run_shell(cargo build:*)".to_owned());
    shell.always_rule = Some("run_shell(cargo build:*)".to_owned());
    assert_eq!(
        prompt_lines(&shell),
        [
            "approval needed: run_shell cargo build && …",
            "  $ cargo build &&",
            "      cargo test --workspace",
            "  why: `&&` joins commands, so what it runs cannot be checked",
            "  [s] allows `run_shell(cargo build:*)` for this session · [a] adds \
             `run_shell(cargo build:*)` to your config",
        ]
    );
}

#[test]
fn the_reason_does_not_repeat_the_summary() {
    let cases = [
        ("approval needed to run `touch a.txt`", None),
        (
            "approval needed to run `touch a.txt` (rule `Bash(touch:*)` in /p/.agents/settings.toml)",
            Some("rule `Bash(touch:*)` in /p/.agents/settings.toml"),
        ),
        ("default mode asks", Some("default mode asks")),
        (
            "approval needed to do something else",
            Some("approval needed to do something else"),
        ),
    ];
    for (reason, expected) in cases {
        let shell = approval(
            "run_shell",
            "touch a.txt",
            json!({"command": "touch a.txt"}),
            reason,
        );
        assert_eq!(why(&shell).as_deref(), expected, "{reason}");
        assert!(
            details(&shell).is_empty(),
            "the summary already shows the command"
        );
    }
}

#[test]
fn an_edit_shows_its_diff_and_a_write_the_head_of_its_content() {
    let edit = approval(
        "edit_file",
        "src/a.rs",
        json!({"path": "src/a.rs", "oldText": "let a = 1;\nlet b = 2;", "newText": "let a = 3;"}),
        "approval needed to edit_file src/a.rs",
    );
    assert_eq!(
        details(&edit),
        ["  - let a = 1;", "  - let b = 2;", "  + let a = 3;"]
    );
    assert_eq!(why(&edit), None);
    let content: String = (1..=15).map(|n| format!("line {n}\n")).collect();
    let write = approval(
        "write_file",
        "notes.txt",
        json!({"path": "notes.txt", "content": content}),
        "approval needed to write_file notes.txt",
    );
    let lines = details(&write);
    assert_eq!(lines[0], "  content (15 lines, 111 bytes):");
    assert_eq!(lines[1], "  │ line 1");
    assert_eq!(lines.len(), 11);
    assert_eq!(lines[10], "  … 6 more lines");
}

#[test]
fn rules_are_named_only_when_offered() {
    let mut shell = approval("run_shell", "ls", json!({"command": "ls"}), "x");
    shell.session_rule = Some("run_shell(ls:*)".to_owned());
    shell.options = vec![AllowOnce, AllowSession, Deny];
    assert_eq!(
        rules(&shell).as_deref(),
        Some("[s] allows `run_shell(ls:*)` for this session")
    );
    shell.options = vec![AllowOnce, Deny];
    assert_eq!(rules(&shell), None);
}
