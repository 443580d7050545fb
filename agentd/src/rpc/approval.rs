//! Handlers of `approval/list` and `approval/respond`.

use std::sync::Arc;

use jsonrpsee::types::ErrorObjectOwned;
use protocol::approval::*;
use protocol::error as codes;

use super::{RpcResult, rpc_error};
use crate::approval::{Resolution, RespondError};
use crate::server::ConnectionContext;
use crate::state::DaemonState;

impl From<RespondError> for ErrorObjectOwned {
    fn from(err: RespondError) -> Self {
        let code = match &err {
            RespondError::NotFound(_) => codes::NOT_FOUND,
            RespondError::AlreadyDecided { .. } => codes::ALREADY_DECIDED,
            RespondError::NotOffered(_) => codes::INVALID_PARAMS,
        };
        rpc_error(code, err.to_string())
    }
}

pub async fn list(
    state: Arc<DaemonState>,
    params: ListApprovalsParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<ListApprovalsResult> {
    Ok(ListApprovalsResult {
        approvals: state.approvals.list(params.session_id.as_deref()),
    })
}

pub async fn respond(
    state: Arc<DaemonState>,
    params: RespondApprovalParams,
    connection: Arc<ConnectionContext>,
) -> RpcResult<RespondApprovalResult> {
    let decided_by = format!(
        "client:{}",
        connection
            .client_name
            .get()
            .map(String::as_str)
            .unwrap_or("unknown")
    );
    let mut rule_added = None;
    if params.decision == ApprovalDecision::AllowAlways {
        // Check and write the rule before deciding, so a failure leaves the approval pending.
        let pending = state.approvals.get(&params.approval_id);
        if let Some((_, always_rule)) = pending {
            let Some(rule) = always_rule else {
                return Err(RespondError::NotOffered(
                    "allowAlways is not offered for this call (too broad to remember); use allowSession or allowOnce".to_owned(),
                )
                .into());
            };
            crate::config_edit::append_allow_rule(&state.paths.config, &rule)
                .await
                .map_err(|err| {
                    rpc_error(
                        codes::INTERNAL_ERROR,
                        format!(
                            "cannot add the rule to {}: {err:#}",
                            state.paths.config.display()
                        ),
                    )
                })?;
            // New runs read the user rules from the config loaded at startup: hand them the
            // rule too, so "always" holds before the next restart.
            state.approvals.remember_always_rule(rule.clone());
            rule_added = Some(rule);
        }
    }
    state.approvals.decide(
        &params.approval_id,
        Resolution {
            decision: params.decision,
            decided_by,
            reason: params.reason,
        },
    )?;
    Ok(RespondApprovalResult {
        approval_id: params.approval_id,
        decision: params.decision,
        rule_added,
    })
}
