//! What a hook's ending means, as Claude Code defines it: exit 0 with stdout parsed as JSON
//! when it starts with `{` (`decision`, `reason`, `hookSpecificOutput.permissionDecision`,
//! `updatedInput`, `additionalContext`, `continue`/`stopReason`, `systemMessage`,
//! `suppressOutput`), else plain stdout as context for UserPromptSubmit and SessionStart;
//! exit 2 blocks with stderr as the reason; any other ending is a warning and the action
//! proceeds. Pure: the table of `tests` pins it.

use serde_json::Value;

use super::runner::{Ending, Ran};
use super::{HookDef, HookEvent};
use crate::intercept::{Outcome, Permission};

/// How much of a hook's stderr or junk a warning quotes.
const MAX_QUOTED_CHARS: usize = 500;

/// A hook's say, and how `hookCompleted` reports it.
#[derive(Debug)]
pub(super) struct Decided {
    pub outcome: Outcome,
    /// `success`, `blocked`, `error` or `timeout`.
    pub status: &'static str,
    pub reason: Option<String>,
}

pub(super) fn decide(event: HookEvent, hook: &HookDef, ran: &Ran) -> Decided {
    let label = format!(
        "hook `{}` ({})",
        super::event_command(&hook.command),
        event.name()
    );
    let mut outcome = Outcome::default();
    if ran.stdout_cut || ran.stderr_cut {
        outcome.warnings.push(format!(
            "{label} wrote more than {} bytes; the rest of its output was dropped",
            super::MAX_HOOK_OUTPUT_BYTES
        ));
    }
    let code = match &ran.ending {
        Ending::Exited(Some(code)) => *code,
        Ending::Exited(None) => {
            return failed(outcome, format!("{label} was killed by a signal"), "error");
        }
        Ending::TimedOut => {
            let why = format!(
                "{label} timed out after {} s and was killed with everything it started; \
                 the action went on without it",
                hook.timeout.as_secs_f64()
            );
            return failed(outcome, why, "timeout");
        }
        Ending::Failed(why) => return failed(outcome, format!("{label}: {why}"), "error"),
    };
    match code {
        0 => exit_zero(event, &label, ran, outcome),
        2 => {
            let reason = quoted(ran.stderr.trim());
            let reason = if reason.is_empty() {
                format!("blocked by {label}")
            } else {
                reason
            };
            if event.can_block() {
                outcome.block = Some(reason.clone());
                Decided {
                    outcome,
                    status: "blocked",
                    reason: Some(reason),
                }
            } else {
                failed(outcome, format!("{label}: {reason}"), "error")
            }
        }
        code => {
            let stderr = quoted(ran.stderr.trim());
            let why = if stderr.is_empty() {
                format!("{label} failed with exit code {code}; the action went on")
            } else {
                format!("{label} failed with exit code {code}: {stderr}; the action went on")
            };
            failed(outcome, why, "error")
        }
    }
}

fn failed(mut outcome: Outcome, why: String, status: &'static str) -> Decided {
    outcome.warnings.push(why.clone());
    Decided {
        outcome,
        status,
        reason: Some(why),
    }
}

fn exit_zero(event: HookEvent, label: &str, ran: &Ran, mut outcome: Outcome) -> Decided {
    let stdout = ran.stdout.trim();
    if !stdout.starts_with('{') {
        if !stdout.is_empty()
            && matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
        {
            outcome.context.push(stdout.to_owned());
        }
        return success(outcome);
    }
    let json: serde_json::Map<String, Value> = match serde_json::from_str(stdout) {
        Ok(Value::Object(json)) => json,
        _ => {
            return failed(
                outcome,
                format!(
                    "{label} printed output that is not a JSON object; it was ignored: {}",
                    quoted(stdout)
                ),
                "error",
            );
        }
    };
    let text = |object: &serde_json::Map<String, Value>, key: &str| {
        object
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
    };
    let specific = json
        .get("hookSpecificOutput")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(message) = text(&json, "systemMessage") {
        outcome.warnings.push(message);
    }
    if json.get("continue").and_then(Value::as_bool) == Some(false) {
        outcome.halt =
            Some(text(&json, "stopReason").unwrap_or_else(|| format!("stopped by {label}")));
    }
    let reason = text(&json, "reason");
    match json.get("decision").and_then(Value::as_str) {
        Some("block") => {
            let reason = reason
                .clone()
                .unwrap_or_else(|| format!("blocked by {label}"));
            if event.can_block() {
                outcome.block = Some(reason);
            } else {
                outcome.warnings.push(format!("{label}: {reason}"));
            }
        }
        // Claude Code's older spelling of a PreToolUse allow.
        Some("approve") if event == HookEvent::PreToolUse => {
            outcome.permission = Some(Permission::Allow);
        }
        _ => {}
    }
    let why = text(&specific, "permissionDecisionReason")
        .or_else(|| reason.clone())
        .unwrap_or_else(|| format!("said by {label}"));
    outcome.permission = match specific.get("permissionDecision").and_then(Value::as_str) {
        Some("allow") => Some(Permission::Allow),
        Some("deny") => Some(Permission::Deny(why)),
        Some("ask") => Some(Permission::Ask(why)),
        _ => outcome.permission,
    };
    // PermissionRequest's own form: {"decision": {"behavior": "allow"|"deny", "message"}}.
    if let Some(verdict) = specific.get("decision").and_then(Value::as_object) {
        let message = text(verdict, "message").unwrap_or_else(|| format!("denied by {label}"));
        match verdict.get("behavior").and_then(Value::as_str) {
            Some("allow") => outcome.permission = Some(Permission::Allow),
            Some("deny") => outcome.permission = Some(Permission::Deny(message)),
            _ => {}
        }
        if let Some(input) = verdict
            .get("updatedInput")
            .filter(|input| input.is_object())
        {
            outcome.updated_input = Some(input.clone());
        }
    }
    if let Some(input) = specific
        .get("updatedInput")
        .or_else(|| json.get("updatedInput"))
        .filter(|input| input.is_object())
    {
        outcome.updated_input = Some(input.clone());
    }
    for object in [&json, &specific] {
        if let Some(context) = text(object, "additionalContext") {
            outcome.context.push(context);
        }
    }
    // `suppressOutput` hides stdout from a transcript; agentd never shows a hook's stdout.
    let status =
        if outcome.block.is_some() || matches!(outcome.permission, Some(Permission::Deny(_))) {
            "blocked"
        } else {
            "success"
        };
    let reason = outcome.block.clone().or_else(|| match &outcome.permission {
        Some(Permission::Deny(why) | Permission::Ask(why)) => Some(why.clone()),
        _ => None,
    });
    Decided {
        outcome,
        status,
        reason,
    }
}

fn success(outcome: Outcome) -> Decided {
    Decided {
        outcome,
        status: "success",
        reason: None,
    }
}

fn quoted(text: &str) -> String {
    agentd_core::truncate::truncate_middle(text, MAX_QUOTED_CHARS).into_owned()
}
