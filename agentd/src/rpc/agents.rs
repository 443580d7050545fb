//! Handler of `agents/list`: the subagents a session in a directory can delegate to (the
//! catalogue its system prompt lists) and the definition files not used, found on a blocking
//! thread.

use std::path::PathBuf;
use std::sync::Arc;

use protocol::agents::*;
use protocol::error as codes;

use super::{RpcResult, internal, rpc_error};
use crate::server::ConnectionContext;
use crate::state::DaemonState;

pub async fn list(
    state: Arc<DaemonState>,
    params: AgentsListParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<AgentsListResult> {
    let cwd = PathBuf::from(&params.cwd);
    if !cwd.is_absolute() {
        return Err(rpc_error(
            codes::INVALID_PARAMS,
            format!(
                "cwd must be an absolute path, got {:?}; send the workspace directory's absolute path",
                params.cwd
            ),
        ));
    }
    let user_dir = state.paths.agents_dir.clone();
    let found = tokio::task::spawn_blocking(move || {
        let cwd = std::fs::canonicalize(&cwd)
            .ok()
            .filter(|cwd| cwd.is_dir())
            .ok_or_else(|| {
                format!(
                    "cwd {} is not a directory; send the workspace directory of the session",
                    cwd.display()
                )
            })?;
        Ok::<_, String>(crate::agents::discover(&cwd, Some(&user_dir)))
    })
    .await
    .map_err(|err| internal(err.to_string()))?
    .map_err(|message| rpc_error(codes::INVALID_PARAMS, message))?;
    Ok(AgentsListResult {
        agents: found.agents.iter().map(crate::wire::agent_info).collect(),
        problems: found
            .problems
            .iter()
            .map(|problem| AgentProblemInfo {
                path: problem.path.display().to_string(),
                reason: problem.reason.clone(),
            })
            .collect(),
    })
}
