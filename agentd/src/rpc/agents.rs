//! Handler of `agents/list`: the subagents a session in a directory can delegate to (the
//! catalogue its system prompt lists) and the definition files not used, found on a blocking
//! thread.

use std::sync::Arc;

use protocol::agents::*;

use super::{RpcResult, internal};
use crate::server::ConnectionContext;
use crate::state::DaemonState;

pub async fn list(
    state: Arc<DaemonState>,
    params: AgentsListParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<AgentsListResult> {
    let cwd = super::workspace_dir(&params.cwd).await?;
    let user_dir = state.paths.agents_dir.clone();
    let found =
        tokio::task::spawn_blocking(move || agentd_work::agents::discover(&cwd, Some(&user_dir)))
            .await
            .map_err(|err| internal(err.to_string()))?;
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
