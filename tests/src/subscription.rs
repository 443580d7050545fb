//! Helpers for subscriptions on agentd's own wire: the `subscriptionId` of a subscribe answer,
//! `daemon/subscribe`, and `session/unsubscribe` in its documented object form.

use serde_json::{Value, json};

use crate::harness::Client;

/// The `subscriptionId` of a subscribe answer, checked to be `"sub_…"`.
pub fn subscription_id(answer: Value) -> Value {
    let id = answer["subscriptionId"].clone();
    assert!(
        id.as_str().is_some_and(|id| id.starts_with("sub_")),
        "a subscribe answer without a `sub_…` subscriptionId: {answer}"
    );
    id
}

impl Client {
    /// `daemon/subscribe`; returns the subscription id (`"sub_…"`).
    pub async fn subscribe_daemon(&mut self) -> Value {
        let answer = self
            .request("daemon/subscribe", json!({}))
            .await
            .expect("daemon/subscribe");
        subscription_id(answer)
    }

    /// `session/unsubscribe` (object form); returns its `unsubscribed`.
    pub async fn unsubscribe(&mut self, subscription_id: &Value) -> bool {
        let answer = self
            .request(
                "session/unsubscribe",
                json!({"subscriptionId": subscription_id}),
            )
            .await
            .expect("session/unsubscribe");
        answer["unsubscribed"]
            .as_bool()
            .unwrap_or_else(|| panic!("no unsubscribed in {answer}"))
    }
}
