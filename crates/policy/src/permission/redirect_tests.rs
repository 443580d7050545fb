//! Policy decisions for shell lines that write files through redirections, `tee` and their own
//! arguments (`cp`, `rm`, `sed -i`, `dd of=`, …): a target outside the workspace, protected,
//! or unknowable asks in every mode but bypass, whatever allow rule covers the command;
//! workspace targets are decided as before.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::{
    Decision, PermissionMode, Policy, RuleLayer, RuleSet, RuleSource, ToolRequest,
    always_allow_rule, session_key,
};

/// A temp workspace with `.git` and a directory beside it.
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(dir.path().join("outside")).unwrap();
    (dir, root)
}

fn policy(mode: PermissionMode, allow: &[&str]) -> Policy {
    let allow: Vec<String> = allow.iter().map(|rule| (*rule).to_owned()).collect();
    let (rules, errors) = RuleSet::parse(
        &RuleSource::new(RuleLayer::Session, "session".to_owned()),
        &allow,
        &[],
        &[],
    );
    assert!(errors.is_empty(), "{errors:?}");
    Policy::new(mode, rules)
}

/// "allow …", "ask …" or "deny …" for `command` run in `root`.
fn decide(policy: &Policy, root: &Path, command: &str) -> String {
    let input = json!({ "command": command });
    let request = ToolRequest {
        tool: "run_shell",
        input: &input,
        read_only: false,
        workspace: root,
    };
    match policy.evaluate(&request) {
        Decision::Allow { reason } => format!("allow {}", reason.unwrap_or_default()),
        Decision::Ask { reason } => format!("ask {reason}"),
        Decision::Deny { reason } => format!("deny {reason}"),
    }
}

fn check(policy: &Policy, root: &Path, cases: &[(&str, &str)]) {
    let failures: Vec<String> = cases
        .iter()
        .map(|(command, expected)| (command, expected, decide(policy, root, command)))
        .filter(|(_, expected, actual)| !actual.starts_with(**expected))
        .map(|(command, expected, actual)| format!("{command}: expected {expected}, got {actual}"))
        .collect();
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn an_allow_rule_for_the_command_does_not_cover_a_write_outside_the_workspace() {
    let (dir, root) = workspace();
    let outside = dir.path().canonicalize().unwrap().join("outside/x");
    let outside = outside.display();
    let policy = policy(PermissionMode::Default, &["Bash(echo:*)", "Bash(make:*)"]);
    check(
        &policy,
        &root,
        &[
            ("echo hi", "allow"),
            ("echo hi > out.txt", "allow"),
            ("echo hi > sub/dir/out.txt 2>&1", "allow"),
            ("make 2> /dev/null", "allow"),
            ("echo hi | tee log.txt", "ask"), // tee is not allowed by a rule
            (&format!("echo hi > {outside}"), "ask"),
            (&format!("echo hi >> {outside}"), "ask"),
            (&format!("make &> {outside}"), "ask"),
            (&format!("make 2> {outside}"), "ask"),
            ("echo hi > ../escape.txt", "ask"),
            ("echo hi > /etc/profile", "ask"),
            ("echo hi > ~/.bashrc", "ask"),
            ("echo hi > $HOME/.bashrc", "ask"),
            ("echo hi > .git/hooks/pre-commit", "ask"),
            ("echo $(echo hi > /etc/profile)", "ask"),
        ],
    );
    let reason = decide(&policy, &root, "echo hi > /etc/profile");
    assert!(
        reason.contains("writes `/etc/profile` outside the workspace")
            && reason.contains("does not cover"),
        "{reason}"
    );
}

#[test]
fn tee_is_a_write_and_a_cd_makes_relative_targets_unknowable() {
    let (_dir, root) = workspace();
    let policy = policy(
        PermissionMode::Default,
        &["Bash(echo:*)", "Bash(tee:*)", "Bash(cd:*)"],
    );
    check(
        &policy,
        &root,
        &[
            ("echo hi | tee log.txt", "allow"),
            ("echo hi | tee -a /etc/hosts", "ask"),
            ("echo hi | tee log.txt /etc/hosts", "ask"),
            ("cd sub && echo hi > out.txt", "ask"),
        ],
    );
}

#[test]
fn every_mode_but_bypass_asks_and_an_exact_rule_covers_the_whole_line() {
    let (_dir, root) = workspace();
    for mode in [PermissionMode::Default, PermissionMode::AcceptEdits] {
        let policy = policy(mode, &["Bash"]);
        check(&policy, &root, &[("echo hi > /etc/profile", "ask")]);
    }
    let bypass = policy(PermissionMode::Bypass, &[]);
    check(&bypass, &root, &[("echo hi > /etc/profile", "allow")]);
    let exact = policy(
        PermissionMode::Default,
        &["Bash(echo hi > /tmp/agentd.log)"],
    );
    check(&exact, &root, &[("echo hi > /tmp/agentd.log", "allow")]);
}

#[test]
fn a_line_that_writes_files_is_remembered_exactly() {
    let (_dir, root) = workspace();
    let key = |command: &str| {
        let input = json!({ "command": command });
        let request = ToolRequest {
            tool: "run_shell",
            input: &input,
            read_only: false,
            workspace: &root,
        };
        (
            session_key(&request).to_string(),
            always_allow_rule(&request),
        )
    };
    assert_eq!(
        key("echo hi > /tmp/x"),
        (
            "run_shell(echo hi > /tmp/x)".to_owned(),
            Some("run_shell(echo hi > /tmp/x)".to_owned())
        )
    );
    let mut policy = policy(PermissionMode::Default, &[]);
    let input = json!({ "command": "echo hi > /tmp/x" });
    policy.allow_for_session(session_key(&ToolRequest {
        tool: "run_shell",
        input: &input,
        read_only: false,
        workspace: &root,
    }));
    check(
        &policy,
        &root,
        &[("echo hi > /tmp/x", "allow"), ("echo hi > /tmp/y", "ask")],
    );
}

#[test]
fn edit_rules_with_a_path_apply_to_the_files_a_line_writes() {
    let (_dir, root) = workspace();
    let allow: Vec<String> = vec!["Bash(echo:*)".to_owned()];
    let ask = vec!["Edit(docs/**)".to_owned()];
    let deny = vec!["Edit(./secrets/**)".to_owned(), "Write(*.lock)".to_owned()];
    let (rules, errors) = RuleSet::parse(
        &RuleSource::new(RuleLayer::Project, "project".to_owned()),
        &allow,
        &ask,
        &deny,
    );
    assert!(errors.is_empty(), "{errors:?}");
    for mode in [PermissionMode::Default, PermissionMode::Bypass] {
        let policy = Policy::new(mode, rules.clone());
        check(
            &policy,
            &root,
            &[
                ("echo hi > notes.txt", "allow"),
                ("echo hi > secrets/key", "deny"),
                ("echo hi | tee -a Cargo.lock", "deny"),
                ("echo hi >> docs/index.md", "ask"),
            ],
        );
    }
    let whole_tool = policy(PermissionMode::Default, &["Bash(echo:*)"]);
    let mut whole_tool_rules = whole_tool.rules.clone();
    let (deny_edit, _) = RuleSet::parse(
        &RuleSource::new(RuleLayer::User, "user".to_owned()),
        &[],
        &[],
        &["Edit".to_owned()],
    );
    whole_tool_rules.deny.extend(deny_edit.deny);
    let whole_tool = Policy::new(PermissionMode::Default, whole_tool_rules);
    check(&whole_tool, &root, &[("echo hi > notes.txt", "allow")]);
    let reason = decide(
        &Policy::new(PermissionMode::Default, rules),
        &root,
        "echo x > secrets/key",
    );
    assert!(
        reason.contains("writes `secrets/key`") && reason.contains("Edit(./secrets/**)"),
        "{reason}"
    );
}

#[test]
fn commands_that_write_their_arguments_outside_the_workspace_ask() {
    let (dir, root) = workspace();
    let outside = dir.path().canonicalize().unwrap().join("outside");
    let outside = outside.display();
    let policy = policy(
        PermissionMode::AcceptEdits,
        &[
            "Bash(cp:*)",
            "Bash(mv:*)",
            "Bash(rm:*)",
            "Bash(sed:*)",
            "Bash(dd:*)",
            "Bash(mkdir:*)",
            "Bash(chmod:*)",
        ],
    );
    check(
        &policy,
        &root,
        &[
            ("cp a.txt b.txt", "allow"),
            ("cp -r src build/out", "allow"),
            ("rm -f *.o build/*.tmp", "allow"),
            ("mkdir -p out/dir", "allow"),
            ("sed 's/a/b/' /etc/hosts", "allow"), // reads only
            ("sed -i 's/a/b/' notes.txt", "allow"),
            (&format!("cp a.txt {outside}/"), "ask"),
            (&format!("mv a.txt {outside}/a.txt"), "ask"),
            ("cp -t /usr/local/bin tool", "ask"),
            ("rm /etc/hosts", "ask"),
            ("rm ../*.txt", "ask"),
            ("rm -f $TARGET", "ask"),
            ("sed -i 's/a/b/' ~/.bashrc", "ask"),
            ("sed -i.bak -e 's/a/b/' /etc/hosts", "ask"),
            ("dd if=/dev/zero of=/etc/x bs=1M count=1", "ask"),
            ("chmod +x .git/hooks/pre-commit", "ask"),
            ("cp evil .git/hooks/post-checkout", "ask"),
            ("mkdir /usr/local/x", "ask"),
        ],
    );
    let reason = decide(&policy, &root, "cp a /etc/x");
    assert!(
        reason.contains("writes `/etc/x` outside the workspace"),
        "{reason}"
    );
    let bypass = super::Policy::new(PermissionMode::Bypass, policy.rules.clone());
    check(&bypass, &root, &[("cp a /etc/x", "allow")]);
}

#[test]
fn edit_rules_with_a_path_apply_to_the_files_a_command_writes() {
    let (_dir, root) = workspace();
    let deny = vec!["Edit(./secrets/**)".to_owned()];
    let (rules, errors) = RuleSet::parse(
        &RuleSource::new(RuleLayer::Project, "project".to_owned()),
        &["Bash(rm:*)".to_owned(), "Bash(cp:*)".to_owned()],
        &[],
        &deny,
    );
    assert!(errors.is_empty(), "{errors:?}");
    let policy = Policy::new(PermissionMode::Default, rules);
    check(
        &policy,
        &root,
        &[
            ("rm notes.txt", "allow"),
            ("rm secrets/key", "deny"),
            ("cp x secrets/key", "deny"),
        ],
    );
}
