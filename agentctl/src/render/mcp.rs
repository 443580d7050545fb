//! How a run shows MCP server status events (`mcpServerStatus`): failures and restarts on
//! stderr, the rest quiet.

use protocol::mcp::McpServerState;

/// What a run shows of an MCP server's status: its failures and restarts (starting, ready and
/// stopped are quiet; `agentctl mcp list` shows them).
pub fn status_line(
    server: &str,
    status: McpServerState,
    error: Option<&str>,
    attempt: Option<u32>,
) -> Option<String> {
    // Every line of the error, on one line.
    let why = error
        .map(|error| error.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    match status {
        McpServerState::Failed => Some(format!(
            "MCP server {server} failed: {why}; see `agentctl mcp logs {server}`, then `agentctl mcp restart {server}`"
        )),
        McpServerState::Restarting => Some(format!(
            "MCP server {server} is restarting (attempt {}): {why}",
            attempt.unwrap_or(1)
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_and_restarts_are_shown_with_what_to_do() {
        let failed = status_line("db", McpServerState::Failed, Some("exited:\ncode 3"), None);
        assert_eq!(
            failed.as_deref(),
            Some(
                "MCP server db failed: exited: code 3; see `agentctl mcp logs db`, then `agentctl mcp restart db`"
            )
        );
        let restarting = status_line("db", McpServerState::Restarting, Some("lost"), Some(2));
        assert_eq!(
            restarting.as_deref(),
            Some("MCP server db is restarting (attempt 2): lost")
        );
        for quiet in [
            McpServerState::Starting,
            McpServerState::Ready,
            McpServerState::Stopped,
        ] {
            assert_eq!(status_line("db", quiet, None, None), None);
        }
    }
}
