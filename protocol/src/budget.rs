//! Budgets that pause a run and ask (`budgetExceeded`, `budget/list`, `budget/respond`,
//! `budgetResolved`): which budget was reached, the answers a client may give, and the methods'
//! params and results. Added in 1.3.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Prefix of every budget request id.
pub const BUDGET_REQUEST_ID_PREFIX: &str = "bud_";

/// Which budget a run reached. Each counts per run: a new prompt starts from nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum BudgetKind {
    /// US dollars the run's model calls cost (needs `[providers.NAME.prices]`):
    /// `[sessions] max_cost_usd`, a definition's `maxBudgetUsd`.
    CostUsd,
    /// Tokens of the run's model calls (input plus output): `[sessions] max_tokens`, a
    /// definition's `maxTokens`.
    Tokens,
    /// Seconds the run has been working (time paused on a budget not counted):
    /// `[sessions] max_run_secs`.
    RunSecs,
}

impl BudgetKind {
    /// Its wire name (`costUsd`, `tokens`, `runSecs`).
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetKind::CostUsd => "costUsd",
            BudgetKind::Tokens => "tokens",
            BudgetKind::RunSecs => "runSecs",
        }
    }
}

/// An answer to a budget pause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum BudgetDecision {
    /// Go on with a higher limit for this run (`newLimit`, else `suggestedLimit`).
    Continue,
    /// End the run now, with status `budget`.
    Stop,
}

/// A run paused at a budget, as `budgetExceeded` announces it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BudgetRequest {
    /// `bud_…`: what `budget/respond` answers.
    pub request_id: String,
    pub budget: BudgetKind,
    /// What the run has used of it (dollars, tokens or seconds).
    pub used: f64,
    /// The limit it reached.
    pub limit: f64,
    /// The limit `continue` sets when the answer names none: another budget as big, from now.
    pub suggested_limit: f64,
    /// Which budget, where it is set, and how to answer.
    pub message: String,
    /// When it stops by itself (as `budget`, decided by `timeout`): the approval timeout.
    pub expires_at: String,
    /// Reached by a subagent: its task (the pause also reaches the parent session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Reached by a subagent: its agent type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// Reached by a subagent the `task` tool started: the parent's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
}

/// A run paused at a budget now, as `budget/list` lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingBudget {
    /// The paused run's session (a subagent's: the child session).
    pub session_id: String,
    pub run_id: String,
    /// When the run paused, RFC 3339.
    pub requested_at: String,
    /// What `budgetExceeded` announced.
    pub request: BudgetRequest,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BudgetListParams {
    /// Only this session's pauses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BudgetListResult {
    /// Oldest first.
    pub requests: Vec<PendingBudget>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BudgetRespondParams {
    pub request_id: String,
    pub decision: BudgetDecision,
    /// For `continue`: the run's new limit, above what it has used (same unit as `used`).
    /// Absent: the request's `suggestedLimit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_limit: Option<f64>,
    /// Set when a standing policy of the client answered, not a person (`--approve never`):
    /// recorded as `decidedBy: "policy:<client>"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BudgetRespondResult {
    pub request_id: String,
    pub decision: BudgetDecision,
    /// For `continue`: the limit the run goes on with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_limit: Option<f64>,
}

/// Whether `id` is a well-formed budget request id: `bud_` then 1 to 64 ASCII letters,
/// digits, `_` or `-`.
pub fn is_budget_request_id(id: &str) -> bool {
    let Some(body) = id.strip_prefix(BUDGET_REQUEST_ID_PREFIX) else {
        return false;
    };
    !body.is_empty()
        && body.len() <= crate::id::MAX_ID_BODY_CHARS
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
