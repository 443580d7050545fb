//! The forwarder of the daemon's change broadcasts (task changes, MCP server status changes):
//! each change becomes an event on the daemon stream (`daemon/subscribe`, not persisted there),
//! then goes to the logs of the sessions it concerns. A forwarder that falls behind loses
//! changes (said in the daemon log); whoever announces them never waits on it.

use std::future::Future;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use protocol::event::Event;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio_util::sync::CancellationToken;

use super::events::{DaemonStream, Published};

/// How long one session log may take to write a forwarded event before the forwarder moves on
/// (a log stuck on a full disk must not hold up the other sessions or the daemon stream).
pub(super) const SESSION_APPEND_DEADLINE: Duration = Duration::from_secs(5);

/// What a forwarder forwards, as the daemon log names it.
pub(super) struct ChangeNames {
    /// The changes lost when the forwarder lags ("task events").
    pub(super) missed: &'static str,
    /// One event that cannot be encoded ("a task event").
    pub(super) one: &'static str,
}

/// Forward each change of `changes` until `stop` fires or the broadcast closes: its event
/// (`event_of`) to the daemon stream, then to `deliver`, which appends it to the logs of the
/// sessions concerned (a `Break` ends the forwarder).
pub(super) async fn forward_changes<Change, Deliver, Delivered>(
    mut changes: broadcast::Receiver<Change>,
    daemon: DaemonStream,
    stop: CancellationToken,
    names: ChangeNames,
    event_of: fn(&Change) -> Event,
    mut deliver: Deliver,
) where
    Change: Clone,
    Deliver: FnMut(Change, Event) -> Delivered,
    Delivered: Future<Output = ControlFlow<()>>,
{
    loop {
        let change = tokio::select! {
            biased;
            _ = stop.cancelled() => return,
            change = changes.recv() => change,
        };
        let change = match change {
            Ok(change) => change,
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "{} were missed", names.missed);
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        let event = event_of(&change);
        match daemon_event(event.clone()) {
            Ok(published) => {
                let _ = daemon.events.send(Arc::new(published));
            }
            Err(err) => tracing::warn!("cannot encode {}: {err:#}", names.one),
        }
        if deliver(change, event).await.is_break() {
            return;
        }
    }
}

/// An event of no session for the daemon stream: `sessionId` `""`, `seq` 0, not persisted.
pub(super) fn daemon_event(event: Event) -> anyhow::Result<Published> {
    let envelope = protocol::event::SessionEventEnvelope {
        session_id: String::new(),
        seq: 0,
        event,
        not_persisted: false,
    };
    let json = serde_json::value::to_raw_value(&envelope)?;
    Ok(Published {
        seq: 0,
        persisted: false,
        json,
        event: envelope.event,
    })
}
