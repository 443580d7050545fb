//! Protocol 1.0 as a contract: params accept fields this daemon does not know, request ids are
//! any JSON string or number and come back as sent, a batch inside a batch is an error, and a
//! session file of a newer format is refused by name, never misread.

use agentd_tests::harness::{Client, Daemon};
use agentd_tests::mock_llm::Format;
use agentd_tests::scenario::{Scenario, wait_until};
use serde_json::{Value, json};

/// One raw line, and the one message it is answered with.
async fn exchange(client: &mut Client, line: &str) -> Value {
    client.send_line(line).await;
    client.read_message().await
}

#[tokio::test]
async fn params_accept_fields_this_daemon_does_not_know() {
    let s = Scenario::start(Format::OpenAi).await;
    let mut client = s.client().await;
    let workspace = s.workspace();
    let later = json!({"somethingLater": {"x": 1}});
    let created = client
        .request(
            "session/create",
            json!({"cwd": workspace, "somethingLater": 1,
                   "permissionRules": {"allow": [], "somethingLater": []}}),
        )
        .await
        .expect("session/create with an unknown field");
    let session_id = created["sessionId"].as_str().expect("sessionId").to_owned();
    let calls = [
        ("daemon/status", later.clone()),
        ("session/list", json!({"limit": 5, "somethingLater": true})),
        (
            "session/get",
            json!({"sessionId": session_id, "somethingLater": true}),
        ),
        (
            "session/cancel",
            json!({"sessionId": session_id, "somethingLater": true}),
        ),
        ("approval/list", json!({"somethingLater": true})),
    ];
    for (method, params) in calls {
        let answer = client.request(method, params).await;
        assert!(answer.is_ok(), "{method}: {answer:?}");
    }
    let subscribed = client
        .request(
            "session/subscribe",
            json!({"sessionId": session_id, "afterSeq": 0, "somethingLater": 1}),
        )
        .await;
    assert!(subscribed.is_ok(), "session/subscribe: {subscribed:?}");
    let answer = client
        .request("daemon/subscribe", json!({"somethingLater": 1}))
        .await;
    assert!(answer.is_ok(), "daemon/subscribe: {answer:?}");

    // An unknown field of `initialize` itself, on a fresh connection.
    let mut fresh = Client::connect_raw(s.daemon.socket()).await.unwrap();
    let answer = fresh
        .request(
            "initialize",
            json!({"clientInfo": {"name": "new", "version": "9", "homepage": "x"},
                   "protocolVersion": protocol::PROTOCOL_VERSION, "somethingLater": 1}),
        )
        .await;
    assert!(answer.is_ok(), "initialize: {answer:?}");
}

#[tokio::test]
async fn request_ids_are_any_string_or_number_and_come_back_as_sent() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    for id in [
        "0",
        "7",
        "-1",
        "-9223372036854775808",
        "1.5",
        "1e3",
        "18446744073709551616",
        "\"\"",
        "\"a \\\"quoted\\\" id\"",
        "\"ünïcode\"",
    ] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"daemon/status"}}"#);
        client.send_line(&line).await;
        let answer = client.read_message().await;
        let sent: Value = serde_json::from_str(id).unwrap();
        assert_eq!(answer["id"], sent, "id {id}: {answer}");
        assert!(answer["result"]["pid"].is_u64(), "id {id}: {answer}");
    }
    // The same inside a batch, and for an error answer.
    let answer = exchange(
        &mut client,
        r#"[{"jsonrpc":"2.0","id":-2,"method":"daemon/status"},{"jsonrpc":"2.0","id":2.5,"method":"no/such"}]"#,
    )
    .await;
    assert_eq!(answer[0]["id"], json!(-2), "{answer}");
    assert!(answer[0]["result"]["pid"].is_u64(), "{answer}");
    assert_eq!(answer[1]["id"], json!(2.5), "{answer}");
    assert_eq!(answer[1]["error"]["code"], json!(-32601), "{answer}");
    // Anything else is not an id.
    for id in ["true", "{}", "[1]"] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"daemon/status"}}"#);
        let answer = exchange(&mut client, &line).await;
        assert_eq!(answer["id"], Value::Null, "id {id}: {answer}");
        assert_eq!(answer["error"]["code"], json!(-32600), "id {id}: {answer}");
    }
}

#[tokio::test]
async fn a_subscription_answer_carries_the_id_as_sent() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let answer = exchange(
        &mut client,
        r#"{"jsonrpc":"2.0","id":-3.25,"method":"daemon/subscribe"}"#,
    )
    .await;
    assert_eq!(answer["id"], json!(-3.25), "{answer}");
    assert!(answer.get("result").is_some(), "{answer}");
}

#[tokio::test]
async fn a_batch_inside_a_batch_is_an_error() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let answer = exchange(
        &mut client,
        r#"[[{"jsonrpc":"2.0","id":1,"method":"daemon/status"}],{"jsonrpc":"2.0","id":2,"method":"daemon/status"}]"#,
    )
    .await;
    let answers = answer.as_array().expect("a batch answer");
    assert_eq!(answers.len(), 2, "{answer}");
    assert_eq!(answers[0]["id"], Value::Null, "{answer}");
    assert_eq!(answers[0]["error"]["code"], json!(-32600), "{answer}");
    let message = answers[0]["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("batch inside a batch"), "{message}");
    assert!(answers[1]["result"]["pid"].is_u64(), "{answer}");

    // A request written as an array (positional members) is not a request either.
    let answer = exchange(&mut client, r#"[["2.0", 3, "daemon/status"]]"#).await;
    assert_eq!(answer[0]["error"]["code"], json!(-32600), "{answer}");
    assert!(answer[0].get("result").is_none(), "{answer}");
}

#[tokio::test]
async fn a_session_file_of_a_newer_format_is_refused_by_version() {
    let mut s = Scenario::start(Format::OpenAi).await;
    let (mut client, session_id) = s.session().await;
    let (_, kept) = s.session().await;
    drop(client);
    s.daemon.kill().await;
    let path = s
        .daemon
        .env
        .path("state")
        .join("agentd")
        .join("sessions")
        .join(format!("{session_id}.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(first).unwrap();
    assert_eq!(header["version"], json!(1), "{first}");
    header["version"] = json!(2);
    std::fs::write(&path, format!("{header}\n{rest}")).unwrap();

    s.daemon.restart().await;
    client = s.client().await;
    let err = client
        .request("session/get", json!({"sessionId": session_id}))
        .await
        .expect_err("a newer session file is not read");
    assert!(
        err.message.contains("format 2") && err.message.contains("format 1"),
        "{}",
        err.message
    );
    let list = client.request("session/list", json!({})).await.unwrap();
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|info| info["sessionId"].as_str())
        .collect();
    assert_eq!(ids, [kept.as_str()], "{list}");
    // The daemon's log is written by a background writer: wait for the line.
    wait_until("the refusal in the daemon's log", || {
        let log = s.daemon.log();
        log.contains(&session_id) && log.contains("format 2")
    })
    .await;
    // The file is left as it was, for a daemon that reads it.
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .starts_with(&header.to_string())
    );
}
