//! Tests of a connection's subscription table and the notification shape.

use serde_json::json;

use super::*;

fn connection(answers_approvals: bool) -> (Arc<ConnectionContext>, mpsc::Receiver<Box<RawValue>>) {
    let (tx, rx) = mpsc::channel(8);
    let connection = ConnectionContext::new(1, tx, 64);
    connection
        .approvals_capability
        .set(answers_approvals)
        .unwrap();
    (Arc::new(connection), rx)
}

#[test]
fn an_answering_subscription_counts_until_unsubscribed() {
    let answerers = Answerers::new();
    let (connection, _rx) = connection(true);
    let tracked = connection
        .open_subscription(SubscriptionKind::Session)
        .unwrap();
    tracked.count_among(&answerers);
    assert_eq!(answerers.count(), 1);
    let id = tracked.id().to_owned();
    assert!(
        !connection
            .subscriptions
            .cancel(SubscriptionKind::Daemon, &id),
        "daemon/unsubscribe does not end a session subscription"
    );
    assert!(
        connection
            .subscriptions
            .cancel(SubscriptionKind::Session, &id)
    );
    assert_eq!(
        answerers.count(),
        0,
        "ended before the unsubscribe is answered"
    );
    assert!(tracked.is_cancelled());
    drop(tracked);
    assert_eq!(answerers.count(), 0);
    assert!(
        !connection
            .subscriptions
            .cancel(SubscriptionKind::Session, &id)
    );
}

#[test]
fn an_answering_subscription_counts_until_its_forwarder_ends() {
    let answerers = Answerers::new();
    let (connection, _rx) = connection(true);
    let first = connection
        .open_subscription(SubscriptionKind::Session)
        .unwrap();
    let second = connection
        .open_subscription(SubscriptionKind::Daemon)
        .unwrap();
    assert_ne!(first.id(), second.id());
    first.count_among(&answerers);
    second.count_among(&answerers);
    assert_eq!(answerers.count(), 2);
    drop(first);
    assert_eq!(answerers.count(), 1);
    drop(second);
    assert_eq!(answerers.count(), 0);
    assert!(connection.subscriptions.is_empty());
}

#[test]
fn a_subscription_of_a_client_that_does_not_answer_never_counts() {
    let answerers = Answerers::new();
    let (connection, _rx) = connection(false);
    let tracked = connection
        .open_subscription(SubscriptionKind::Session)
        .unwrap();
    tracked.count_among(&answerers);
    assert_eq!(answerers.count(), 0);
    // Neither does one of a client that has not said (no `initialize` yet).
    let (tx, _rx) = mpsc::channel(1);
    let undeclared = Arc::new(ConnectionContext::new(2, tx, 64));
    let tracked = undeclared
        .open_subscription(SubscriptionKind::Session)
        .unwrap();
    tracked.count_among(&answerers);
    assert_eq!(answerers.count(), 0);
}

#[test]
fn a_connection_holds_at_most_its_limit_of_subscriptions() {
    let (tx, _rx) = mpsc::channel(1);
    let connection = Arc::new(ConnectionContext::new(1, tx, 2));
    let first = connection
        .open_subscription(SubscriptionKind::Session)
        .unwrap();
    let _second = connection
        .open_subscription(SubscriptionKind::Daemon)
        .unwrap();
    let refused = connection.open_subscription(SubscriptionKind::Session);
    assert_eq!(refused.err().map(|err| err.limit), Some(2));
    drop(first);
    assert!(
        connection
            .open_subscription(SubscriptionKind::Session)
            .is_ok()
    );
}

#[test]
fn ids_are_sub_and_hex_and_differ() {
    let (connection, _rx) = connection(false);
    let first = connection
        .open_subscription(SubscriptionKind::Session)
        .unwrap();
    let second = connection
        .open_subscription(SubscriptionKind::Session)
        .unwrap();
    for id in [first.id(), second.id()] {
        let hex = id.strip_prefix("sub_").unwrap();
        assert!(
            !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()),
            "{id}"
        );
    }
    assert_ne!(first.id(), second.id());
}

#[tokio::test]
async fn a_notification_carries_the_envelope_fields_beside_the_subscription_id() {
    let (connection, mut rx) = connection(false);
    let tracked = connection
        .open_subscription(SubscriptionKind::Daemon)
        .unwrap();
    let envelope = serde_json::value::to_raw_value(
        &json!({"sessionId": "ses_1", "seq": 3, "event": {"type": "runStarted"}}),
    )
    .unwrap();
    tracked
        .send(&envelope, Duration::from_secs(1))
        .await
        .unwrap();
    let sent: serde_json::Value = serde_json::from_str(rx.recv().await.unwrap().get()).unwrap();
    assert_eq!(
        sent,
        json!({"jsonrpc": "2.0", "method": "daemon/event", "params": {
            "subscriptionId": tracked.id(), "sessionId": "ses_1", "seq": 3,
            "event": {"type": "runStarted"}}})
    );
    let empty = notification(
        "session/event",
        "sub_1",
        &RawValue::from_string("{}".into()).unwrap(),
    )
    .unwrap();
    assert_eq!(
        empty.get(),
        r#"{"jsonrpc":"2.0","method":"session/event","params":{"subscriptionId":"sub_1"}}"#
    );
    assert!(
        notification(
            "session/event",
            "sub_1",
            &RawValue::from_string("[1]".into()).unwrap()
        )
        .is_none()
    );
}
