//! `daemon/reload` and what `daemon/status` says of the configuration: when the one in use
//! was loaded, how config.toml stands against it, what waits for a restart.

use std::sync::Arc;

use protocol::daemon::{
    ConfigFileState, ConfigReloadOutcome, DaemonReloadParams, DaemonReloadResult,
};

use super::{RpcResult, refuse_if_stopping};
use crate::config::live::{FileState, ReloadOutcome};
use crate::server::ConnectionContext;
use crate::session::config_reload::ReloadTrigger;
use crate::state::DaemonState;

/// `daemon/reload`: read config.toml now and say what became of it.
pub async fn reload(
    state: Arc<DaemonState>,
    _params: DaemonReloadParams,
    _connection: Arc<ConnectionContext>,
) -> RpcResult<DaemonReloadResult> {
    refuse_if_stopping(&state)?;
    let reload = state.sessions.reload_config(ReloadTrigger::Request).await;
    let outcome = match reload.outcome {
        ReloadOutcome::Reloaded => ConfigReloadOutcome::Reloaded,
        ReloadOutcome::Unchanged => ConfigReloadOutcome::Unchanged,
        ReloadOutcome::Invalid => ConfigReloadOutcome::Invalid,
    };
    Ok(DaemonReloadResult {
        outcome,
        error: reload.error,
        needs_restart: reload.needs_restart,
        config_loaded_at: loaded_at(&state),
    })
}

/// The configuration's part of `daemon/status`.
pub struct ConfigStatus {
    pub loaded_at: String,
    pub state: ConfigFileState,
    pub needs_restart: Vec<String>,
}

/// What `daemon/status` says of the configuration now (one stat of the file).
pub async fn status(state: &DaemonState) -> ConfigStatus {
    let live = state.sessions.live_config();
    let file_state = match live.file_state().await {
        FileState::Current => ConfigFileState::Current,
        FileState::Changed => ConfigFileState::Changed,
        FileState::Invalid => ConfigFileState::Invalid,
    };
    ConfigStatus {
        loaded_at: loaded_at(state),
        state: file_state,
        needs_restart: live.state().needs_restart.clone(),
    }
}

/// When the configuration in use was loaded (RFC 3339).
fn loaded_at(state: &DaemonState) -> String {
    let loaded_at = state.sessions.live_config().state().loaded_at;
    humantime::format_rfc3339_seconds(loaded_at).to_string()
}

/// `mcp/restart` restarts with the current definition: an edit the watch has not read yet is
/// read first.
pub async fn read_pending_edit(state: &DaemonState) {
    if state.sessions.live_config().file_state().await == FileState::Changed {
        state.sessions.reload_config(ReloadTrigger::Request).await;
    }
}
