//! Daemon approvals and budget pauses as ACP permission requests: the options an approval
//! offers (a pause: continue to the suggested limit, or stop), and the decision an editor's
//! chosen option stands for. Never a decision the person did not pick.

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionResponse,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use protocol::approval::ApprovalDecision;
use protocol::budget::{BudgetDecision, BudgetRequest};

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

/// A budget pause as the tool call a permission request is about: its id is the pause's
/// (`bud_…`), its title the pause's message, its raw input the request.
pub fn budget_tool_call(request: &BudgetRequest) -> ToolCallUpdate {
    let fields = ToolCallUpdateFields::new()
        .kind(ToolKind::Other)
        .title(crate::render::one_line(&request.message))
        .raw_input(serde_json::to_value(request).ok());
    ToolCallUpdate::new(request.request_id.clone(), fields)
}

/// A budget pause's two options: continue to the suggested limit (allow_once), or stop the
/// run (reject_once). The option id is the decision's wire name.
pub fn budget_options(request: &BudgetRequest) -> Vec<PermissionOption> {
    let limit = crate::approval_desk::budget_amount(request.budget, request.suggested_limit);
    vec![
        PermissionOption::new(
            budget_option_id(BudgetDecision::Continue),
            format!("Continue to {limit}"),
            PermissionOptionKind::AllowOnce,
        ),
        PermissionOption::new(
            budget_option_id(BudgetDecision::Stop),
            "Stop the run",
            PermissionOptionKind::RejectOnce,
        ),
    ]
}

fn budget_option_id(decision: BudgetDecision) -> String {
    serde_json::to_value(decision)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The answer an editor's response to a budget pause stands for: `None` when it cancelled
/// the request (its prompt turn was cancelled, which decides the pause) or picked an option
/// that is not one of the two.
pub fn budget_decision(response: &RequestPermissionResponse) -> Option<BudgetDecision> {
    let RequestPermissionOutcome::Selected(selected) = &response.outcome else {
        return None;
    };
    [BudgetDecision::Continue, BudgetDecision::Stop]
        .into_iter()
        .find(|decision| budget_option_id(*decision) == selected.option_id.0.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::SelectedPermissionOutcome;
    use protocol::budget::BudgetKind;

    #[test]
    fn a_budget_pause_offers_continue_to_the_suggested_limit_or_stop() {
        let request = BudgetRequest {
            request_id: "bud_1".into(),
            budget: BudgetKind::Tokens,
            used: 40.0,
            limit: 20.0,
            suggested_limit: 60.0,
            message: "this run has used 40 tokens".into(),
            expires_at: "t".into(),
            task_id: None,
            agent_type: None,
            parent_run_id: None,
        };
        let options = budget_options(&request);
        let shown: Vec<_> = options
            .iter()
            .map(|option| {
                (
                    option.option_id.0.to_string(),
                    option.name.clone(),
                    serde_json::to_value(option.kind).unwrap(),
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                (
                    "continue".to_owned(),
                    "Continue to 60 tokens".to_owned(),
                    serde_json::json!("allow_once")
                ),
                (
                    "stop".to_owned(),
                    "Stop the run".to_owned(),
                    serde_json::json!("reject_once")
                ),
            ]
        );
        let chose = |id: &str| {
            RequestPermissionResponse::new(RequestPermissionOutcome::Selected(
                SelectedPermissionOutcome::new(id.to_owned()),
            ))
        };
        assert_eq!(
            budget_decision(&chose("continue")),
            Some(BudgetDecision::Continue)
        );
        assert_eq!(budget_decision(&chose("stop")), Some(BudgetDecision::Stop));
        assert_eq!(budget_decision(&chose("allowOnce")), None);
        let cancelled = RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled);
        assert_eq!(budget_decision(&cancelled), None);
        let call = budget_tool_call(&request);
        assert_eq!(call.tool_call_id.0.as_ref(), "bud_1");
        assert_eq!(
            call.fields.title.as_deref(),
            Some("this run has used 40 tokens")
        );
    }

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
