//! `agentctl daemon restart` and `agentctl daemon upgrade`. A daemon the service manager runs
//! (its `daemon/status` says `serviceManager: "systemd"`) is restarted by it (`systemctl
//! --user restart UNIT`), so no second daemon starts outside it; any other is stopped over the
//! socket and started again by agentctl. `upgrade` is the same restart, saying which binary and
//! version start (the one now on disk).

use std::path::{Path, PathBuf};
use std::time::Duration;

use protocol::daemon::{DaemonShutdownParams, DaemonStatusParams, DaemonStatusResult};
use protocol::methods::{DaemonShutdown, DaemonStatus};

use crate::Context;
use crate::client::{ClientError, Connection};
use crate::output::{CommandError, print_json};

/// How long the daemon gets to stop when agentctl restarts it.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);
/// How long `systemctl --user restart` may take: systemd's stop timeout of the unit (30 s,
/// `systemd/agentd.service`) and a start.
const SYSTEMCTL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long `agentd --version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of systemctl's stderr an error quotes.
const STDERR_MAX_CHARS: usize = 500;

/// How a restart is done, decided from the running daemon's status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RestartPlan {
    /// Nothing answers: start a daemon.
    Start,
    /// Stop the daemon `pid` over the socket, then start the binary autostart picks.
    StopThenStart { pid: u32 },
    /// The service manager runs it as `unit`: ask it (`systemctl --user restart UNIT`).
    Systemd { pid: u32, unit: String },
}

/// The plan for a daemon with `status` (None: nothing answers).
pub fn plan(status: Option<&DaemonStatusResult>) -> RestartPlan {
    let Some(status) = status else {
        return RestartPlan::Start;
    };
    match status.service_manager.as_deref() {
        Some("systemd") => RestartPlan::Systemd {
            pid: status.pid,
            unit: status
                .service_unit
                .clone()
                .unwrap_or_else(|| "agentd.service".to_owned()),
        },
        _ => RestartPlan::StopThenStart { pid: status.pid },
    }
}

/// `agentctl daemon restart`.
pub async fn restart(ctx: &Context) -> Result<(), CommandError> {
    restart_daemon(ctx, false).await
}

/// `agentctl daemon upgrade`.
pub async fn upgrade(ctx: &Context) -> Result<(), CommandError> {
    restart_daemon(ctx, true).await
}

async fn restart_daemon(ctx: &Context, upgrade: bool) -> Result<(), CommandError> {
    let before = match Connection::connect(&ctx.socket, "agentctl").await {
        Ok(connection) => Some(
            connection
                .request::<DaemonStatus>(&DaemonStatusParams {})
                .await?,
        ),
        Err(ClientError::Unreachable { .. }) => None,
        Err(err) => return Err(err.into()),
    };
    let plan = plan(before.as_ref());
    // The binary that starts: systemd starts the unit's, which is the running one's path.
    let binary = match (&plan, before.as_ref().and_then(|s| s.executable.as_ref())) {
        (RestartPlan::Systemd { .. }, Some(executable)) => PathBuf::from(executable),
        _ => crate::autostart::daemon_binary(),
    };
    let on_disk = match upgrade {
        true => Some(binary_version(&binary).await?),
        false => None,
    };
    match &plan {
        RestartPlan::Start => crate::autostart::start_daemon(&ctx.socket).await?,
        RestartPlan::StopThenStart { pid } => {
            stop_and_wait(ctx, *pid).await?;
            crate::autostart::start_daemon(&ctx.socket).await?;
        }
        RestartPlan::Systemd { unit, .. } => systemctl_restart(unit).await?,
    }
    let connection = Connection::connect(&ctx.socket, "agentctl").await?;
    let after = connection
        .request::<DaemonStatus>(&DaemonStatusParams {})
        .await?;
    let via_systemd = matches!(plan, RestartPlan::Systemd { .. });
    if ctx.json {
        print_json(&serde_json::json!({
            "restarted": before.is_some(),
            "previousPid": before.as_ref().map(|status| status.pid),
            "previousVersion": before.as_ref().map(|status| &status.version),
            "pid": after.pid,
            "version": after.version,
            "via": if via_systemd { "systemd" } else { "agentctl" },
            "unit": after.service_unit,
            "binary": on_disk.as_ref().map(|_| binary.display().to_string()),
        }));
        return Ok(());
    }
    if let RestartPlan::Systemd { unit, .. } = &plan {
        crate::say!("agentd runs under systemd: restarted with `systemctl --user restart {unit}`");
    }
    match &before {
        Some(before) => crate::say!("agentd restarted (pid {} → {})", before.pid, after.pid),
        None => crate::say!("agentd was not running; started (pid {})", after.pid),
    }
    if let Some(on_disk) = on_disk {
        let running = before.as_ref().map(|status| status.version.as_str());
        crate::say!(
            "{}",
            upgrade_words(&binary, running, &on_disk, &after.version)
        );
    }
    Ok(())
}

/// What `upgrade` says of the versions: the binary on disk (`on_disk`), the one that ran
/// before (`running`, None: none ran) and the one that answers now (`now`).
pub fn upgrade_words(binary: &Path, running: Option<&str>, on_disk: &str, now: &str) -> String {
    let binary = binary.display();
    let mut words = match running {
        Some(running) if running == on_disk => format!(
            "{binary} is the same version as the daemon that ran ({running}); it was restarted anyway"
        ),
        Some(running) => format!("upgraded from {running} to {on_disk} ({binary})"),
        None => format!("started {on_disk} ({binary})"),
    };
    if now != on_disk {
        words.push_str(&format!(
            "; but the daemon now answering is {now}: another agentd binary started (check AGENTD_BIN, PATH or the unit's ExecStart)"
        ));
    }
    words
}

/// The version `binary --version` prints (`agentd 0.1.0` → `0.1.0`).
async fn binary_version(binary: &Path) -> Result<String, CommandError> {
    let cannot = |why: String| {
        CommandError::failed(format!(
            "cannot tell the version of {}: {why}; install agentd next to agentctl or on PATH, or set AGENTD_BIN",
            binary.display()
        ))
    };
    let output = tokio::process::Command::new(binary)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(VERSION_TIMEOUT, output)
        .await
        .map_err(|_| {
            cannot(format!(
                "it did not answer within {}s",
                VERSION_TIMEOUT.as_secs()
            ))
        })?
        .map_err(|err| cannot(err.to_string()))?;
    if !output.status.success() {
        return Err(cannot(format!("--version exited with {}", output.status)));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    text.split_whitespace()
        .nth(1)
        .map(str::to_owned)
        .ok_or_else(|| cannot(format!("unexpected --version output {:?}", text.trim())))
}

/// `systemctl --user restart UNIT`, bounded; its failure says what systemctl said.
async fn systemctl_restart(unit: &str) -> Result<(), CommandError> {
    let output = tokio::process::Command::new("systemctl")
        .args(["--user", "restart", unit])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(SYSTEMCTL_TIMEOUT, output).await {
        Ok(Ok(output)) => output,
        Ok(Err(err)) => {
            return Err(systemctl_failed(
                unit,
                &format!("cannot run systemctl: {err}"),
            ));
        }
        Err(_) => {
            return Err(systemctl_failed(
                unit,
                &format!("it did not finish within {}s", SYSTEMCTL_TIMEOUT.as_secs()),
            ));
        }
    };
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let said: String = stderr.trim().chars().take(STDERR_MAX_CHARS).collect();
    Err(systemctl_failed(
        unit,
        &format!("it exited with {}: {said}", output.status),
    ))
}

/// The error of a failed `systemctl --user restart UNIT` (`why`), and where to look.
pub fn systemctl_failed(unit: &str, why: &str) -> CommandError {
    CommandError::failed(format!(
        "agentd runs under systemd, and `systemctl --user restart {unit}` failed ({why}); see `systemctl --user status {unit}` and `journalctl --user -u {unit}`"
    ))
}

/// Ask the daemon to stop and wait until it is gone.
async fn stop_and_wait(ctx: &Context, pid: u32) -> Result<(), CommandError> {
    let connection = Connection::connect(&ctx.socket, "agentctl").await?;
    connection
        .request::<DaemonShutdown>(&DaemonShutdownParams {})
        .await?;
    if tokio::time::timeout(STOP_TIMEOUT, connection.closed())
        .await
        .is_err()
    {
        return Err(CommandError::failed(format!(
            "agentd (pid {pid}) did not stop within {}s; see its log",
            STOP_TIMEOUT.as_secs()
        )));
    }
    super::daemon::wait_until_gone(&ctx.socket).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(service_manager: Option<&str>, unit: Option<&str>) -> DaemonStatusResult {
        let json = serde_json::json!({
            "version": "0.1.0", "protocolVersion": "1.2", "pid": 41, "startedAt": "",
            "uptimeSecs": 1, "socketPath": "/s", "stateDir": "/d", "configPath": "/c",
            "counts": {"sessions": 0, "activeRuns": 0, "tasks": 0, "mcpServers": 0},
            "connectedClients": 1,
            "serviceManager": service_manager, "serviceUnit": unit,
        });
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_daemon_systemd_runs_is_restarted_by_systemd_any_other_by_agentctl() {
        assert_eq!(plan(None), RestartPlan::Start);
        assert_eq!(
            plan(Some(&status(None, None))),
            RestartPlan::StopThenStart { pid: 41 }
        );
        assert_eq!(
            plan(Some(&status(Some("systemd"), Some("agentd@work.service")))),
            RestartPlan::Systemd {
                pid: 41,
                unit: "agentd@work.service".to_owned()
            }
        );
        assert_eq!(
            plan(Some(&status(Some("systemd"), None))),
            RestartPlan::Systemd {
                pid: 41,
                unit: "agentd.service".to_owned()
            }
        );
        // A manager this agentctl does not know: restarted as before.
        assert_eq!(
            plan(Some(&status(Some("launchd"), None))),
            RestartPlan::StopThenStart { pid: 41 }
        );
    }

    #[test]
    fn upgrade_says_which_binary_and_version_started() {
        let binary = Path::new("/opt/agentd");
        let same = upgrade_words(binary, Some("0.1.0"), "0.1.0", "0.1.0");
        assert!(
            same.contains("same version") && same.contains("restarted anyway"),
            "{same}"
        );
        let newer = upgrade_words(binary, Some("0.1.0"), "0.2.0", "0.2.0");
        assert_eq!(newer, "upgraded from 0.1.0 to 0.2.0 (/opt/agentd)");
        let other = upgrade_words(binary, Some("0.1.0"), "0.2.0", "0.1.5");
        assert!(other.contains("now answering is 0.1.5"), "{other}");
        assert_eq!(
            upgrade_words(binary, None, "0.2.0", "0.2.0"),
            "started 0.2.0 (/opt/agentd)"
        );
    }

    #[test]
    fn a_failed_systemctl_says_what_failed_and_where_to_look() {
        let error = systemctl_failed(
            "agentd.service",
            "it exited with exit status: 5: Unit not found",
        );
        assert!(
            error
                .message
                .contains("systemctl --user restart agentd.service")
        );
        assert!(error.message.contains("Unit not found"));
        assert!(
            error
                .message
                .contains("journalctl --user -u agentd.service")
        );
    }
}
