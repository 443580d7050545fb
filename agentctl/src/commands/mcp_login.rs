//! `agentctl mcp login|logout NAME`: the OAuth login of an HTTP MCP server. The daemon runs the
//! login (discovery, the loopback redirect, the token); this opens the URL it answers in a
//! browser (`xdg-open`, `open`, `start`; printed always, and the only way off a display) and
//! follows the login until the browser comes back, it fails, or Ctrl-C.

use std::path::PathBuf;
use std::time::Duration;

use protocol::mcp::{McpLoginParams, McpLoginState, McpLoginStatusParams, McpLogoutParams};
use protocol::methods::{McpLogin, McpLoginStatus, McpLogout};

use crate::Context;
use crate::output::{CommandError, print_json};
use crate::platform::Interrupts;

/// How long one `mcp/loginStatus` waits for the login to end: under the request timeout.
const STATUS_WAIT_SECS: u64 = 20;
/// How long the browser opener may take to hand the URL over.
const OPENER_TIMEOUT: Duration = Duration::from_secs(10);

/// `agentctl mcp login NAME [--cwd DIR] [--no-browser]`.
pub async fn login(
    ctx: &Context,
    name: String,
    cwd: Option<PathBuf>,
    no_browser: bool,
) -> Result<(), CommandError> {
    let cwd = absolute(cwd)?;
    let connection = ctx.connect().await?;
    let started = connection
        .request::<McpLogin>(&McpLoginParams {
            name: name.clone(),
            cwd: Some(cwd.display().to_string()),
        })
        .await?;
    // Printed before anything else, so a user without a browser here can open it elsewhere.
    crate::warn_line!(
        "To log in to MCP server {name}, open this URL in a browser (it waits {} s):",
        started.timeout_secs
    );
    crate::say!("{}", started.authorization_url);
    if !no_browser && has_display() && open_browser(&started.authorization_url).await {
        crate::warn_line!("(opened in your browser)");
    }
    let mut interrupts = Interrupts::listen()
        .map_err(|err| CommandError::failed(format!("cannot watch for Ctrl-C: {err}")))?;
    let params = McpLoginStatusParams {
        login_id: started.login_id.clone(),
        wait_secs: STATUS_WAIT_SECS,
    };
    loop {
        let status = tokio::select! {
            status = connection.request::<McpLoginStatus>(&params) => status?,
            _ = interrupts.recv() => {
                return Err(CommandError::failed(format!("the login to {name} was left waiting; it ends by itself")));
            }
        };
        match status.state {
            McpLoginState::Pending => continue,
            McpLoginState::Done => {
                if ctx.json {
                    print_json(&status);
                } else {
                    crate::warn_line!(
                        "logged in to MCP server {name}; it connects with the token now (`agentctl mcp list` shows it)"
                    );
                }
                return Ok(());
            }
            McpLoginState::Failed => {
                return Err(CommandError::failed(format!(
                    "the login to MCP server {name} failed: {}",
                    status.error.unwrap_or_default()
                )));
            }
        }
    }
}

/// `agentctl mcp logout NAME [--cwd DIR]`.
pub async fn logout(ctx: &Context, name: String, cwd: Option<PathBuf>) -> Result<(), CommandError> {
    let cwd = absolute(cwd)?;
    let connection = ctx.connect().await?;
    let result = connection
        .request::<McpLogout>(&McpLogoutParams {
            name: name.clone(),
            cwd: Some(cwd.display().to_string()),
        })
        .await?;
    if ctx.json {
        print_json(&result);
    } else if result.deleted {
        crate::say!("logged out of MCP server {name}: its token is deleted");
    } else {
        crate::say!("MCP server {name} had no token; nothing to delete");
    }
    Ok(())
}

/// Whether a browser can be shown here: a graphical session on Linux and the BSDs (not over
/// SSH without one); macOS and Windows always.
fn has_display() -> bool {
    if cfg!(any(target_os = "macos", windows)) {
        return true;
    }
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|value| !value.is_empty()))
}

/// Hands `url` to the system's opener; false when it could not.
async fn open_browser(url: &str) -> bool {
    let mut command = if cfg!(target_os = "macos") {
        tokio::process::Command::new("open")
    } else if cfg!(windows) {
        let mut command = tokio::process::Command::new("cmd");
        // `start` takes its first quoted argument as a title.
        command.args(["/C", "start", ""]);
        command
    } else {
        tokio::process::Command::new("xdg-open")
    };
    command
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let Ok(mut child) = command.spawn() else {
        return false;
    };
    matches!(
        tokio::time::timeout(OPENER_TIMEOUT, child.wait()).await,
        Ok(Ok(status)) if status.success()
    )
}

/// `dir` made absolute against the current directory (default: the current directory).
fn absolute(dir: Option<PathBuf>) -> Result<PathBuf, CommandError> {
    let here = std::env::current_dir()
        .map_err(|err| CommandError::failed(format!("cannot read the current directory: {err}")))?;
    Ok(match dir {
        Some(dir) => here.join(dir),
        None => here,
    })
}
