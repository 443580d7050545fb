//! Whether the daemon runs with this shell's settings: it reports a hash of its `OPENAI_*`,
//! `ANTHROPIC_*` and `AGENTD_*` variables (`daemon/status`'s `envHash`, never the values), and
//! agentctl hashes its own the same way (`protocol::daemon::env_hash`).

use protocol::daemon::DaemonStatusResult;

use crate::client::{ClientError, Connection};
use crate::output::CommandError;

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

/// Whether `error` is the daemon's answer that no provider is configured (`session/create`).
pub fn is_no_provider(error: &ClientError) -> bool {
    matches!(error, ClientError::Rpc { code, message, .. }
        if *code == protocol::error::CONFIG_ERROR && message.starts_with("no provider configured"))
}

/// The names of this shell's variables the daemon reads at start (`OPENAI_*`, `ANTHROPIC_*`,
/// `AGENTD_*`, set and not empty), sorted; never their values.
pub fn local_setting_names() -> Vec<String> {
    let mut names: Vec<String> = std::env::vars_os()
        .filter(|(_, value)| !value.is_empty())
        .filter_map(|(name, _)| name.into_string().ok())
        .filter(|name| protocol::daemon::is_daemon_env_var(name))
        .collect();
    names.sort();
    names
}

/// What to do about a daemon that found no provider while this shell has settings it lacks.
#[derive(Debug, PartialEq, Eq)]
pub enum ProviderAdvice {
    /// Nothing to offer: the daemon has this shell's settings, or the shell has none.
    None,
    /// A service manager starts the daemon, with its own environment: the text says where to
    /// put the variables.
    ServiceEnvironment(String),
    /// agentctl can restart the daemon from this shell; the text says so off a terminal.
    Restart { question: String, hint: String },
}

/// The advice for a daemon with `status` when this shell has `names` set (its hash `local`).
pub fn provider_advice(
    status: &DaemonStatusResult,
    names: &[String],
    local: &str,
) -> ProviderAdvice {
    if names.is_empty() || status.env_hash.is_empty() || status.env_hash == local {
        return ProviderAdvice::None;
    }
    let listed = names.join(", ");
    if status.service_manager.as_deref() == Some("systemd") {
        let unit = status.service_unit.as_deref().unwrap_or("agentd.service");
        return ProviderAdvice::ServiceEnvironment(format!(
            "agentd (pid {}) runs under systemd ({unit}), which does not see this shell's {listed}: \
             put them in the unit's environment (`systemctl --user edit {unit}`, see the README's \
             \"API keys for a systemd-started daemon\"), then `agentctl daemon restart`",
            status.pid
        ));
    }
    ProviderAdvice::Restart {
        question: format!(
            "agentd (pid {}) started without this shell's {listed} (it reads them only when it \
             starts). Restart it with them?",
            status.pid
        ),
        hint: format!(
            "agentd (pid {}) started without this shell's {listed}, which it reads only when it \
             starts: run `agentctl daemon restart` in this shell to start it with them, then run \
             this again",
            status.pid
        ),
    }
}

/// The advice for the daemon behind `connection` and this shell (none when its status cannot
/// be read).
pub async fn advice(connection: &Connection) -> ProviderAdvice {
    use protocol::daemon::DaemonStatusParams;
    use protocol::methods::DaemonStatus;
    match connection
        .request::<DaemonStatus>(&DaemonStatusParams {})
        .await
    {
        Ok(status) => provider_advice(&status, &local_setting_names(), &local_env_hash()),
        Err(_) => ProviderAdvice::None,
    }
}

/// A run found no provider: when this shell has settings the daemon lacks, offers on a terminal
/// (`interactive`) to restart the daemon with them and restarts it on yes (true: the caller
/// connects again and retries), else prints what to run.
pub async fn offer_restart(
    ctx: &crate::Context,
    connection: &Connection,
    interactive: bool,
) -> Result<bool, CommandError> {
    match advice(connection).await {
        ProviderAdvice::None => Ok(false),
        ProviderAdvice::ServiceEnvironment(text) => {
            crate::warn_line!("{text}");
            Ok(false)
        }
        ProviderAdvice::Restart { question, hint } => {
            if !interactive {
                crate::warn_line!("{hint}");
                return Ok(false);
            }
            if !crate::terminal::ask_yes(&question).await {
                return Ok(false);
            }
            crate::commands::restart::restart(ctx).await?;
            Ok(true)
        }
    }
}
