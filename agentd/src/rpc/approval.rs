//! Handlers of `approval/list` and `approval/respond`.

use std::sync::Arc;

use jsonrpsee::types::ErrorObjectOwned;
use protocol::approval::*;
use protocol::error as codes;

use super::{RpcResult, rpc_error_suggesting};
use crate::server::ConnectionContext;
use crate::state::DaemonState;
use agentd_policy::approval::{Resolution, RespondError};

/// The error a failed `approval/respond` answers with.
fn respond_error(err: RespondError) -> ErrorObjectOwned {
    let code = match &err {
        RespondError::NotFound(_) => codes::NOT_FOUND,
        RespondError::AlreadyDecided { .. } => codes::ALREADY_DECIDED,
        RespondError::NotOffered(_) | RespondError::InvalidId(_) => codes::INVALID_PARAMS,
        RespondError::ConfigEdit(_) => codes::INTERNAL_ERROR,
    };
    rpc_error_suggesting(code, err.to_string(), err.suggested_method())
}

/// Who decided an answer of `connection`: `client:<name>`, or `policy:<name>` when a standing
/// policy of the client answered (`policy` in the params), not a person; the model must not
/// read a policy's no as the user's. Budget pauses record it the same way.
pub(super) fn decided_by(connection: &ConnectionContext, by_policy: bool) -> String {
    let client = connection
        .client_name
        .get()
        .map(String::as_str)
        .unwrap_or("unknown");
    if by_policy {
        format!("policy:{client}")
    } else {
        format!("client:{client}")
    }
}

pub async fn list(
    state: Arc<DaemonState>,
    params: ApprovalListParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<ApprovalListResult> {
    if let Some(session_id) = &params.session_id {
        crate::session::check_session_id(session_id)?;
    }
    Ok(ApprovalListResult {
        approvals: state.approvals.list(params.session_id.as_deref()),
    })
}

pub async fn respond(
    state: Arc<DaemonState>,
    params: ApprovalRespondParams,
    connection: Arc<ConnectionContext>,
) -> RpcResult<ApprovalRespondResult> {
    let decided_by = decided_by(&connection, params.policy.is_some());
    // Claim, rule and resolution are the broker's flow: see `ApprovalBroker::respond`.
    let rule_added = state
        .approvals
        .respond(
            &params.approval_id,
            Resolution {
                decision: params.decision,
                decided_by,
                reason: params.reason,
            },
        )
        .await
        .map_err(respond_error)?;
    Ok(ApprovalRespondResult {
        approval_id: params.approval_id,
        decision: params.decision,
        rule_added,
    })
}
