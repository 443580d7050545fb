//! How `agentctl run` answers approvals: the `--approve` policy of a non-interactive run, the
//! keys of the interactive prompt, and the words for decisions. Pure, so every rule is
//! unit-tested; the terminal lives in `terminal`, the event loop in `follow`.

use protocol::approval::{ApprovalDecision, PendingApproval};

/// `--approve`: what `agentctl run` does with an approval when it does not prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ApprovePolicy {
    /// Deny what needs approval (the default without a terminal).
    Never,
    /// Leave it pending for another client (`agentctl approve`, an editor).
    Wait,
    /// Allow file edits (`write_file`, `edit_file`) once; deny the rest.
    Edits,
    /// Allow everything that is asked, once per call.
    All,
}

/// How a run handles the approvals of its own run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handling {
    /// Ask the person at the terminal, one key per answer.
    Prompt,
    /// Answer by policy, never asking.
    Policy(ApprovePolicy),
}

/// What a key pressed at the prompt means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyAction {
    Decide(ApprovalDecision),
    /// Not one of the offered keys: keep asking.
    Ignore,
}

/// The reason sent to the model when `--approve never` denies.
pub const NOT_INTERACTIVE_REASON: &str = "agentctl run is not interactive; rerun with --approve \
     edits|all or answer from another terminal";

/// The reason sent to the model when `--approve edits` denies a tool that is not a file edit.
pub const EDITS_ONLY_REASON: &str =
    "agentctl run --approve edits allows only file edits (write_file, edit_file)";

/// The reason sent to the model when a standing `--approve` policy meets an approval the daemon
/// wants a person to answer each time (a write of `AGENTS.md` or `CLAUDE.md`: it offers neither
/// `allowSession` nor `allowAlways`).
pub const PERSON_ONLY_REASON: &str = "this write is asked every time and must be answered by a \
     person; agentctl run --approve does not answer it (answer at the prompt or with agentctl \
     approve)";

/// The tools `--approve edits` allows: the daemon refuses edits outside the workspace before
/// asking, so what reaches us is an edit inside it.
const EDIT_TOOLS: &[&str] = &["write_file", "edit_file"];

/// Prompt on a terminal unless `--approve` was given; without a terminal (or with `--json`),
/// the given policy or `never`.
pub fn choose_handling(explicit: Option<ApprovePolicy>, interactive: bool) -> Handling {
    match (explicit, interactive) {
        (Some(policy), _) => Handling::Policy(policy),
        (None, true) => Handling::Prompt,
        (None, false) => Handling::Policy(ApprovePolicy::Never),
    }
}

/// The policy's answer to `approval`: a decision and the reason shown to the model, or `None`
/// to leave it pending (`wait`).
pub fn decide(
    policy: ApprovePolicy,
    approval: &PendingApproval,
) -> Option<(ApprovalDecision, Option<String>)> {
    match policy {
        ApprovePolicy::Never => Some((
            ApprovalDecision::Deny,
            Some(NOT_INTERACTIVE_REASON.to_owned()),
        )),
        ApprovePolicy::Wait => None,
        ApprovePolicy::Edits | ApprovePolicy::All if asks_a_person(approval) => {
            Some((ApprovalDecision::Deny, Some(PERSON_ONLY_REASON.to_owned())))
        }
        ApprovePolicy::Edits if EDIT_TOOLS.contains(&approval.tool.as_str()) => {
            Some((ApprovalDecision::AllowOnce, None))
        }
        ApprovePolicy::Edits => Some((ApprovalDecision::Deny, Some(EDITS_ONLY_REASON.to_owned()))),
        ApprovePolicy::All => Some((ApprovalDecision::AllowOnce, None)),
    }
}

/// Whether the daemon wants a person to answer `approval` each time: it lists its options and
/// offers no way to remember an allow (no `allowSession`), so no standing policy may allow it.
fn asks_a_person(approval: &PendingApproval) -> bool {
    !approval.options.is_empty() && !approval.options.contains(&ApprovalDecision::AllowSession)
}

/// Whether the prompt offers `decision`: `allowAlways` only when the daemon lists it (a safe
/// rule exists); the others when listed, or always when the daemon sent no list.
pub fn offered(options: &[ApprovalDecision], decision: ApprovalDecision) -> bool {
    match decision {
        ApprovalDecision::AllowAlways | ApprovalDecision::DenyAlways => options.contains(&decision),
        _ => options.is_empty() || options.contains(&decision),
    }
}

/// The prompt's keys: `y` once, `s` session, `a` always, `n` deny, `c` deny and cancel
/// (either case); anything else, or a decision not offered, is ignored.
pub fn key_action(key: u8, options: &[ApprovalDecision]) -> KeyAction {
    let decision = match key.to_ascii_lowercase() {
        b'y' => ApprovalDecision::AllowOnce,
        b's' => ApprovalDecision::AllowSession,
        b'a' => ApprovalDecision::AllowAlways,
        b'n' => ApprovalDecision::Deny,
        b'c' => ApprovalDecision::DenyAndCancel,
        _ => return KeyAction::Ignore,
    };
    if offered(options, decision) {
        KeyAction::Decide(decision)
    } else {
        KeyAction::Ignore
    }
}

/// The prompt's question line, listing only the offered keys.
pub fn question(options: &[ApprovalDecision]) -> String {
    let keys = [
        (ApprovalDecision::AllowOnce, "[y]es once"),
        (ApprovalDecision::AllowSession, "[s]ession"),
        (ApprovalDecision::AllowAlways, "[a]lways"),
        (ApprovalDecision::Deny, "[n]o"),
        (ApprovalDecision::DenyAndCancel, "[c]ancel run"),
    ];
    let offered: Vec<&str> = keys
        .iter()
        .filter(|(decision, _)| offered(options, *decision))
        .map(|(_, label)| *label)
        .collect();
    format!("allow? {} ", offered.join(" · "))
}

/// A decision in words: "allowed once", "denied".
pub fn decision_words(decision: ApprovalDecision) -> &'static str {
    match decision {
        ApprovalDecision::AllowOnce => "allowed once",
        ApprovalDecision::AllowSession => "allowed for this session",
        ApprovalDecision::AllowAlways => "allowed always",
        ApprovalDecision::Deny => "denied",
        ApprovalDecision::DenyAndCancel => "denied and the run cancelled",
        ApprovalDecision::DenyAlways => "denied always",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ApprovalDecision::*;

    fn approval(tool: &str, options: Vec<ApprovalDecision>) -> PendingApproval {
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
            summary: "src/main.rs".to_owned(),
            input: serde_json::json!({}),
            reason: "default mode asks before writes".to_owned(),
            options,
            requested_at: "2026-11-30T09:00:00Z".to_owned(),
            expires_at: "2026-11-30T09:10:00Z".to_owned(),
        }
    }

    #[test]
    fn policies_decide() {
        let edit = approval("write_file", vec![]);
        let patch = approval("edit_file", vec![]);
        let shell = approval("run_shell", vec![]);
        let check = |policy, item: &PendingApproval| decide(policy, item).map(|(d, _)| d);
        assert_eq!(check(ApprovePolicy::Never, &edit), Some(Deny));
        assert_eq!(check(ApprovePolicy::Wait, &edit), None);
        assert_eq!(check(ApprovePolicy::Edits, &edit), Some(AllowOnce));
        assert_eq!(check(ApprovePolicy::Edits, &patch), Some(AllowOnce));
        assert_eq!(check(ApprovePolicy::Edits, &shell), Some(Deny));
        assert_eq!(check(ApprovePolicy::All, &shell), Some(AllowOnce));
        assert_eq!(
            decide(ApprovePolicy::Never, &shell),
            Some((Deny, Some(NOT_INTERACTIVE_REASON.to_owned())))
        );
        assert_eq!(decide(ApprovePolicy::All, &shell), Some((AllowOnce, None)));
    }

    /// A write the daemon asks every time (`AGENTS.md`: no `allowSession` offered) is never
    /// allowed by a standing policy, only by a person.
    #[test]
    fn a_policy_never_allows_what_must_be_asked_every_time() {
        let notes = approval("write_file", vec![AllowOnce, Deny, DenyAndCancel]);
        for policy in [ApprovePolicy::Edits, ApprovePolicy::All] {
            assert_eq!(
                decide(policy, &notes),
                Some((Deny, Some(PERSON_ONLY_REASON.to_owned())))
            );
        }
        assert_eq!(decide(ApprovePolicy::Wait, &notes), None);
        let usual = approval(
            "write_file",
            vec![AllowOnce, AllowSession, Deny, DenyAndCancel],
        );
        assert_eq!(decide(ApprovePolicy::All, &usual), Some((AllowOnce, None)));
    }

    #[test]
    fn handling_prompts_only_on_a_terminal_without_an_explicit_policy() {
        assert_eq!(choose_handling(None, true), Handling::Prompt);
        assert_eq!(
            choose_handling(None, false),
            Handling::Policy(ApprovePolicy::Never)
        );
        assert_eq!(
            choose_handling(Some(ApprovePolicy::All), true),
            Handling::Policy(ApprovePolicy::All)
        );
        assert_eq!(
            choose_handling(Some(ApprovePolicy::Wait), false),
            Handling::Policy(ApprovePolicy::Wait)
        );
    }

    #[test]
    fn keys_map_to_offered_decisions() {
        let all = [AllowOnce, AllowSession, AllowAlways, Deny, DenyAndCancel];
        let no_always = [AllowOnce, AllowSession, Deny, DenyAndCancel];
        let cases: &[(u8, &[ApprovalDecision], KeyAction)] = &[
            (b'y', &all, KeyAction::Decide(AllowOnce)),
            (b'Y', &all, KeyAction::Decide(AllowOnce)),
            (b's', &all, KeyAction::Decide(AllowSession)),
            (b'a', &all, KeyAction::Decide(AllowAlways)),
            (b'a', &no_always, KeyAction::Ignore),
            (b'a', &[], KeyAction::Ignore),
            (b'n', &no_always, KeyAction::Decide(Deny)),
            (b'c', &no_always, KeyAction::Decide(DenyAndCancel)),
            (b'c', &[], KeyAction::Decide(DenyAndCancel)),
            (b'\n', &all, KeyAction::Ignore),
            (b'x', &all, KeyAction::Ignore),
            (3, &all, KeyAction::Ignore),
        ];
        for (key, options, expected) in cases {
            assert_eq!(
                key_action(*key, options),
                *expected,
                "key {:?} with {options:?}",
                *key as char
            );
        }
    }

    #[test]
    fn question_lists_only_offered_keys() {
        assert_eq!(
            question(&[AllowOnce, AllowSession, Deny, DenyAndCancel]),
            "allow? [y]es once · [s]ession · [n]o · [c]ancel run "
        );
        assert_eq!(
            question(&[AllowOnce, AllowSession, AllowAlways, Deny, DenyAndCancel]),
            "allow? [y]es once · [s]ession · [a]lways · [n]o · [c]ancel run "
        );
    }
}
