//! What an approval shows a person before they answer: the tool and its one-line summary, then
//! what it would really do (the full command of `run_shell`, the diff of `edit_file`, the head
//! of `write_file`'s content), why it asks (without repeating the summary) and the exact rules
//! `s` and `a` would add. Pure text; the caller neutralises it on its way to the terminal.

use protocol::approval::{ApprovalDecision, PendingApproval};

use crate::render::{one_line, truncate};

/// Longest summary or reason shown in one approval line.
const SUMMARY_MAX_CHARS: usize = 120;

/// Lines of `write_file` content shown: its head.
const CONTENT_HEAD_LINES: usize = 10;

/// Lines of an `edit_file` diff shown (old and new together).
const DIFF_MAX_LINES: usize = 40;

/// Lines of a `run_shell` command shown: the full command, up to this bound (a pathological
/// command must not fill the scrollback).
const COMMAND_MAX_LINES: usize = 200;

/// Longest single detail line, in characters.
const DETAIL_LINE_MAX_CHARS: usize = 400;

/// The tool and its one-line summary: `run_shell touch a.txt`.
pub fn what(approval: &PendingApproval) -> String {
    let summary = truncate(&one_line(&approval.summary), SUMMARY_MAX_CHARS);
    if summary.is_empty() {
        approval.tool.clone()
    } else {
        format!("{} {summary}", approval.tool)
    }
}

/// The lines a prompt shows above its question.
pub fn prompt_lines(approval: &PendingApproval) -> Vec<String> {
    let mut lines = vec![format!("approval needed: {}", what(approval))];
    lines.extend(details(approval));
    if let Some(why) = why(approval) {
        lines.push(format!("  why: {why}"));
    }
    if let Some(rules) = rules(approval) {
        lines.push(format!("  {rules}"));
    }
    lines
}

/// What the call would do, beyond its summary.
pub fn details(approval: &PendingApproval) -> Vec<String> {
    let field = |name: &str| approval.input.get(name).and_then(serde_json::Value::as_str);
    match approval.tool.as_str() {
        "run_shell" => match field("command") {
            // A one-line command the summary shows whole needs no repeat.
            Some(command)
                if command.trim() != approval.summary.trim() || command.contains('\n') =>
            {
                let mut lines: Vec<String> = command
                    .trim_end()
                    .lines()
                    .enumerate()
                    .map(|(index, line)| {
                        let lead = if index == 0 { "  $ " } else { "    " };
                        format!("{lead}{}", truncate(line, DETAIL_LINE_MAX_CHARS))
                    })
                    .collect();
                cap(&mut lines, COMMAND_MAX_LINES);
                lines
            }
            _ => Vec::new(),
        },
        "edit_file" => match (field("oldText"), field("newText")) {
            (Some(old), Some(new)) => {
                let mut lines: Vec<String> = old
                    .lines()
                    .map(|line| format!("  - {}", truncate(line, DETAIL_LINE_MAX_CHARS)))
                    .chain(
                        new.lines()
                            .map(|line| format!("  + {}", truncate(line, DETAIL_LINE_MAX_CHARS))),
                    )
                    .collect();
                if approval.input.get("replaceAll") == Some(&serde_json::Value::Bool(true)) {
                    lines.insert(0, "  (every occurrence)".to_owned());
                }
                cap(&mut lines, DIFF_MAX_LINES);
                lines
            }
            _ => Vec::new(),
        },
        "write_file" => match field("content") {
            Some(content) => {
                let count = content.lines().count();
                let mut lines = vec![format!(
                    "  content ({count} line{}, {} bytes):",
                    if count == 1 { "" } else { "s" },
                    content.len()
                )];
                lines.extend(
                    content
                        .lines()
                        .map(|line| format!("  │ {}", truncate(line, DETAIL_LINE_MAX_CHARS))),
                );
                cap(&mut lines, CONTENT_HEAD_LINES + 1);
                lines
            }
            None => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// Why it asks, without the part that repeats the summary ("approval needed to run `ls`"):
/// the rule or the reason that remains, or `None` when nothing does.
pub fn why(approval: &PendingApproval) -> Option<String> {
    let reason = one_line(&approval.reason);
    let summary = one_line(&approval.summary);
    let Some(rest) = reason.strip_prefix("approval needed to ") else {
        return (!reason.is_empty()).then_some(reason);
    };
    if summary.is_empty() {
        return Some(reason.clone());
    }
    let Some(at) = rest.find(&summary) else {
        return Some(reason.clone());
    };
    let after = rest[at + summary.len()..].trim_start_matches('`');
    let after = after.trim_start_matches(':').trim();
    let after = after
        .strip_prefix('(')
        .and_then(|inner| inner.strip_suffix(')'))
        .unwrap_or(after)
        .trim();
    (!after.is_empty()).then(|| after.to_owned())
}

/// The rules `s` and `a` would add, as offered.
pub fn rules(approval: &PendingApproval) -> Option<String> {
    let offers = |decision| approval.options.is_empty() || approval.options.contains(&decision);
    let mut parts = Vec::new();
    if let Some(rule) = approval
        .session_rule
        .as_deref()
        .filter(|_| offers(ApprovalDecision::AllowSession))
    {
        parts.push(format!("[s] allows `{rule}` for this session"));
    }
    if let Some(rule) = approval
        .always_rule
        .as_deref()
        .filter(|_| approval.options.contains(&ApprovalDecision::AllowAlways))
    {
        parts.push(format!("[a] adds `{rule}` to your config"));
    }
    (!parts.is_empty()).then(|| parts.join(" · "))
}

/// Keep at most `max` lines, the last one saying how many were left out.
fn cap(lines: &mut Vec<String>, max: usize) {
    if lines.len() > max {
        let left_out = lines.len() - (max - 1);
        lines.truncate(max - 1);
        lines.push(format!("  … {left_out} more lines"));
    }
}

/// The line for an approval left pending for another client.
pub fn wait_line(approval: &PendingApproval) -> String {
    let id = crate::ids::short(&approval.approval_id);
    format!(
        "approval {id} waits: {}{}; answer with `agentctl approve {id}` or `agentctl deny {id}`",
        what(approval),
        because(approval)
    )
}

/// ` (asked by subagent TYPE, task ID)` for a child task's approval, else nothing.
pub fn asked_by(approval: &PendingApproval) -> String {
    match (&approval.agent_type, &approval.task_id) {
        (Some(agent), Some(task)) => format!(" (asked by subagent {agent}, task {task})"),
        (None, Some(task)) => format!(" (asked by task {task})"),
        _ => String::new(),
    }
}

/// ` (why)` when the reason says more than the summary, else nothing.
fn because(approval: &PendingApproval) -> String {
    why(approval)
        .map(|why| format!(" ({})", truncate(&why, SUMMARY_MAX_CHARS)))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
