//! The destructive-command corpus as data: every line of `destructive_corpus.txt` is refused
//! by [`destructive_reason`] and by [`Policy::evaluate`] in every mode, even with a rule
//! allowing every shell command; no line of `destructive_lookalikes.txt` is refused.

use serde_json::json;

use super::{
    Decision, PermissionMode, Policy, RuleLayer, RuleSet, RuleSource, ToolRequest,
    destructive_reason,
};

/// Destructive command lines, one a line.
const DESTRUCTIVE: &str = include_str!("destructive_corpus.txt");

/// Harmless command lines that look like destructive ones, one a line.
const LOOKALIKES: &str = include_str!("destructive_lookalikes.txt");

/// The command lines of a corpus file: comments and blank lines skipped.
fn lines(corpus: &str) -> Vec<&str> {
    corpus
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect()
}

#[test]
fn the_corpora_are_big_enough_to_mean_something() {
    assert!(
        lines(DESTRUCTIVE).len() >= 200,
        "{}",
        lines(DESTRUCTIVE).len()
    );
    assert!(
        lines(LOOKALIKES).len() >= 100,
        "{}",
        lines(LOOKALIKES).len()
    );
}

#[test]
fn every_destructive_line_is_refused() {
    let missed: Vec<&str> = lines(DESTRUCTIVE)
        .into_iter()
        .filter(|command| destructive_reason(command).is_none())
        .collect();
    assert!(
        missed.is_empty(),
        "{} not refused:\n{}",
        missed.len(),
        missed.join("\n")
    );
}

#[test]
fn no_lookalike_is_refused() {
    let refused: Vec<String> = lines(LOOKALIKES)
        .into_iter()
        .filter_map(|command| {
            destructive_reason(command).map(|reason| format!("{command:?}: {reason}"))
        })
        .collect();
    assert!(
        refused.is_empty(),
        "{} refused:\n{}",
        refused.len(),
        refused.join("\n")
    );
}

#[test]
fn no_mode_or_rule_lifts_the_refusal() {
    let (rules, errors) = RuleSet::parse(
        &RuleSource::new(RuleLayer::User, "corpus".to_owned()),
        &["Bash".to_owned(), "Bash(*)".to_owned()],
        &[],
        &[],
    );
    assert!(errors.is_empty(), "{errors:?}");
    let workspace = tempfile::tempdir().unwrap();
    let mut lifted = Vec::new();
    for mode in [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::Bypass,
    ] {
        let policy = Policy::new(mode, rules.clone());
        for command in lines(DESTRUCTIVE) {
            let input = json!({ "command": command });
            let decision = policy.evaluate(&ToolRequest {
                tool: "run_shell",
                input: &input,
                read_only: false,
                workspace: workspace.path(),
            });
            match &decision {
                Decision::Deny { reason } if reason.starts_with("refused") => {}
                _ => lifted.push(format!("{mode:?} {command:?}: {decision:?}")),
            }
        }
    }
    assert!(lifted.is_empty(), "\n{}", lifted.join("\n"));
}
