//! `agentctl status` and `agentctl daemon start|stop|status`.

use std::time::{Duration, Instant};

use protocol::daemon::{DaemonShutdownParams, DaemonStatusParams, DaemonStatusResult};
use protocol::methods::{DaemonShutdown, DaemonStatus};

use crate::Context;
use crate::client::{ClientError, Connection};
use crate::output::{CommandError, print_json};

/// How long `daemon stop` waits for the daemon to go away.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// `agentctl status`: the daemon's status, starting it if needed.
pub async fn status(ctx: &Context) -> Result<(), CommandError> {
    let connection = ctx.connect().await?;
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
    let connection = Connection::connect(&ctx.socket, "agentctl").await?;
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

/// After the connection closed, the socket file goes once the daemon finishes exiting.
async fn wait_until_gone(socket: &std::path::Path) {
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
    crate::say!("  config       {}", status.config_path);
    if let Some(err) = &status.config_error {
        crate::say!("  config error {err}");
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
    if !status.sandbox.is_empty() {
        crate::say!("  sandbox      {}", status.sandbox);
    }
    if status.panics > 0 {
        crate::say!(
            "  panics       {} (bugs: see the daemon log in {} and please report them)",
            status.panics,
            status.state_dir
        );
    }
}
