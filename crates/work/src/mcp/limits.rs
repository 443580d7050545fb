//! The bounds of the MCP servers the daemon runs, as data: supervision (restart attempts and
//! the backoff between them, per transport), what one result may weigh, and how many tools and
//! how long a description a server may offer the model, and how long a login waits.

use std::time::Duration;

use super::McpTransport;
use super::log::StderrLimits;

/// Timings and bounds of supervision and of what a server sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpLimits {
    /// Restart attempts of a stdio server after a crash or a failed start before it is
    /// `failed`: a server that cannot run stops costing starts.
    pub max_restart_attempts: u32,
    /// Reconnect attempts of a streamable HTTP server before it is `failed`: a remote server
    /// is often down for a while (a deploy, a network change) and costs nothing to retry, so
    /// its attempts, with the backoff capped at `max_backoff`, span minutes.
    pub http_max_restart_attempts: u32,
    /// Wait before the first restart; doubled for each further attempt (200 ms × 2^n), at most
    /// `max_backoff`.
    pub restart_backoff: Duration,
    /// The longest wait between two attempts.
    pub max_backoff: Duration,
    /// A server that stayed up this long counts as healthy again: its attempts start over.
    pub stable_after: Duration,
    /// Each step of a stop waits this long (stdin closed → SIGTERM → SIGKILL), so a stop takes
    /// at most about twice this: well under the daemon's stop deadline.
    pub stop_grace: Duration,
    pub stderr: StderrLimits,
    /// Bytes of one message from a server (a tool result), counted before it is parsed: a
    /// larger result ends its call with a size error naming this limit. Images are at most
    /// 8 MiB of base64 per result (`tools::MAX_RESULT_IMAGES_BYTES`), so this leaves room.
    pub max_result_bytes: usize,
    /// Tools of one server offered to the model; the rest (in the server's order) are left out
    /// with a warning. Every tool costs tokens on every request.
    pub max_tools: usize,
    /// Characters of one tool's description offered to the model; a longer one is cut with a
    /// warning.
    pub max_description_chars: usize,
    /// How long an OAuth login (`mcp/login`) waits for the browser's redirect: the user
    /// signs in meanwhile; past it the loopback port is closed.
    pub login_timeout: Duration,
}

impl Default for McpLimits {
    fn default() -> Self {
        Self {
            max_restart_attempts: 5,
            // 0.2 s doubling to 60 s: about 4.7 minutes of attempts in all.
            http_max_restart_attempts: 12,
            restart_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(60),
            stable_after: Duration::from_secs(60),
            stop_grace: Duration::from_secs(2),
            stderr: StderrLimits::default(),
            max_result_bytes: 16 * 1024 * 1024,
            max_tools: 1000,
            max_description_chars: 10_000,
            login_timeout: Duration::from_secs(5 * 60),
        }
    }
}

impl McpLimits {
    /// The wait before restart `attempt` (from 1): `restart_backoff` × 2^(attempt − 1), at
    /// most `max_backoff`.
    pub(crate) fn backoff(&self, attempt: u32) -> Duration {
        self.restart_backoff
            .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)))
            .min(self.max_backoff)
    }

    /// Attempts before a server of `transport` is `failed`.
    pub(crate) fn attempts_for(&self, transport: &McpTransport) -> u32 {
        match transport {
            McpTransport::Stdio { .. } => self.max_restart_attempts,
            McpTransport::Http { .. } => self.http_max_restart_attempts,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_per_attempt_up_to_its_cap() {
        let limits = McpLimits::default();
        let backoff = |attempt: u32| limits.backoff(attempt);
        assert_eq!(backoff(1), Duration::from_millis(200));
        assert_eq!(backoff(5), Duration::from_millis(3200));
        assert_eq!(
            backoff(u32::MAX),
            Duration::from_secs(60),
            "capped, never overflows"
        );
        let http_total: Duration = (1..=limits.http_max_restart_attempts).map(backoff).sum();
        assert!(
            http_total >= Duration::from_secs(4 * 60),
            "an HTTP server is retried for minutes: {http_total:?}"
        );
    }
}
