//! Subscriptions are our own wire: `session/subscribe` and `daemon/subscribe` answer
//! `{"subscriptionId": "sub_…"}`, their notifications carry `subscriptionId`, `sessionId`,
//! `seq` and `event` directly in `params` (never before the subscribe answer), and
//! `session/unsubscribe` / `daemon/unsubscribe` take `{subscriptionId}` and answer
//! `{"unsubscribed": true|false}`.

use agentd_tests::harness::{Client, Daemon};
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::{Scenario, create_session};
use agentd_tests::subscription::subscription_id;
use serde_json::{Value, json};

/// Whether `id` is `sub_` and hex digits.
fn is_subscription_id(id: &Value) -> bool {
    id.as_str()
        .and_then(|id| id.strip_prefix("sub_"))
        .is_some_and(|hex| !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()))
}

/// The fields a notification's params have: the envelope's, beside the subscription id, and
/// none of jsonrpsee's `subscription` / `result` nesting.
fn assert_event_params(message: &Value, method: &str, subscription: &Value, session: &str) {
    assert_eq!(message["jsonrpc"], "2.0", "{message}");
    assert_eq!(message["method"], method, "{message}");
    assert!(message.get("id").is_none(), "{message}");
    let params = &message["params"];
    assert_eq!(&params["subscriptionId"], subscription, "{message}");
    assert_eq!(params["sessionId"], session, "{message}");
    assert!(params["seq"].is_u64(), "{message}");
    assert!(params["event"]["type"].is_string(), "{message}");
    assert!(params.get("subscription").is_none(), "{message}");
    assert!(params.get("result").is_none(), "{message}");
}

#[tokio::test]
async fn session_subscribe_answers_a_sub_id_that_its_events_carry_in_params() {
    let s = Scenario::start(Format::OpenAi).await;
    let mut client = s.client().await;
    let session = create_session(&mut client, &s.workspace()).await;
    // The replay (`sessionCreated`) is ready at once: still, the answer comes first.
    let id = client
        .send_request(
            "session/subscribe",
            &json!({"sessionId": session, "afterSeq": 0}),
        )
        .await;
    let first = client.read_message().await;
    assert_eq!(first["id"], json!(id), "the answer comes first: {first}");
    let answer = &first["result"];
    assert_eq!(
        answer.as_object().map(|fields| fields.len()),
        Some(1),
        "{first}"
    );
    let subscription = answer["subscriptionId"].clone();
    assert!(is_subscription_id(&subscription), "{first}");

    let created = client.next_notification().await;
    assert_event_params(&created, "session/event", &subscription, &session);
    assert_eq!(created["params"]["seq"], 1, "{created}");
    assert_eq!(created["params"]["event"]["type"], "sessionCreated");
}

#[tokio::test]
async fn daemon_subscribe_answers_a_sub_id_that_its_events_carry_in_params() {
    let s = Scenario::start(Format::OpenAi).await;
    let mut watcher = s.client().await;
    let answer = watcher
        .request("daemon/subscribe", json!({}))
        .await
        .expect("daemon/subscribe");
    let subscription = subscription_id(answer);
    assert!(is_subscription_id(&subscription), "{subscription}");

    let mut client = s.client().await;
    let session = create_session(&mut client, &s.workspace()).await;
    let created = watcher.next_notification().await;
    assert_event_params(&created, "daemon/event", &subscription, &session);
    assert_eq!(created["params"]["event"]["type"], "sessionCreated");
}

#[tokio::test]
async fn a_subscribe_in_a_batch_is_answered_before_its_first_event() {
    let s = Scenario::start(Format::OpenAi).await;
    let mut client = s.client().await;
    let session = create_session(&mut client, &s.workspace()).await;
    let batch = json!([{"jsonrpc": "2.0", "id": "b-1", "method": "session/subscribe",
                        "params": {"sessionId": session, "afterSeq": 0}}]);
    client.send_line(&batch.to_string()).await;
    let first = client.read_message().await;
    assert!(first.is_array(), "the batch's answer comes first: {first}");
    let subscription = first[0]["result"]["subscriptionId"].clone();
    assert!(is_subscription_id(&subscription), "{first}");
    let created = client.next_notification().await;
    assert_event_params(&created, "session/event", &subscription, &session);
}

#[tokio::test]
async fn an_unsubscribed_session_subscription_sees_nothing_the_others_see() {
    let s = Scenario::start(Format::OpenAi).await;
    s.mock.push(Reply::text("hello"));
    let mut client = s.client().await;
    let session = create_session(&mut client, &s.workspace()).await;
    let dropped = client.subscribe(&session, None).await;
    let kept = client.subscribe(&session, None).await;
    assert_ne!(dropped, kept, "two subscriptions, two ids");
    let answer = client
        .request("session/unsubscribe", json!({"subscriptionId": dropped}))
        .await
        .expect("session/unsubscribe");
    assert_eq!(answer, json!({"unsubscribed": true}));

    // Every event of the run reaches the kept subscription, none the dropped one.
    client.prompt(&session, "hi").await;
    loop {
        let message = client.next_notification().await;
        assert_event_params(&message, "session/event", &kept, &session);
        if message["params"]["event"]["type"] == "runFinished" {
            break;
        }
    }
    // Ended once: a second unsubscribe finds nothing.
    assert!(!client.unsubscribe(&dropped).await);
}

#[tokio::test]
async fn an_unsubscribed_daemon_subscription_sees_nothing_the_others_see() {
    let s = Scenario::start(Format::OpenAi).await;
    let mut watcher = s.client().await;
    let dropped = watcher.subscribe_daemon().await;
    let kept = watcher.subscribe_daemon().await;
    assert_ne!(dropped, kept);
    // `session/unsubscribe` does not end a daemon subscription.
    assert!(!watcher.unsubscribe(&dropped).await);
    let answer = watcher
        .request("daemon/unsubscribe", json!({"subscriptionId": dropped}))
        .await
        .expect("daemon/unsubscribe");
    assert_eq!(answer, json!({"unsubscribed": true}));

    let mut client = s.client().await;
    let first = create_session(&mut client, &s.workspace()).await;
    let second = create_session(&mut client, &s.workspace()).await;
    for session in [&first, &second] {
        let message = watcher.next_notification().await;
        assert_event_params(&message, "daemon/event", &kept, session);
    }
}

#[tokio::test]
async fn unsubscribing_an_unknown_id_answers_false() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    for method in ["session/unsubscribe", "daemon/unsubscribe"] {
        let answer = client
            .request(method, json!({"subscriptionId": "sub_0123"}))
            .await
            .expect(method);
        assert_eq!(answer, json!({"unsubscribed": false}), "{method}");
    }
    // Another connection's subscription is not this one's to end.
    let mut other = daemon.client().await;
    let theirs = other.subscribe_daemon().await;
    let answer = client
        .request("daemon/unsubscribe", json!({"subscriptionId": theirs}))
        .await
        .expect("daemon/unsubscribe");
    assert_eq!(answer, json!({"unsubscribed": false}));
    // A params object without the id is invalid params.
    let refused = client
        .request("session/unsubscribe", json!({}))
        .await
        .expect_err("no subscriptionId");
    assert_eq!(refused.code, -32602, "{refused:?}");
    // The array form of older clients is read too.
    let answer = other
        .request("daemon/unsubscribe", json!([theirs]))
        .await
        .expect("daemon/unsubscribe [id]");
    assert_eq!(answer, json!({"unsubscribed": true}));
}

#[tokio::test]
async fn subscription_ids_differ_across_connections() {
    let daemon = Daemon::start().await;
    let mut ids = Vec::new();
    for _ in 0..2 {
        let mut client = daemon.client().await;
        ids.push(client.subscribe_daemon().await);
        ids.push(client.subscribe_daemon().await);
    }
    for (index, id) in ids.iter().enumerate() {
        assert!(is_subscription_id(id), "{id}");
        assert!(!ids[..index].contains(id), "{id} twice in {ids:?}");
    }
}

#[tokio::test]
async fn a_connection_holds_at_most_64_subscriptions() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let mut ids = Vec::new();
    for _ in 0..64 {
        ids.push(client.subscribe_daemon().await);
    }
    let refused = client
        .request("daemon/subscribe", json!({}))
        .await
        .expect_err("the 65th subscription");
    assert_eq!(refused.code, -32001, "{refused:?}");
    assert!(refused.message.contains("unsubscribe"), "{refused:?}");
    let answer = client
        .request("daemon/unsubscribe", json!({"subscriptionId": ids[0]}))
        .await
        .expect("daemon/unsubscribe");
    assert_eq!(answer["unsubscribed"], true);
    client.subscribe_daemon().await;
}

#[tokio::test]
async fn initialize_lists_the_unsubscribe_methods() {
    let daemon = Daemon::start().await;
    let mut client = Client::connect_raw(daemon.socket()).await.expect("connect");
    let answer = client.initialize().await;
    let methods = &answer["capabilities"]["methods"];
    for method in [
        "session/subscribe",
        "session/unsubscribe",
        "daemon/subscribe",
        "daemon/unsubscribe",
    ] {
        assert!(
            methods
                .as_array()
                .is_some_and(|list| list.contains(&json!(method))),
            "{method} not in {methods}"
        );
    }
}

#[tokio::test]
async fn a_deleted_session_sends_its_last_event_with_the_subscription_id() {
    let s = Scenario::start(Format::OpenAi).await;
    let mut watcher = s.client().await;
    let mut client = s.client().await;
    let session = create_session(&mut client, &s.workspace()).await;
    let subscription = watcher.subscribe(&session, None).await;
    client
        .request("session/delete", json!({"sessionId": session}))
        .await
        .expect("session/delete");
    let deleted = watcher.next_notification().await;
    assert_event_params(&deleted, "session/event", &subscription, &session);
    assert_eq!(deleted["params"]["event"]["type"], "sessionDeleted");
}
