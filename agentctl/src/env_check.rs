//! Whether the daemon runs with this shell's settings: it reports a hash of its `OPENAI_*`,
//! `ANTHROPIC_*` and `AGENTD_*` variables (`daemon/status`'s `envHash`, never the values), and
//! agentctl hashes its own the same way (`protocol::daemon::env_hash`).

use protocol::daemon::DaemonStatusResult;

/// The hash of this process's environment, as the daemon computes its own.
pub fn local_env_hash() -> String {
    protocol::daemon::env_hash(std::env::vars_os().map(|(name, value)| {
        (
            name.to_string_lossy().into_owned(),
            value.to_string_lossy().into_owned(),
        )
    }))
}

/// The warning to show when the daemon started with other settings than `local_hash`'s
/// environment (none from a daemon that reports no hash).
pub fn mismatch_warning(status: &DaemonStatusResult, local_hash: &str) -> Option<String> {
    if status.env_hash.is_empty() || status.env_hash == local_hash {
        return None;
    }
    Some(format!(
        "warning: agentd (pid {}) runs with other OPENAI_*, ANTHROPIC_* or AGENTD_* variables than this shell (it read its environment when it started); run `agentctl daemon restart` to use this shell's",
        status.pid
    ))
}

/// Print the mismatch warning on stderr when the daemon behind `connection` runs with other
/// settings; says nothing when its status cannot be read (the command's own request will).
pub async fn warn_if_differs(connection: &crate::client::Connection) {
    use protocol::daemon::DaemonStatusParams;
    use protocol::methods::DaemonStatus;
    if let Ok(status) = connection
        .request::<DaemonStatus>(&DaemonStatusParams {})
        .await
        && let Some(warning) = mismatch_warning(&status, &local_env_hash())
    {
        crate::warn_line!("{warning}");
    }
}
