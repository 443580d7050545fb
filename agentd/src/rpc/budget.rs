//! Handler of `budget/respond`: a client's answer to a run paused at a budget.

use std::sync::Arc;

use protocol::budget::*;
use protocol::error as codes;

use super::{RpcResult, rpc_error};
use crate::server::ConnectionContext;
use crate::state::DaemonState;
use agentd_agent::budget_pause::BudgetRespondError;

pub async fn respond(
    state: Arc<DaemonState>,
    params: BudgetRespondParams,
    connection: Arc<ConnectionContext>,
) -> RpcResult<BudgetRespondResult> {
    let client = connection
        .client_name
        .get()
        .map(String::as_str)
        .unwrap_or("unknown");
    // A client's standing policy is not a person (as for approvals).
    let decided_by = match params.policy {
        Some(_) => format!("policy:{client}"),
        None => format!("client:{client}"),
    };
    let resolution = state
        .sessions
        .budgets()
        .respond(
            &params.request_id,
            params.decision,
            params.new_limit,
            decided_by,
        )
        .map_err(|err| {
            let code = match &err {
                BudgetRespondError::NotFound(_) => codes::NOT_FOUND,
                BudgetRespondError::AlreadyDecided { .. } => codes::ALREADY_DECIDED,
                BudgetRespondError::InvalidId(_) | BudgetRespondError::InvalidLimit(_) => {
                    codes::INVALID_PARAMS
                }
            };
            rpc_error(code, err.to_string())
        })?;
    Ok(BudgetRespondResult {
        request_id: params.request_id,
        decision: resolution.decision,
        new_limit: resolution.new_limit,
    })
}
