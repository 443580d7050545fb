//! A connection's live subscriptions, on our own wire: each gets a `sub_…` id and is
//! registered before its subscribe call is answered, with the token that ends it and, for a
//! client that answers approvals, the guard that counts it as someone who may answer. Its
//! notifications (`{"method": "session/event", "params": {"subscriptionId", "sessionId", "seq",
//! "event"}}`) go straight into the connection's bounded outbound queue. An unsubscribe removes
//! the entry (and so ends the count) before it is answered; a forwarder that ends for any other
//! reason removes it as it drops.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::connection::ConnectionContext;
use agentd_core::answerers::{AnswererGuard, Answerers};

/// What a subscription follows; an unsubscribe method ends only subscriptions of its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubscriptionKind {
    /// `session/subscribe`: one session's events, as `session/event` notifications.
    Session,
    /// `daemon/subscribe`: lifecycle events of every session, as `daemon/event` notifications.
    Daemon,
}

/// Live subscriptions of one connection by id, at most `max` at once.
#[derive(Debug)]
pub struct SubscriptionTable {
    entries: Mutex<HashMap<String, Entry>>,
    /// The most live subscriptions of this connection (`max_subscriptions_per_connection`):
    /// each holds a forwarder task and a broadcast receiver.
    max: usize,
}

/// One live subscription in the table.
#[derive(Debug)]
struct Entry {
    kind: SubscriptionKind,
    /// Cancelled to end it (unsubscribe).
    token: CancellationToken,
    /// Held while it counts as someone who may answer approvals; kept here so that leaving
    /// the table (unsubscribe, or the forwarder ending) ends the count at that moment.
    answerer: Option<AnswererGuard>,
}

/// The connection already has its most subscriptions.
#[derive(Debug, thiserror::Error)]
#[error("too many subscriptions on this connection (limit {limit}); unsubscribe from some first")]
pub struct TooManySubscriptions {
    pub limit: usize,
}

/// A subscription registered with its connection: its id, the token that ends it
/// (`cancelled`), and the way its notifications reach the client. Leaves the table when
/// dropped.
pub struct TrackedSubscription {
    connection: Arc<ConnectionContext>,
    id: String,
    kind: SubscriptionKind,
    token: CancellationToken,
}

impl SubscriptionTable {
    /// An empty table that holds at most `max` subscriptions.
    pub fn new(max: usize) -> SubscriptionTable {
        SubscriptionTable {
            entries: Mutex::new(HashMap::new()),
            max,
        }
    }

    /// End the subscription of `kind` with this id; false when there is none. Its answerer
    /// guard is dropped before this returns.
    pub fn cancel(&self, kind: SubscriptionKind, id: &str) -> bool {
        let mut entries = self.lock();
        if entries.get(id).is_none_or(|entry| entry.kind != kind) {
            return false;
        }
        let removed = entries.remove(id);
        drop(entries);
        match removed {
            Some(entry) => {
                entry.token.cancel();
                true
            }
            None => false,
        }
    }

    /// No live subscription.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl TrackedSubscription {
    /// Register a new subscription of `kind` with `connection`, under a fresh id.
    pub(super) fn register(
        connection: Arc<ConnectionContext>,
        kind: SubscriptionKind,
    ) -> Result<TrackedSubscription, TooManySubscriptions> {
        let token = CancellationToken::new();
        let id = new_subscription_id();
        {
            let mut entries = connection.subscriptions.lock();
            if entries.len() >= connection.subscriptions.max {
                return Err(TooManySubscriptions {
                    limit: connection.subscriptions.max,
                });
            }
            entries.insert(
                id.clone(),
                Entry {
                    kind,
                    token: token.clone(),
                    answerer: None,
                },
            );
        }
        Ok(TrackedSubscription {
            connection,
            id,
            kind,
            token,
        })
    }

    /// The id the subscribe call answers and every notification carries.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Resolves when the client unsubscribed.
    pub async fn cancelled(&self) {
        self.token.cancelled().await;
    }

    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// If the client answers approvals, count this subscription among `answerers` until it
    /// ends. Call it before the subscribe call is answered, so the client never sees a
    /// subscription id that does not count yet.
    pub fn count_among(&self, answerers: &Answerers) {
        if !self.connection.answers_approvals() {
            return;
        }
        if let Some(entry) = self.connection.subscriptions.lock().get_mut(&self.id) {
            entry.answerer = Some(answerers.join());
        }
    }

    /// Queue the notification of `envelope` (a `SessionEventEnvelope`), waiting at most
    /// `wait` for room in the connection's queue; `Err` when it could not be queued (the
    /// client does not read, or the connection is gone).
    pub async fn send(&self, envelope: &RawValue, wait: Duration) -> Result<(), SendFailed> {
        let message = self.notification(envelope)?;
        self.connection
            .outbound
            .send_timeout(message, wait)
            .await
            .map_err(|err| match err {
                mpsc::error::SendTimeoutError::Timeout(_) => SendFailed::NotReading,
                mpsc::error::SendTimeoutError::Closed(_) => SendFailed::Closed,
            })
    }

    /// Queue the notification of `envelope` only if there is room now (best-effort events).
    pub fn try_send(&self, envelope: &RawValue) -> Result<(), SendFailed> {
        let message = self.notification(envelope)?;
        self.connection
            .outbound
            .try_send(message)
            .map_err(|err| match err {
                mpsc::error::TrySendError::Full(_) => SendFailed::NotReading,
                mpsc::error::TrySendError::Closed(_) => SendFailed::Closed,
            })
    }

    /// Resolves when the connection's writer is gone (the client hung up).
    pub async fn writer_closed(&self) {
        self.connection.outbound.closed().await;
    }

    fn notification(&self, envelope: &RawValue) -> Result<Box<RawValue>, SendFailed> {
        let method = match self.kind {
            SubscriptionKind::Session => protocol::event::SESSION_EVENT,
            SubscriptionKind::Daemon => protocol::event::DAEMON_EVENT,
        };
        notification(method, &self.id, envelope).ok_or(SendFailed::Malformed)
    }
}

impl Drop for TrackedSubscription {
    fn drop(&mut self) {
        let removed = self.connection.subscriptions.lock().remove(&self.id);
        drop(removed);
    }
}

/// Why a notification was not queued.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SendFailed {
    #[error("the client does not read its events")]
    NotReading,
    #[error("the connection is closed")]
    Closed,
    #[error("the event is not a JSON object")]
    Malformed,
}

/// `sub_` and 32 random hex digits: unique in the daemon, unguessable across connections.
fn new_subscription_id() -> String {
    format!("sub_{}", uuid::Uuid::new_v4().simple())
}

/// The notification line of one event: `envelope`'s fields (an object) directly in `params`,
/// after `subscriptionId`. `None` when `envelope` is not an object.
pub fn notification(
    method: &str,
    subscription_id: &str,
    envelope: &RawValue,
) -> Option<Box<RawValue>> {
    let fields = envelope.get().trim().strip_prefix('{')?;
    let separator = if fields.trim_start().starts_with('}') {
        ""
    } else {
        ","
    };
    let head = serde_json::json!({
        "jsonrpc": "2.0",
        "method": method,
    })
    .to_string();
    let id = serde_json::Value::from(subscription_id).to_string();
    // `head` is `{"jsonrpc":"2.0","method":"…"}`: reopen it to add `params`.
    let head = head.strip_suffix('}')?;
    let text = format!("{head},\"params\":{{\"subscriptionId\":{id}{separator}{fields}}}");
    RawValue::from_string(text).ok()
}

#[cfg(test)]
#[path = "subscriptions_tests.rs"]
mod tests;
