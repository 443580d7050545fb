//! `mcp-host STATE_DIR`: a stand-in for the daemon that owns one MCP server, for the test that
//! kills its owner with SIGKILL. Like the daemon it first installs the process supervisor for
//! `STATE_DIR` (killing what a killed host left there), then starts server-everything over stdio
//! through `agentd_work::mcp::McpManager`, wrapped in a shell that leaves a `sleep` in the server's
//! process group (what a death signal on the leader alone cannot reach), prints the server's pid
//! once it is ready, and waits until killed.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use agentd_tests::mcp_servers;
use agentd_work::mcp::{McpManager, McpServerConfig, McpSource, McpStatus, McpTransport};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let state: PathBuf = std::env::args_os()
        .nth(1)
        .ok_or_else(|| anyhow::anyhow!("usage: mcp-host STATE_DIR"))?
        .into();
    let socket = state.join("agentd.sock");
    let supervised = state.clone();
    tokio::task::spawn_blocking(move || {
        agentd_policy::process::supervisor::install(&supervised, &socket)
    })
    .await??;
    let manager = McpManager::new(state.join("mcp"), Duration::from_secs(600));
    let server = mcp_servers::everything_stdio();
    let mut line = format!("sleep 1000 & exec '{}'", server.command);
    for arg in &server.args {
        line.push_str(&format!(" '{arg}'"));
    }
    let config = McpServerConfig {
        name: "everything".into(),
        transport: McpTransport::Stdio {
            command: "/bin/sh".into(),
            args: vec!["-c".into(), line],
            env: server.env,
            cwd: None,
        },
        enabled: true,
        startup_timeout: Duration::from_secs(60),
        tool_timeout: Duration::from_secs(60),
        enabled_tools: None,
        disabled_tools: Vec::new(),
        sampling: false,
        source: McpSource::Session,
    };
    let handle = manager.acquire(&config, &state);
    match handle.wait_ready(Duration::from_secs(60)).await {
        McpStatus::Ready { .. } => {}
        other => anyhow::bail!("the server did not get ready: {other:?}"),
    }
    let pid = handle.pid().ok_or_else(|| anyhow::anyhow!("no pid"))?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{pid}")?;
    stdout.flush()?;
    std::future::pending::<()>().await;
    Ok(())
}
