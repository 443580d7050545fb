//! A connection's live subscriptions: each registered before its subscribe call is answered,
//! with the token that ends it and, for a client that answers approvals, the guard that counts
//! it as someone who may answer. An unsubscribe removes the entry (and so ends the count)
//! before it is answered; a forwarder that ends for any other reason removes it as it drops.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

use super::connection::ConnectionContext;
use crate::answerers::{AnswererGuard, Answerers};

/// Live subscriptions of one connection by id (as JSON text). Registered before the
/// subscription is accepted, so an unsubscribe that arrives right after the client saw the
/// subscription id always finds it (jsonrpsee answers the subscribe call before it records
/// the subscription itself).
#[derive(Debug, Default)]
pub struct SubscriptionTable {
    entries: Mutex<HashMap<String, Entry>>,
}

/// One live subscription in the table.
#[derive(Debug)]
struct Entry {
    /// Cancelled to end it (unsubscribe).
    token: CancellationToken,
    /// Held while it counts as someone who may answer approvals; kept here so that leaving
    /// the table (unsubscribe, or the forwarder ending) ends the count at that moment.
    answerer: Option<AnswererGuard>,
}

/// A subscription registered with its connection; ends it (`cancelled`) on unsubscribe and
/// leaves the table when dropped.
pub struct TrackedSubscription {
    connection: Arc<ConnectionContext>,
    key: String,
    token: CancellationToken,
}

impl SubscriptionTable {
    /// End the subscription with this id; false when there is none. Its answerer guard is
    /// dropped before this returns.
    pub fn cancel(&self, id: &serde_json::Value) -> bool {
        let removed = self.lock().remove(&subscription_key(id));
        match removed {
            Some(entry) => {
                entry.token.cancel();
                true
            }
            None => false,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl TrackedSubscription {
    /// Register subscription `id` of `connection`.
    pub(super) fn register(
        connection: Arc<ConnectionContext>,
        id: &jsonrpsee::types::SubscriptionId<'_>,
    ) -> TrackedSubscription {
        let key = subscription_key(&serde_json::to_value(id).unwrap_or_default());
        let token = CancellationToken::new();
        let entry = Entry {
            token: token.clone(),
            answerer: None,
        };
        connection.subscriptions.lock().insert(key.clone(), entry);
        TrackedSubscription {
            connection,
            key,
            token,
        }
    }

    /// Resolves when the client unsubscribed.
    pub async fn cancelled(&self) {
        self.token.cancelled().await;
    }

    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// If the client answers approvals, count this subscription among `answerers` until it
    /// ends. Call it before the subscription is accepted, so the client never sees a
    /// subscription id that does not count yet.
    pub fn count_among(&self, answerers: &Answerers) {
        if !self.connection.answers_approvals() {
            return;
        }
        if let Some(entry) = self.connection.subscriptions.lock().get_mut(&self.key) {
            entry.answerer = Some(answerers.join());
        }
    }
}

impl Drop for TrackedSubscription {
    fn drop(&mut self) {
        let removed = self.connection.subscriptions.lock().remove(&self.key);
        drop(removed);
    }
}

/// Subscription ids compare as JSON text (`123` and `"abc"` alike).
fn subscription_key(id: &serde_json::Value) -> String {
    id.to_string()
}

#[cfg(test)]
mod tests {
    use jsonrpsee::types::SubscriptionId;
    use serde_json::json;

    use super::*;

    fn connection(answers_approvals: bool) -> Arc<ConnectionContext> {
        let connection = ConnectionContext::new(1);
        connection
            .approvals_capability
            .set(answers_approvals)
            .unwrap();
        Arc::new(connection)
    }

    #[test]
    fn an_answering_subscription_counts_until_unsubscribed() {
        let answerers = Answerers::new();
        let connection = connection(true);
        let tracked = connection.track_subscription(&SubscriptionId::Num(7));
        tracked.count_among(&answerers);
        assert_eq!(answerers.count(), 1);
        assert!(connection.subscriptions.cancel(&json!(7)));
        assert_eq!(
            answerers.count(),
            0,
            "ended before the unsubscribe is answered"
        );
        assert!(tracked.is_cancelled());
        drop(tracked);
        assert_eq!(answerers.count(), 0);
        assert!(!connection.subscriptions.cancel(&json!(7)));
    }

    #[test]
    fn an_answering_subscription_counts_until_its_forwarder_ends() {
        let answerers = Answerers::new();
        let connection = connection(true);
        let first = connection.track_subscription(&SubscriptionId::Num(1));
        let second = connection.track_subscription(&SubscriptionId::Str("b".into()));
        first.count_among(&answerers);
        second.count_among(&answerers);
        assert_eq!(answerers.count(), 2);
        drop(first);
        assert_eq!(answerers.count(), 1);
        drop(second);
        assert_eq!(answerers.count(), 0);
    }

    #[test]
    fn a_subscription_of_a_client_that_does_not_answer_never_counts() {
        let answerers = Answerers::new();
        let connection = connection(false);
        let tracked = connection.track_subscription(&SubscriptionId::Num(1));
        tracked.count_among(&answerers);
        assert_eq!(answerers.count(), 0);
        // Neither does one of a client that has not said (no `initialize` yet).
        let undeclared = Arc::new(ConnectionContext::new(2));
        let tracked = undeclared.track_subscription(&SubscriptionId::Num(1));
        tracked.count_among(&answerers);
        assert_eq!(answerers.count(), 0);
    }
}
