//! The daemon's requests on a connection: answers routed by id, unknown and junk answers
//! dropped, the deadline, the bounded table, and a closed connection failing every call.

use std::sync::Arc;
use std::time::Duration;

use super::*;

fn peer() -> (Arc<Peer>, mpsc::Receiver<Box<RawValue>>) {
    let (tx, rx) = mpsc::channel(MAX_PENDING_REQUESTS + 8);
    (Arc::new(Peer::new(tx, 1 << 20)), rx)
}

async fn sent_id(rx: &mut mpsc::Receiver<Box<RawValue>>) -> String {
    let message = rx.recv().await.unwrap();
    let value: serde_json::Value = serde_json::from_str(message.get()).unwrap();
    assert_eq!(value["jsonrpc"], "2.0");
    value["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn an_answer_reaches_its_call_and_others_are_dropped() {
    let (peer, mut rx) = peer();
    let call = tokio::spawn({
        let peer = peer.clone();
        async move {
            peer.request(
                "extension/event",
                serde_json::json!({}),
                Duration::from_secs(30),
            )
            .await
        }
    });
    let id = sent_id(&mut rx).await;
    // Answers to ids never issued, junk, and requests are not answers to this call.
    assert!(peer.accept_answer(r#"{"jsonrpc":"2.0","id":"agentd-999","result":{}}"#));
    assert!(peer.accept_answer(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#));
    assert!(peer.accept_answer(r#"{"jsonrpc":"2.0","id":null,"error":{"code":1}}"#));
    assert!(!peer.accept_answer(r#"{"jsonrpc":"2.0","id":"x","method":"a"}"#));
    assert!(!peer.accept_answer("not json"));
    assert!(!call.is_finished());
    let answer = format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{"ok":true}}}}"#);
    assert!(peer.accept_answer(&answer));
    assert_eq!(call.await.unwrap(), Ok(serde_json::json!({"ok": true})));
    // A second answer with the same id finds nobody waiting.
    assert!(peer.accept_answer(&answer));
    assert_eq!(peer.lock().len(), 0);
}

#[tokio::test]
async fn an_error_answer_is_a_refusal() {
    let (peer, mut rx) = peer();
    let call = tokio::spawn({
        let peer = peer.clone();
        async move {
            peer.request("m", serde_json::json!({}), Duration::from_secs(30))
                .await
        }
    });
    let id = sent_id(&mut rx).await;
    peer.accept_answer(&format!(
        r#"{{"jsonrpc":"2.0","id":"{id}","error":{{"code":-32000,"message":"nope"}}}}"#
    ));
    assert_eq!(
        call.await.unwrap(),
        Err(PeerError::Refused("nope (-32000)".to_owned()))
    );
}

#[tokio::test]
async fn a_call_past_its_deadline_times_out_and_leaves_the_table() {
    let (peer, mut rx) = peer();
    let call = peer.request("m", serde_json::json!({}), Duration::from_millis(50));
    let (answer, _) = tokio::join!(call, sent_id(&mut rx));
    assert_eq!(answer, Err(PeerError::Timeout(Duration::from_millis(50))));
    assert_eq!(peer.lock().len(), 0);
}

#[tokio::test]
async fn closing_fails_waiting_calls_at_once_and_later_ones_too() {
    let (peer, mut rx) = peer();
    let call = tokio::spawn({
        let peer = peer.clone();
        async move {
            peer.request("m", serde_json::json!({}), Duration::from_secs(3600))
                .await
        }
    });
    sent_id(&mut rx).await;
    peer.close();
    assert_eq!(call.await.unwrap(), Err(PeerError::Gone));
    assert!(peer.is_gone());
    assert_eq!(
        peer.request("m", serde_json::json!({}), Duration::from_secs(1))
            .await,
        Err(PeerError::Gone)
    );
}

#[tokio::test]
async fn the_table_is_bounded() {
    let (peer, _rx) = peer();
    let mut calls = Vec::new();
    for _ in 0..MAX_PENDING_REQUESTS {
        let peer = peer.clone();
        calls.push(tokio::spawn(async move {
            peer.request("m", serde_json::json!({}), Duration::from_secs(3600))
                .await
        }));
    }
    while peer.lock().len() < MAX_PENDING_REQUESTS {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        peer.request("m", serde_json::json!({}), Duration::from_secs(1))
            .await,
        Err(PeerError::TooMany(MAX_PENDING_REQUESTS))
    );
    peer.close();
    for call in calls {
        assert_eq!(call.await.unwrap(), Err(PeerError::Gone));
    }
}
