//! Daemon approvals as ACP permission requests: the options an approval offers, and the
//! decision an editor's chosen option stands for. Never a decision the person did not pick.

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionResponse,
};
use protocol::approval::ApprovalDecision;

/// The ACP options of the decisions an approval offers, in its order. The option id is the
/// decision's wire name, so the answer maps back without a table.
pub fn options(decisions: &[ApprovalDecision]) -> Vec<PermissionOption> {
    decisions
        .iter()
        .map(|decision| {
            let (name, kind) = match decision {
                ApprovalDecision::AllowOnce => ("Allow once", PermissionOptionKind::AllowOnce),
                ApprovalDecision::AllowSession => {
                    ("Allow for this session", PermissionOptionKind::AllowAlways)
                }
                ApprovalDecision::AllowAlways => (
                    "Always allow (adds a rule)",
                    PermissionOptionKind::AllowAlways,
                ),
                ApprovalDecision::Deny => ("Reject", PermissionOptionKind::RejectOnce),
                ApprovalDecision::DenyAndCancel => {
                    ("Reject and stop the run", PermissionOptionKind::RejectOnce)
                }
                ApprovalDecision::DenyAlways => (
                    "Always reject (adds a rule)",
                    PermissionOptionKind::RejectAlways,
                ),
            };
            PermissionOption::new(option_id(*decision), name, kind)
        })
        .collect()
}

/// The option id of a decision: its wire name (`allowOnce`, `deny`, …).
pub fn option_id(decision: ApprovalDecision) -> String {
    serde_json::to_value(decision)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The decision an editor's answer stands for: `None` when it cancelled the request or
/// picked an option the approval did not offer (then nobody decided, and the approval stays
/// pending for another client or its timeout).
pub fn decision(
    response: &RequestPermissionResponse,
    offered: &[ApprovalDecision],
) -> Option<ApprovalDecision> {
    let RequestPermissionOutcome::Selected(selected) = &response.outcome else {
        return None;
    };
    offered
        .iter()
        .copied()
        .find(|decision| option_id(*decision) == selected.option_id.0.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::SelectedPermissionOutcome;

    #[test]
    fn options_map_back_to_their_decisions() {
        let offered = [
            ApprovalDecision::AllowOnce,
            ApprovalDecision::AllowSession,
            ApprovalDecision::AllowAlways,
            ApprovalDecision::Deny,
            ApprovalDecision::DenyAndCancel,
        ];
        let options = options(&offered);
        let kinds: Vec<_> = options
            .iter()
            .map(|option| serde_json::to_value(option.kind).unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "allow_once",
                "allow_always",
                "allow_always",
                "reject_once",
                "reject_once"
            ]
        );
        for (option, expected) in options.iter().zip(offered) {
            let answer = RequestPermissionResponse::new(RequestPermissionOutcome::Selected(
                SelectedPermissionOutcome::new(option.option_id.clone()),
            ));
            assert_eq!(decision(&answer, &offered), Some(expected));
        }
    }

    #[test]
    fn a_cancelled_or_unknown_answer_decides_nothing() {
        let offered = [ApprovalDecision::AllowOnce, ApprovalDecision::Deny];
        let cancelled = RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled);
        assert_eq!(decision(&cancelled, &offered), None);
        let unknown = RequestPermissionResponse::new(RequestPermissionOutcome::Selected(
            SelectedPermissionOutcome::new("allowAlways"),
        ));
        assert_eq!(decision(&unknown, &offered), None);
    }
}
