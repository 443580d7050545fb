//! Handler of `skills/list`: the skills a session in a directory is offered (the catalogue its
//! system prompt would list) and what discovery skipped, found on a blocking thread.

use std::sync::Arc;

use protocol::skills::*;

use super::{RpcResult, internal};
use crate::server::ConnectionContext;
use crate::state::DaemonState;

pub async fn list(
    state: Arc<DaemonState>,
    params: SkillsListParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<SkillsListResult> {
    let cwd = super::workspace_dir(&params.cwd).await?;
    let user_dir = state.paths.skills_dir.clone();
    let found = tokio::task::spawn_blocking(move || {
        agentd_knowledge::skills::discover(
            &cwd,
            Some(&user_dir),
            &agentd_knowledge::skills::SkillLimits::default(),
        )
    })
    .await
    .map_err(|err| internal(err.to_string()))?;
    Ok(SkillsListResult {
        skills: found.skills.iter().map(crate::wire::skill_info).collect(),
        warnings: found.warnings,
    })
}
