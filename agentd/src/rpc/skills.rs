//! Handler of `skills/list`: the skills a session in a directory is offered (the catalogue its
//! system prompt would list) and what discovery skipped, found on a blocking thread.

use std::path::PathBuf;
use std::sync::Arc;

use protocol::error as codes;
use protocol::skills::*;

use super::{RpcResult, internal, rpc_error};
use crate::server::ConnectionContext;
use crate::state::DaemonState;

pub async fn list(
    state: Arc<DaemonState>,
    params: SkillsListParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<SkillsListResult> {
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
    let user_dir = state.paths.skills_dir.clone();
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
        Ok::<_, String>(crate::skills::discover(
            &cwd,
            Some(&user_dir),
            &crate::skills::SkillLimits::default(),
        ))
    })
    .await
    .map_err(|err| internal(err.to_string()))?
    .map_err(|message| rpc_error(codes::INVALID_PARAMS, message))?;
    Ok(SkillsListResult {
        skills: found.skills.iter().map(crate::wire::skill_info).collect(),
        warnings: found.warnings,
    })
}
