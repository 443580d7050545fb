//! Handlers of `budget/list` and `budget/respond`: the runs paused at a budget, and a client's
//! answer to one.

use std::sync::Arc;

use protocol::Method;
use protocol::budget::*;
use protocol::error as codes;
use protocol::methods::BudgetList;

use super::{RpcResult, rpc_error_suggesting};
use crate::server::ConnectionContext;
use crate::state::DaemonState;
use agentd_agent::budget_pause::BudgetRespondError;

pub async fn list(
    state: Arc<DaemonState>,
    params: BudgetListParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<BudgetListResult> {
    if let Some(session_id) = &params.session_id {
        crate::session::check_session_id(session_id)?;
    }
    Ok(BudgetListResult {
        requests: state.sessions.budgets().list(params.session_id.as_deref()),
    })
}

pub async fn respond(
    state: Arc<DaemonState>,
    params: BudgetRespondParams,
    connection: Arc<ConnectionContext>,
) -> RpcResult<BudgetRespondResult> {
    let decided_by = super::approval::decided_by(&connection, params.policy.is_some());
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
            // An id that names no pending pause: listing them shows which wait.
            let list = Some(BudgetList::NAME);
            let (code, suggest) = match &err {
                BudgetRespondError::NotFound(_) => (codes::NOT_FOUND, list),
                BudgetRespondError::InvalidId(_) => (codes::INVALID_PARAMS, list),
                BudgetRespondError::AlreadyDecided { .. } => (codes::ALREADY_DECIDED, None),
                BudgetRespondError::InvalidLimit(_) => (codes::INVALID_PARAMS, None),
            };
            rpc_error_suggesting(code, err.to_string(), suggest)
        })?;
    Ok(BudgetRespondResult {
        request_id: params.request_id,
        decision: resolution.decision,
        new_limit: resolution.new_limit,
    })
}
