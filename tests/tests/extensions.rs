//! Extensions over the socket end to end: the example extension (`examples/extension.py`, run
//! with python3) registers a tool the model calls, blocks a `toolCall`, rewrites a
//! `toolResult`, transforms and refuses prompts (`input`), cuts a stream off, and its tool
//! leaves the session with its connection (an in-flight call errors). In-process extensions
//! (`FakeExtension`) rewrite a request's messages and body, are skipped with a warning when
//! they are late or answer junk, and a hostile client's answers break nothing.

use agentd_tests::extension::{ExampleExtension, FakeExtension};
use agentd_tests::mock_llm::{Format, RecordedRequest, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::event::{Event, RunStatus};
use serde_json::{Value, json};

fn tool_names(format: Format, request: &RecordedRequest) -> Vec<String> {
    let tools = request.json["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    tools
        .iter()
        .filter_map(|tool| match format {
            Format::OpenAi => tool["function"]["name"].as_str(),
            Format::Anthropic => tool["name"].as_str(),
        })
        .map(str::to_owned)
        .collect()
}

fn warnings(events: &[Envelope]) -> Vec<String> {
    events
        .iter()
        .filter_map(|envelope| match &envelope.event {
            Event::Warning { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

async fn example_tool_is_called_and_its_result_reaches_the_model(format: Format) {
    let scenario = Scenario::start(format).await;
    let example = ExampleExtension::start(scenario.daemon.socket(), &[]).await;
    assert!(example.extension_id.starts_with("ext_"));
    scenario.mock.push(Reply::tool_call(
        "c1",
        "ext__example__shout",
        json!({"text": "quiet words"}),
    ));
    scenario.mock.push(Reply::text("done"));
    let (mut client, session) = scenario.session().await;
    client.prompt(&session, "shout it").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let requests = scenario.mock.requests();
    assert!(
        tool_names(format, &requests[0]).contains(&"ext__example__shout".to_owned()),
        "{:?}",
        tool_names(format, &requests[0])
    );
    assert_eq!(
        request_tool_results(format, &requests[1]),
        [("c1".to_owned(), "QUIET WORDS".to_owned())]
    );
    // The tools joined the session's set: recorded, so the prefix change is explicit.
    let added: Vec<String> = events
        .iter()
        .filter_map(|envelope| match &envelope.event {
            Event::ToolsChanged { added, .. } => Some(added.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(added, ["ext__example__hold", "ext__example__shout"]);
}
both_formats!(example_tool_is_called_and_its_result_reaches_the_model);

#[tokio::test]
async fn the_example_blocks_a_tool_call_and_rewrites_a_tool_result() {
    let scenario = Scenario::start(Format::OpenAi).await;
    let _example = ExampleExtension::start(scenario.daemon.socket(), &[]).await;
    let workspace = scenario.workspace();
    std::fs::create_dir(workspace.join("build")).unwrap();
    std::fs::write(workspace.join("notes.txt"), "the key is SECRET\n").unwrap();
    scenario.mock.push(Reply::tool_calls(vec![
        (
            "c1",
            "run_shell",
            json!({"command": "rm -rf build"}).to_string(),
        ),
        ("c2", "read_file", json!({"path": "notes.txt"}).to_string()),
    ]));
    scenario.mock.push(Reply::text("done"));
    let (mut client, session) = scenario.session().await;
    client.prompt(&session, "clean up and read").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert!(workspace.join("build").is_dir(), "the blocked command ran");
    let seen = request_tool_results(Format::OpenAi, &scenario.mock.requests()[1]);
    assert_eq!(seen[0].0, "c1");
    assert!(
        seen[0]
            .1
            .contains("the example extension does not let rm -rf run"),
        "{}",
        seen[0].1
    );
    assert_eq!(seen[1].0, "c2");
    assert!(seen[1].1.contains("the key is [redacted]"), "{}", seen[1].1);
    assert!(!seen[1].1.contains("SECRET"), "{}", seen[1].1);
}

#[tokio::test]
async fn the_example_transforms_one_prompt_and_refuses_another() {
    let scenario = Scenario::start(Format::OpenAi).await;
    let _example = ExampleExtension::start(scenario.daemon.socket(), &[]).await;
    scenario.mock.push(Reply::text("ok"));
    let (mut client, session) = scenario.session().await;
    client.prompt(&session, "shout: hello there").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let texts = request_user_texts(Format::OpenAi, &scenario.mock.requests()[0]);
    assert_eq!(texts, ["HELLO THERE"]);

    client.prompt(&session, "something forbidden").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Failed);
    assert!(
        run_error(&events).contains("refuses prompts that mention 'forbidden'"),
        "{}",
        run_error(&events)
    );
    assert_eq!(
        scenario.mock.requests().len(),
        1,
        "a refused prompt reached the model"
    );
}

#[tokio::test]
async fn the_example_cuts_a_streaming_answer_off_and_its_text_is_dropped() {
    let scenario = Scenario::start(Format::OpenAi).await;
    let _example = ExampleExtension::start(scenario.daemon.socket(), &[]).await;
    // The stream holds after its first part: only the cut can end it.
    scenario.mock.push(Reply::held(
        "Here it comes: STOP-STREAM and",
        " the rest nobody should read",
    ));
    scenario.mock.push(Reply::text("second answer"));
    let (mut client, session) = scenario.session().await;
    client.prompt(&session, "talk").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Cancelled);
    assert!(
        run_error(&events).contains("the answer said STOP-STREAM"),
        "{}",
        run_error(&events)
    );
    assert!(
        warnings(&events)
            .iter()
            .any(|warning| warning.contains("cut off") && warning.contains("dropped")),
        "{:?}",
        warnings(&events)
    );
    client.prompt(&session, "again").await;
    client.events_until_run_finished().await;
    let requests = scenario.mock.requests();
    let transcript = request_transcript(Format::OpenAi, &requests[1]).join("\n");
    assert!(!transcript.contains("STOP-STREAM"), "{transcript}");
}

#[tokio::test]
async fn the_tool_leaves_with_the_connection_and_the_call_in_flight_errors() {
    let scenario = Scenario::start(Format::OpenAi).await;
    let example = ExampleExtension::start(scenario.daemon.socket(), &[]).await;
    scenario
        .mock
        .push(Reply::tool_call("c1", "ext__example__hold", json!({})));
    scenario.mock.push(Reply::text("it went away"));
    let (mut client, session) = scenario.session().await;
    client.prompt(&session, "hold on").await;
    client
        .persisted_events_until(|event| matches!(event, Event::ToolStarted { .. }))
        .await;
    example.kill().await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let results = tool_results(&events);
    assert_eq!(results.len(), 1);
    assert!(results[0].2, "the call did not fail: {results:?}");
    assert!(results[0].1.contains("connection is closed"), "{results:?}");
    let requests = scenario.mock.requests();
    let names = tool_names(Format::OpenAi, &requests[1]);
    assert!(
        !names.iter().any(|name| name.starts_with("ext__")),
        "{names:?}"
    );
    let removed: Vec<String> = events
        .iter()
        .filter_map(|envelope| match &envelope.event {
            Event::ToolsChanged { removed, .. } => Some(removed.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(removed, ["ext__example__hold", "ext__example__shout"]);
}

#[tokio::test]
async fn an_extension_rewrites_one_requests_messages_and_patches_its_body() {
    let scenario = Scenario::start(Format::OpenAi).await;
    let _extension = FakeExtension::start(
        scenario.daemon.socket(),
        json!({"name": "rewriter", "events": ["context", "beforeProviderRequest"]}),
        Box::new(|request: &Value| {
            let params = &request["params"];
            Some(match params["event"].as_str() {
                Some("context") => {
                    let mut messages = params["messages"].as_array().cloned().unwrap();
                    messages.push(json!({"role": "user", "content": "from the extension"}));
                    json!({"messages": messages})
                }
                Some("beforeProviderRequest") => json!({"patch": {"temperature": 0.25}}),
                _ => json!({}),
            })
        }),
    )
    .await;
    scenario.mock.push(Reply::text("ok"));
    let (mut client, session) = scenario.session().await;
    client.prompt(&session, "hi").await;
    client.events_until_run_finished().await;
    let request = &scenario.mock.requests()[0];
    assert_eq!(
        request_user_texts(Format::OpenAi, request),
        ["hi", "from the extension"]
    );
    assert_eq!(request.json["temperature"], 0.25);
    // The history is not touched.
    let got = client
        .request(
            "session/get",
            json!({"sessionId": session, "includeHistory": true}),
        )
        .await
        .unwrap();
    let history = got["history"].to_string();
    assert!(!history.contains("from the extension"), "{history}");
}

#[tokio::test]
async fn a_late_extension_is_skipped_with_a_warning_within_the_deadline() {
    let scenario =
        Scenario::start_with(Format::OpenAi, "[extensions]\ncall_timeout_ms = 300\n").await;
    let tool = json!({"name": "slow", "description": "never answers",
        "inputSchema": {"type": "object"}, "readOnly": true});
    let mut late = FakeExtension::start(
        scenario.daemon.socket(),
        json!({"name": "late", "tools": [tool], "events": ["toolCall", "messageUpdate"]}),
        Box::new(|_: &Value| None),
    )
    .await;
    scenario.mock.push(Reply::tool_calls(vec![
        ("c1", "list_dir", json!({"path": "."}).to_string()),
        ("c2", "ext__late__slow", "{}".to_owned()),
    ]));
    scenario.mock.push(Reply::text("done"));
    let (mut client, session) = scenario.session().await;
    let started = std::time::Instant::now();
    client.prompt(&session, "go").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let warnings = warnings(&events);
    assert!(
        warnings.iter().any(|warning| warning.contains(
            "the extension \"late\" was skipped at `toolCall`: it did not answer within 300 ms"
        )),
        "{warnings:?}"
    );
    let results = tool_results(&events);
    assert!(!results[0].2, "list_dir did not run: {results:?}");
    assert!(results[1].2, "{results:?}");
    assert!(
        results[1].1.contains("did not answer within 300 ms"),
        "{results:?}"
    );
    // It was asked, and the daemon did not wait for it beyond the deadline.
    let asked: Vec<Value> = late.received();
    assert!(
        asked
            .iter()
            .any(|request| request["params"]["event"] == "toolCall"),
        "{asked:?}"
    );
}

#[tokio::test]
async fn a_hostile_clients_answers_break_nothing() {
    let scenario = Scenario::start(Format::OpenAi).await;
    // Junk for every event: wrong types, and an `arguments` that is no object.
    let _junk = FakeExtension::start(
        scenario.daemon.socket(),
        json!({"name": "junk", "events": ["toolCall", "toolResult"]}),
        Box::new(|request: &Value| {
            Some(match request["params"]["event"].as_str() {
                Some("toolCall") => json!({"arguments": [1, 2]}),
                _ => json!({"content": {"not": "text"}}),
            })
        }),
    )
    .await;
    // Answers to ids it was never sent, and garbage, on a connection of its own.
    let mut hostile = scenario.client().await;
    let lines = [
        r#"{"jsonrpc":"2.0","id":"agentd-1","result":{"cut":true}}"#,
        r#"{"jsonrpc":"2.0","id":"agentd-999999999999999999999","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":"agentd-2","error":"junk"}"#,
        r#"{"jsonrpc":"2.0","id":-4,"result":null}"#,
        r#"[{"jsonrpc":"2.0","id":"agentd-3","result":{}}]"#,
    ];
    for line in lines {
        hostile.send_line(line).await;
    }
    scenario
        .mock
        .push(Reply::tool_call("c1", "list_dir", json!({"path": "."})));
    scenario.mock.push(Reply::text("done"));
    let (mut client, session) = scenario.session().await;
    client.prompt(&session, "go").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let results = tool_results(&events);
    assert!(!results[0].2, "{results:?}");
    let warnings = warnings(&events);
    assert!(
        warnings
            .iter()
            .any(|warning| warning.contains("arguments that are not an object")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|warning| warning.contains("its answer is not what was asked for")),
        "{warnings:?}"
    );
    // Both connections are still served.
    hostile.request("daemon/status", json!({})).await.unwrap();
    client.request("daemon/status", json!({})).await.unwrap();
}

#[tokio::test]
async fn register_is_refused_without_the_capability_and_for_bad_or_taken_names() {
    let scenario = Scenario::start(Format::OpenAi).await;
    let mut plain = scenario.client().await;
    let refused = plain
        .request("extension/register", json!({"name": "x"}))
        .await
        .unwrap_err();
    assert_eq!(refused.code, i64::from(protocol::error::INVALID_REQUEST));
    assert!(
        refused.message.contains("capabilities.extensions"),
        "{}",
        refused.message
    );
    let first = FakeExtension::start(
        scenario.daemon.socket(),
        json!({"name": "taken"}),
        Box::new(|_: &Value| Some(json!({}))),
    )
    .await;
    assert!(
        first.registered["extensionId"].is_string(),
        "{}",
        first.registered
    );
    let second = FakeExtension::start(
        scenario.daemon.socket(),
        json!({"name": "taken"}),
        Box::new(|_: &Value| Some(json!({}))),
    )
    .await;
    assert_eq!(
        second.registered["error"]["code"],
        protocol::error::CONFLICT
    );
    let bad = FakeExtension::start(
        scenario.daemon.socket(),
        json!({"name": "bad__name", "scope": {"cwd": "relative/dir"}}),
        Box::new(|_: &Value| Some(json!({}))),
    )
    .await;
    assert_eq!(
        bad.registered["error"]["code"],
        protocol::error::INVALID_PARAMS
    );
    let capabilities = plain
        .request(
            "initialize",
            json!({"clientInfo": {"name": "t", "version": "0"}, "protocolVersion": protocol::PROTOCOL_VERSION}),
        )
        .await
        .unwrap();
    assert_eq!(capabilities["capabilities"]["extensions"], true);
}
