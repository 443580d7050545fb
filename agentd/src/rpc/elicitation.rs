//! Handler of `elicitation/respond`: a client's answer to an MCP server's question.

use std::sync::Arc;

use protocol::elicitation::*;
use protocol::error as codes;

use super::{RpcResult, rpc_error_suggesting};
use crate::server::ConnectionContext;
use crate::state::DaemonState;
use agentd_agent::elicitation::ElicitationRespondError;

pub async fn respond(
    state: Arc<DaemonState>,
    params: ElicitationRespondParams,
    connection: Arc<ConnectionContext>,
) -> RpcResult<ElicitationRespondResult> {
    let decided_by = super::approval::decided_by(&connection, false);
    let answer = state
        .sessions
        .elicitations()
        .respond(
            &params.elicitation_id,
            params.action,
            params.content,
            decided_by,
        )
        .map_err(|err| {
            let code = match &err {
                ElicitationRespondError::NotFound(_) => codes::NOT_FOUND,
                ElicitationRespondError::AlreadyDecided { .. } => codes::ALREADY_DECIDED,
                ElicitationRespondError::InvalidId(_) | ElicitationRespondError::BadAnswers(_) => {
                    codes::INVALID_PARAMS
                }
            };
            rpc_error_suggesting(code, err.to_string(), None)
        })?;
    Ok(ElicitationRespondResult {
        elicitation_id: params.elicitation_id,
        action: answer.action,
        content: answer.content,
    })
}
