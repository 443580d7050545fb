//! `agentctl status`, `agentctl models` and `agentctl daemon start|stop|status|reload`
//! (`restart` and `upgrade` are `commands::restart`).

use std::time::{Duration, Instant};

use protocol::daemon::{
    ConfigFileState, ConfigReloadOutcome, DaemonReloadParams, DaemonShutdownParams,
    DaemonStatusParams, DaemonStatusResult,
};
use protocol::methods::{DaemonReload, DaemonShutdown, DaemonStatus};

use crate::Context;
use crate::client::{ClientError, Connection};
use crate::output::{CommandError, EXIT_UNREACHABLE, print_json};

/// How long `daemon stop` waits for the daemon to go away.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// `agentctl status`: the daemon's status, starting it if needed.
pub async fn status(ctx: &Context) -> Result<(), CommandError> {
    let connection = ctx.connect().await?;
    let status = connection
        .request::<DaemonStatus>(&DaemonStatusParams {})
        .await?;
    if let Some(warning) =
        crate::env_check::mismatch_warning(&status, &crate::env_check::local_env_hash())
    {
        crate::warn_line!("{warning}");
    }
    if ctx.json {
        print_json(&status);
    } else {
        print_status(&status);
    }
    Ok(())
}

/// `agentctl models`: the configured providers, the default marked.
pub async fn models(ctx: &Context) -> Result<(), CommandError> {
    let connection = ctx.connect().await?;
    let status = connection
        .request::<DaemonStatus>(&DaemonStatusParams {})
        .await?;
    if ctx.json {
        print_json(&serde_json::json!({
            "providers": status.providers,
            "defaultProvider": status.default_provider,
        }));
        return Ok(());
    }
    if status.providers.is_empty() {
        match &status.config_error {
            Some(error) => crate::say!("no providers: the config file is unusable: {error}"),
            None => crate::say!(
                "no providers configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY, or add [providers.NAME] to {}",
                status.config_path
            ),
        }
        return Ok(());
    }
    crate::say_raw!("{}", format_models(&status));
    crate::say!(
        "pick one with `agentctl run --model PROVIDER:MODEL` (any model the provider serves)"
    );
    Ok(())
}

/// The `models` table: default mark, name, kind, model, base URL, key.
pub fn format_models(status: &DaemonStatusResult) -> String {
    let header = ["", "PROVIDER", "KIND", "MODEL", "BASE URL", "KEY"];
    let rows: Vec<[String; 6]> = status
        .providers
        .iter()
        .map(|provider| {
            let default = status.default_provider.as_deref() == Some(provider.name.as_str());
            [
                if default { "*" } else { "" }.to_owned(),
                provider.name.clone(),
                provider.kind.clone(),
                provider.model.clone(),
                provider.base_url.clone(),
                key_words(provider),
            ]
        })
        .collect();
    crate::table::format(header, &rows)
}

/// Where a provider's key comes from, and whether it is there; never the key.
fn key_words(provider: &protocol::daemon::ProviderInfo) -> String {
    match (&provider.api_key_env, provider.has_key) {
        (Some(var), true) => format!("${var}"),
        (Some(var), false) => format!("${var} NOT SET"),
        (None, true) => "in config".to_owned(),
        (None, false) => "none".to_owned(),
    }
}

/// `agentctl daemon start`: idempotent.
pub async fn start(ctx: &Context) -> Result<(), CommandError> {
    let already_running = Connection::connect(&ctx.socket, "agentctl").await.is_ok();
    if !already_running {
        crate::autostart::start_daemon(&ctx.socket).await?;
    }
    let connection = Connection::connect(&ctx.socket, "agentctl").await?;
    let status = connection
        .request::<DaemonStatus>(&DaemonStatusParams {})
        .await?;
    if ctx.json {
        print_json(&serde_json::json!({
            "running": true,
            "started": !already_running,
            "pid": status.pid,
            "socketPath": status.socket_path,
        }));
    } else if already_running {
        crate::say!(
            "agentd is already running (pid {}) on {}",
            status.pid,
            status.socket_path
        );
    } else {
        crate::say!(
            "agentd started (pid {}) on {}",
            status.pid,
            status.socket_path
        );
    }
    Ok(())
}

/// `agentctl daemon stop`: graceful; idempotent; waits until the daemon has gone.
pub async fn stop(ctx: &Context) -> Result<(), CommandError> {
    let connection = match Connection::connect(&ctx.socket, "agentctl").await {
        Ok(connection) => connection,
        Err(ClientError::Unreachable { .. }) => {
            if ctx.json {
                print_json(&serde_json::json!({ "running": false, "stopped": false }));
            } else {
                crate::say!("agentd is not running on {}", ctx.socket.display());
            }
            return Ok(());
        }
        Err(err) => return Err(err.into()),
    };
    let status = connection
        .request::<DaemonStatus>(&DaemonStatusParams {})
        .await?;
    connection
        .request::<DaemonShutdown>(&DaemonShutdownParams {})
        .await?;
    // The daemon closes every connection when it is done draining.
    if tokio::time::timeout(STOP_TIMEOUT, connection.closed())
        .await
        .is_err()
    {
        return Err(CommandError::failed(format!(
            "agentd (pid {}) did not stop within {}s; see its log",
            status.pid,
            STOP_TIMEOUT.as_secs()
        )));
    }
    wait_until_gone(&ctx.socket).await;
    if ctx.json {
        print_json(&serde_json::json!({ "running": false, "stopped": true, "pid": status.pid }));
    } else {
        crate::say!("agentd (pid {}) stopped", status.pid);
    }
    Ok(())
}

/// `agentctl daemon status`: never starts the daemon; exit 3 when it is not running.
pub async fn daemon_status(ctx: &Context) -> Result<(), CommandError> {
    let connection = match Connection::connect(&ctx.socket, "agentctl").await {
        Ok(connection) => connection,
        Err(ClientError::Unreachable { .. }) => {
            return Err(CommandError {
                code: EXIT_UNREACHABLE,
                message: format!(
                    "agentd is not running (nothing answers on {}); start it with `agentctl daemon start`",
                    ctx.socket.display()
                ),
            });
        }
        Err(err) => return Err(err.into()),
    };
    let status = connection
        .request::<DaemonStatus>(&DaemonStatusParams {})
        .await?;
    if ctx.json {
        print_json(&status);
    } else {
        print_status(&status);
    }
    Ok(())
}

/// `agentctl daemon reload`: the daemon reads config.toml now; exit 1 when it is invalid.
pub async fn reload(ctx: &Context) -> Result<(), CommandError> {
    let connection = ctx.connect().await?;
    let reload = connection
        .request::<DaemonReload>(&DaemonReloadParams {})
        .await?;
    if ctx.json {
        print_json(&reload);
    }
    let waiting = match reload.needs_restart.is_empty() {
        true => String::new(),
        false => format!(
            "; these apply only after `agentctl daemon restart`: {}",
            reload.needs_restart.join(", ")
        ),
    };
    match reload.outcome {
        ConfigReloadOutcome::Reloaded if !ctx.json => {
            crate::say!("configuration reloaded: new runs use it{waiting}");
        }
        ConfigReloadOutcome::Unchanged if !ctx.json => {
            crate::say!("configuration unchanged{waiting}");
        }
        ConfigReloadOutcome::Invalid => {
            return Err(CommandError::failed(format!(
                "the configuration is invalid and was not loaded; the previous one stays in use: {}",
                reload.error.unwrap_or_default()
            )));
        }
        _ => {}
    }
    Ok(())
}

/// The config line of `status`: the file and how it stands against what is loaded.
pub fn config_words(status: &DaemonStatusResult) -> String {
    let since = status
        .config_loaded_at
        .as_deref()
        .map(|at| format!(", loaded {at}"))
        .unwrap_or_default();
    match (status.config_state, status.config_loaded) {
        // A daemon before 1.3 says only whether it loaded.
        (None, _) if status.config_error.is_some() => "unusable".to_owned(),
        (None, true) => "loaded".to_owned(),
        (None, false) => "not found: the environment alone configures agentd".to_owned(),
        (Some(ConfigFileState::Invalid), false) => {
            "invalid: not loaded; methods that need a configuration fail until it is fixed"
                .to_owned()
        }
        (Some(ConfigFileState::Invalid), true) => {
            format!("invalid: the last valid configuration stays in use{since}")
        }
        (Some(ConfigFileState::Changed), _) if !status.needs_restart.is_empty() => format!(
            "changed: {} apply only after `agentctl daemon restart`{since}",
            status.needs_restart.join(", ")
        ),
        (Some(ConfigFileState::Changed), _) => {
            format!("changed on disk, being reloaded{since}")
        }
        (Some(ConfigFileState::Current), true) => format!("current{since}"),
        (Some(ConfigFileState::Current), false) => {
            "not found: the environment alone configures agentd".to_owned()
        }
    }
}

/// After the connection closed, the socket file goes once the daemon finishes exiting.
pub(super) async fn wait_until_gone(socket: &std::path::Path) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while socket.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn print_status(status: &DaemonStatusResult) {
    crate::say!(
        "agentd {} (protocol {})",
        status.version,
        status.protocol_version
    );
    crate::say!("  pid          {}", status.pid);
    crate::say!(
        "  uptime       {}s (since {})",
        status.uptime_secs,
        status.started_at
    );
    crate::say!("  socket       {}", status.socket_path);
    crate::say!("  state        {}", status.state_dir);
    crate::say!(
        "  config       {} ({})",
        status.config_path,
        config_words(status)
    );
    if let Some(err) = &status.config_error {
        crate::say!("  config error {err}");
    }
    let default = status
        .default_provider
        .as_deref()
        .and_then(|name| status.providers.iter().find(|p| p.name == name));
    match default {
        Some(provider) => crate::say!(
            "  provider     {} ({}), model {}, {}",
            provider.name,
            provider.kind,
            provider.model,
            provider.base_url
        ),
        None if status.providers.is_empty() => crate::say!("  provider     none configured"),
        None => crate::say!(
            "  provider     no default among {} (see `agentctl models`)",
            status.providers.len()
        ),
    }
    crate::say!(
        "  sessions     {} ({} loaded, {} running)",
        status.counts.sessions,
        status.counts.loaded_sessions,
        status.counts.active_runs
    );
    crate::say!("  tasks        {}", status.counts.tasks);
    crate::say!("  mcp servers  {}", status.counts.mcp_servers);
    crate::say!("  clients      {}", status.connected_clients);
    if let Some(unit) = &status.service_unit {
        crate::say!("  service      systemd ({unit})");
    }
    if !status.sandbox.is_empty() {
        crate::say!("  sandbox      {}", status.sandbox);
    }
    if !status.checkpoints.is_empty() {
        crate::say!("  checkpoints  {}", status.checkpoints);
    }
    if status.panics > 0 {
        crate::say!(
            "  panics       {} (bugs: see the daemon log in {} and please report them)",
            status.panics,
            status.state_dir
        );
    }
}
