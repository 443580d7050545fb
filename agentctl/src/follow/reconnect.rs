//! Waiting for agentd to come back after the connection to it was lost while following a
//! session (it was restarted, upgraded, or it crashed): connect again with a bounded backoff
//! for a bounded time (`AGENTCTL_RECONNECT_SECS`, default 60 s), declaring what the lost
//! connection declared, subscribe again after the last seq shown, and learn where the replay
//! ends (the session's last seq). Ctrl-C stops waiting.

use std::ffi::OsStr;
use std::time::Duration;

use protocol::error::{OVERLOADED, SHUTTING_DOWN};
use protocol::methods::SessionGet;
use protocol::session::SessionGetParams;
use tokio::time::Instant;

use super::EventSubscription;
use crate::client::{ClientError, Connection};
use crate::platform::Interrupts;

/// How long to wait for the daemon by default: a restart takes seconds (the old daemon stops
/// within 15 s, and systemd gives it 30 s), a crashed one is started again by its supervisor.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(60);

/// The variable that sets the wait in seconds (`0`: do not wait).
pub const WAIT_VARIABLE: &str = "AGENTCTL_RECONNECT_SECS";

/// The first pause between two tries, doubled after each one up to [`RETRY_MAX`]: a daemon
/// that restarts at once is followed again at once, and a long wait costs a try a second or
/// two.
const RETRY_FIRST: Duration = Duration::from_millis(25);
const RETRY_MAX: Duration = Duration::from_millis(500);

/// How the wait for the daemon ended.
#[expect(
    clippy::large_enum_variant,
    reason = "one is made per lost connection and taken apart at once"
)]
pub enum Reconnected {
    /// Connected and subscribed again; the replay (persisted events after the last seq shown)
    /// is through at `replay_end`.
    Back {
        connection: Connection,
        subscription: EventSubscription,
        replay_end: u64,
    },
    /// Ctrl-C.
    Interrupted,
    /// The daemon did not come back in time.
    TimedOut,
    /// It came back but refused the session (deleted meanwhile, or a daemon that speaks
    /// another protocol after an upgrade).
    Refused(ClientError),
}

/// The wait `AGENTCTL_RECONNECT_SECS` (its value, if set) asks for; the default when unset or
/// not a number of seconds.
pub fn wait_from(value: Option<&OsStr>) -> Duration {
    value
        .and_then(OsStr::to_str)
        .and_then(|text| text.trim().parse::<u64>().ok())
        .map_or(DEFAULT_WAIT, Duration::from_secs)
}

/// Connect again to the daemon `lost` talked to, subscribe to `session_id` after `after_seq`,
/// within `wait`. With `start`, start a daemon first (once): see `follow` for when.
pub async fn wait_for_daemon(
    lost: &Connection,
    session_id: &str,
    after_seq: u64,
    start: bool,
    wait: Duration,
    interrupts: &mut Interrupts,
) -> Reconnected {
    let deadline = Instant::now() + wait;
    let mut pause = RETRY_FIRST;
    let mut start = start;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Reconnected::TimedOut;
        }
        let attempt = try_once(lost, session_id, after_seq, std::mem::take(&mut start));
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(left, attempt) => outcome,
            _ = interrupts.recv() => return Reconnected::Interrupted,
        };
        match outcome {
            Err(_) => return Reconnected::TimedOut,
            Ok(Ok(back)) => return back,
            Ok(Err(err)) if !comes_back(&err) => return Reconnected::Refused(err),
            Ok(Err(_)) => {}
        }
        let left = deadline.saturating_duration_since(Instant::now());
        tokio::select! {
            () = tokio::time::sleep(pause.min(left)) => {}
            _ = interrupts.recv() => return Reconnected::Interrupted,
        }
        pause = (pause * 2).min(RETRY_MAX);
    }
}

/// One try: (start,) connect, subscribe, read the session's last seq.
async fn try_once(
    lost: &Connection,
    session_id: &str,
    after_seq: u64,
    start: bool,
) -> Result<Reconnected, ClientError> {
    if start {
        // A failure (another client started one first, say) shows in the connect below.
        let _ = crate::autostart::start_daemon(&lost.socket).await;
    }
    let connection = lost.reconnect().await?;
    // Subscribed first, so the last seq read next is at most where the replay ends.
    let subscription = super::open_subscription(&connection, session_id, after_seq).await?;
    let params = SessionGetParams {
        session_id: session_id.to_owned(),
        include_history: false,
    };
    let replay_end = connection
        .request::<SessionGet>(&params)
        .await?
        .session
        .last_seq;
    Ok(Reconnected::Back {
        connection,
        subscription,
        replay_end,
    })
}

/// Whether trying again may help: nothing answers yet, the old daemon is still stopping, the
/// new one is busy or not answering yet, or the connection broke again.
fn comes_back(err: &ClientError) -> bool {
    match err {
        ClientError::Unreachable { .. }
        | ClientError::Busy { .. }
        | ClientError::Transport(_)
        | ClientError::NotAnswering { .. } => true,
        ClientError::Rpc { code, .. } => *code == SHUTTING_DOWN || *code == OVERLOADED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_is_read_in_seconds_and_defaults_to_a_minute() {
        let cases = [
            (None, DEFAULT_WAIT),
            (Some("5"), Duration::from_secs(5)),
            (Some(" 0 "), Duration::ZERO),
            (Some("soon"), DEFAULT_WAIT),
            (Some("-1"), DEFAULT_WAIT),
        ];
        for (value, expected) in cases {
            assert_eq!(wait_from(value.map(OsStr::new)), expected, "{value:?}");
        }
    }
}
