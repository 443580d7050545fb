//! What the desk asks a person about: a tool call's approval, or a run paused at a budget
//! (`budgetExceeded`: `c` continues with the suggested limit, `s` stops). The words of a
//! budget pause live here; an approval's are `approval_view`'s and `approve_policy`'s.

use protocol::approval::PendingApproval;
use protocol::budget::{BudgetDecision, BudgetKind, BudgetRequest};

use crate::approval_view::prompt_lines;
use crate::approve_policy::question;

/// One question the desk may put.
// The variants are of like size now that a question carries its form.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Ask {
    Approval(PendingApproval),
    Budget {
        run_id: String,
        request: BudgetRequest,
    },
    /// An MCP server's question, asked as a form (`approval_desk::form`).
    Question {
        run_id: String,
        request: protocol::elicitation::ElicitationRequest,
        form: super::form::Form,
    },
}

impl Ask {
    /// The approval or budget request id its answer names.
    pub(super) fn id(&self) -> &str {
        match self {
            Ask::Approval(approval) => &approval.approval_id,
            Ask::Budget { request, .. } => &request.request_id,
            Ask::Question { request, .. } => &request.elicitation_id,
        }
    }

    pub(super) fn run_id(&self) -> &str {
        match self {
            Ask::Approval(approval) => &approval.run_id,
            Ask::Budget { run_id, .. } | Ask::Question { run_id, .. } => run_id,
        }
    }

    /// The lines above the question, and the question.
    pub(super) fn prompt(&self) -> (String, String) {
        match self {
            Ask::Approval(approval) => (
                prompt_lines(approval).join("\n"),
                question(&approval.options),
            ),
            Ask::Question { request, form, .. } => (
                format!(
                    "MCP server {} asks: {}",
                    request.server,
                    crate::render::one_line(&request.message)
                ),
                form.question(),
            ),
            Ask::Budget { request, .. } => (
                format!(
                    "budget reached{}: {}",
                    asked_by(request),
                    crate::render::one_line(&request.message)
                ),
                format!(
                    "go on? [c]ontinue to {} · [s]top ",
                    amount(request.budget, request.suggested_limit)
                ),
            ),
        }
    }
}

/// A budget pause's answer for `key` (either case): `c` continue, `s` stop.
pub(super) fn budget_key(key: u8) -> Option<BudgetDecision> {
    match key.to_ascii_lowercase() {
        b'c' => Some(BudgetDecision::Continue),
        b's' => Some(BudgetDecision::Stop),
        _ => None,
    }
}

/// The line for a server's question left for another client.
pub(super) fn question_wait_line(request: &protocol::elicitation::ElicitationRequest) -> String {
    format!(
        "MCP server {} asks: {} (question {}: answer it from a client that answers approvals, e.g. `agentctl attach`)",
        request.server,
        crate::render::one_line(&request.message),
        crate::ids::short(&request.elicitation_id),
    )
}

/// The line for a budget pause left for another client.
pub(super) fn budget_wait_line(request: &BudgetRequest) -> String {
    format!(
        "budget {id} waits{}: {}; answer with `agentctl approve {id}` (continue; `--limit N` for another limit) or `agentctl deny {id}` (stop)",
        asked_by(request),
        crate::render::one_line(&request.message),
        id = crate::ids::short(&request.request_id),
    )
}

/// A budget's resolution in words: "continued to 2000 tokens by client:agentctl".
pub(super) fn budget_resolved_line(
    request_id: &str,
    kind: Option<BudgetKind>,
    decision: BudgetDecision,
    new_limit: Option<f64>,
    decided_by: &str,
) -> String {
    let id = crate::ids::short(request_id);
    match (decision, new_limit) {
        (BudgetDecision::Continue, Some(limit)) => {
            let limit = match kind {
                Some(kind) => amount(kind, limit),
                None => format!("{limit}"),
            };
            format!("budget {id}: continued to {limit} by {decided_by}")
        }
        _ => format!("budget {id}: stopped by {decided_by}"),
    }
}

/// `$0.1000`, `2000 tokens`, `60 s`.
pub(crate) fn amount(kind: BudgetKind, value: f64) -> String {
    match kind {
        BudgetKind::CostUsd => format!("${value:.4}"),
        BudgetKind::Tokens => format!("{value:.0} tokens"),
        BudgetKind::RunSecs => format!("{value:.0} s"),
    }
}

/// ` (subagent TYPE, task ID)` for a child task's pause, else nothing.
fn asked_by(request: &BudgetRequest) -> String {
    match (&request.agent_type, &request.task_id) {
        (Some(agent), Some(task)) => format!(" (subagent {agent}, task {task})"),
        (None, Some(task)) => format!(" (task {task})"),
        _ => String::new(),
    }
}
