//! Request bodies and event assembly of the Anthropic format.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::ProviderKind;
use crate::openai::tests::{history, history_with_image, provider, tools};

fn body_json(messages: &[Message]) -> serde_json::Value {
    let provider = provider(ProviderKind::Anthropic, "https://api.anthropic.com");
    let tools = tools();
    let request = ChatRequest {
        session_id: "ses_1",
        system: "be brief",
        messages,
        tools: &tools,
    };
    serde_json::from_slice(&request_body(&provider, &request).unwrap()).unwrap()
}

#[test]
fn body_shape() {
    let mut messages = history();
    messages.push(Message::user("and now?".to_owned()));
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(
        body_json(&messages),
        json!({
            "model": "m",
            "max_tokens": DEFAULT_MAX_TOKENS,
            "stream": true,
            "system": [{"type": "text", "text": "be brief", "cache_control": ephemeral}],
            "tools": [{"name": "ls", "description": "List files",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "list files"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "c1", "name": "ls", "input": {"path": "."}},
                    {"type": "tool_use", "id": "c2", "name": "read", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "a.txt"},
                    {"type": "tool_result", "tool_use_id": "c2", "content": "bad args", "is_error": true},
                    {"type": "text", "text": "and now?", "cache_control": ephemeral}
                ]}
            ]
        })
    );
}

#[test]
fn tool_images_are_image_blocks_inside_the_tool_result() {
    let body = body_json(&history_with_image());
    assert_eq!(
        body["messages"][2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "c1", "content": [
            {"type": "text", "text": "a.txt"},
            {"type": "image", "source": {
                "type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
        ]})
    );
    // A result without images keeps its plain string content (the bytes of older sessions).
    assert_eq!(body["messages"][2]["content"][1]["content"], "bad args");
}

#[test]
fn cache_breakpoint_moves_to_the_last_block_only() {
    let messages = history();
    let body = body_json(&messages);
    let last = &body["messages"][2]["content"][1];
    assert_eq!(last["cache_control"], json!({"type": "ephemeral"}));
    let text = body.to_string();
    assert_eq!(text.matches("cache_control").count(), 2, "{text}");
}

/// Feeds SSE data payloads up to `message_stop`.
fn assemble(payloads: &[&str]) -> (Completion, Vec<String>) {
    let mut assembler = Assembler::default();
    let mut deltas = Vec::new();
    let mut done = false;
    for payload in payloads {
        assert!(!done, "data after message_stop");
        done = assembler
            .on_data(payload, &mut |text| deltas.push(text))
            .unwrap_or_else(|_| panic!("rejected {payload}"));
    }
    assert!(done, "no message_stop");
    (assembler.finish(), deltas)
}

#[test]
fn assembles_text_tools_and_usage() {
    let (completion, deltas) = assemble(&[
        r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":20,"cache_read_input_tokens":70,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"ping"}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me "}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"look."}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"ls","input":{}}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\":"}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\".\"}"}}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_2","name":"pwd","input":{}}}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}"#,
        r#"{"type":"content_block_stop","index":2}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    assert_eq!(deltas, ["Let me ", "look."]);
    assert_eq!(
        completion,
        Completion {
            content: "Let me look.".to_owned(),
            tool_calls: vec![
                ToolCall {
                    id: "toolu_1".to_owned(),
                    name: "ls".to_owned(),
                    arguments: "{\"path\":\".\"}".to_owned(),
                },
                ToolCall {
                    id: "toolu_2".to_owned(),
                    name: "pwd".to_owned(),
                    arguments: "{}".to_owned(),
                },
            ],
            finish_reason: Some("tool_use".to_owned()),
            usage: Usage {
                input_tokens: 100,
                output_tokens: 42,
                cached_input_tokens: 70,
                cache_creation_input_tokens: 20,
                estimated: false,
            },
        }
    );
}

#[test]
fn error_event_and_unknown_blocks() {
    let mut assembler = Assembler::default();
    let mut ignore = |_: String| {};
    let thinking = r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#;
    assert!(!assembler.on_data(thinking, &mut ignore).ok().unwrap());
    assert!(!assembler.output_started());
    let error = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    match assembler.on_data(error, &mut ignore) {
        Err(StreamError::Provider { message, overflow }) => {
            assert_eq!(message, "Overloaded");
            assert!(!overflow);
        }
        _ => panic!("error event not reported"),
    }
    let mut assembler = Assembler::default();
    let overflow = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
    assert!(matches!(
        assembler.on_data(overflow, &mut ignore),
        Err(StreamError::Provider { overflow: true, .. })
    ));
}

#[test]
fn usage_is_reported_only_when_a_count_came() {
    let mut assembler = Assembler::default();
    let mut ignore = |_: String| {};
    let start = r#"{"type":"message_start","message":{"id":"m","content":[],"usage":{}}}"#;
    assert!(!assembler.on_data(start, &mut ignore).ok().unwrap());
    let delta = r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"}}"#;
    assert!(!assembler.on_data(delta, &mut ignore).ok().unwrap());
    assert!(!assembler.usage_reported());
    assert!(assembler.finish().cut_at_output_limit());
    let mut assembler = Assembler::default();
    let delta = r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}"#;
    assert!(!assembler.on_data(delta, &mut ignore).ok().unwrap());
    assert!(assembler.usage_reported());
}
