//! Request bodies and chunk assembly of the OpenAI format.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::ProviderKind;
use agentd_core::conversation::ToolSpec;

pub(crate) fn provider(kind: ProviderKind, base_url: &str) -> ProviderConfig {
    ProviderConfig {
        kind,
        base_url: base_url.to_owned(),
        model: "m".to_owned(),
        ..crate::provider::tests::openai_quick_start()
    }
}

pub(crate) fn history() -> Vec<Message> {
    vec![
        Message::user("list files".to_owned()),
        Message::Assistant {
            content: "Looking.".to_owned(),
            tool_calls: vec![
                ToolCall {
                    id: "c1".to_owned(),
                    name: "ls".to_owned(),
                    arguments: "{\"path\": \".\"}".to_owned(),
                },
                ToolCall {
                    id: "c2".to_owned(),
                    name: "read".to_owned(),
                    arguments: "{bad json".to_owned(),
                },
            ],
        },
        Message::Tool {
            tool_call_id: "c1".to_owned(),
            tool_name: "ls".to_owned(),
            content: "a.txt".to_owned(),
            is_error: false,
            images: Vec::new(),
        },
        Message::Tool {
            tool_call_id: "c2".to_owned(),
            tool_name: "read".to_owned(),
            content: "bad args".to_owned(),
            is_error: true,
            images: Vec::new(),
        },
    ]
}

/// [`history`] with an image in the first tool result (an MCP tool's).
pub(crate) fn history_with_image() -> Vec<Message> {
    let mut messages = history();
    if let Some(Message::Tool { images, .. }) = messages.get_mut(2) {
        images.push(agentd_core::conversation::ToolImage {
            mime_type: "image/png".to_owned(),
            data: "iVBORw0KGgo=".to_owned(),
        });
    }
    messages
}

pub(crate) fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "ls".to_owned(),
        description: "List files".to_owned(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }]
}

fn body_json(provider: &ProviderConfig, messages: &[Message]) -> serde_json::Value {
    let tools = tools();
    let request = ChatRequest {
        session_id: "ses_1",
        system: "be brief",
        messages,
        tools: &tools,
    };
    serde_json::from_slice(&request_body(provider, &request).unwrap()).unwrap()
}

#[test]
fn body_shape() {
    let mut provider = provider(ProviderKind::OpenAi, "https://api.openai.com/v1");
    provider.reasoning_effort = Some("low".to_owned());
    provider.max_output_tokens = Some(1000);
    assert_eq!(
        body_json(&provider, &history()),
        json!({
            "model": "m",
            "stream": true,
            "stream_options": {"include_usage": true},
            "prompt_cache_key": "ses_1",
            "reasoning_effort": "low",
            "max_completion_tokens": 1000,
            "tools": [{"type": "function", "function": {
                "name": "ls", "description": "List files",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}],
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "list files"},
                {"role": "assistant", "content": "Looking.", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{\"path\": \".\"}"}},
                    {"id": "c2", "type": "function", "function": {"name": "read", "arguments": "{bad json"}}
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
                {"role": "tool", "tool_call_id": "c2", "content": "bad args"}
            ]
        })
    );
    // Compatible servers get `max_tokens`; no key-dependent fields.
    let local = body_json(
        &provider_with_url("http://localhost:11434/v1", Some(5)),
        &[],
    );
    assert_eq!(local["max_tokens"], 5);
    assert!(local.get("max_completion_tokens").is_none());
    assert!(local.get("reasoning_effort").is_none());
}

fn provider_with_url(url: &str, max: Option<u64>) -> ProviderConfig {
    let mut provider = provider(ProviderKind::OpenAi, url);
    provider.max_output_tokens = max;
    provider
}

#[test]
fn body_is_prefix_extension_of_shorter_history() {
    let provider = provider(ProviderKind::OpenAi, "http://x/v1");
    let tools = tools();
    let body = |messages: &[Message]| {
        let request = ChatRequest {
            session_id: "ses_1",
            system: "sys",
            messages,
            tools: &tools,
        };
        String::from_utf8(request_body(&provider, &request).unwrap()).unwrap()
    };
    let mut messages = history();
    let short = body(&messages);
    messages.push(Message::Assistant {
        content: "done".to_owned(),
        tool_calls: vec![],
    });
    messages.push(Message::user("thanks".to_owned()));
    let long = body(&messages);
    // The short body ends with "]}" closing the message list and the object.
    let prefix = short.strip_suffix("]}").unwrap();
    assert!(prefix.ends_with("\"tool_call_id\":\"c2\"}"), "{prefix}");
    assert!(long.starts_with(prefix), "\n{short}\n{long}");
    assert_eq!(body(&messages), long, "same input, same bytes");
}

#[test]
fn tool_images_follow_the_tool_messages_as_one_user_message() {
    let provider = provider(ProviderKind::OpenAi, "http://x/v1");
    let messages = body_json(&provider, &history_with_image())["messages"].clone();
    assert_eq!(
        messages.as_array().unwrap()[3..],
        [
            json!({"role": "tool", "tool_call_id": "c1", "content": "a.txt"}),
            json!({"role": "tool", "tool_call_id": "c2", "content": "bad args"}),
            json!({"role": "user", "content": [
                {"type": "text", "text": "[images returned by the tool call c1 (ls)]"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
            ]}),
        ]
    );
}

#[test]
fn a_history_with_images_still_extends_byte_for_byte() {
    let provider = provider(ProviderKind::OpenAi, "http://x/v1");
    let tools = tools();
    let body = |messages: &[Message]| {
        let request = ChatRequest {
            session_id: "ses_1",
            system: "sys",
            messages,
            tools: &tools,
        };
        String::from_utf8(request_body(&provider, &request).unwrap()).unwrap()
    };
    let mut messages = history_with_image();
    let short = body(&messages);
    messages.push(Message::Assistant {
        content: "a PNG".to_owned(),
        tool_calls: vec![],
    });
    let long = body(&messages);
    let prefix = short.strip_suffix("]}").unwrap();
    assert!(long.starts_with(prefix), "\n{short}\n{long}");
}

/// Feeds SSE data payloads; returns the completion, the emitted text deltas and whether output
/// had started.
fn assemble(payloads: &[&str]) -> (Completion, Vec<String>, bool) {
    let mut assembler = Assembler::default();
    let mut deltas = Vec::new();
    let mut done = false;
    for payload in payloads {
        assert!(!done, "data after [DONE]");
        done = assembler
            .on_data(payload, &mut |text| deltas.push(text))
            .unwrap_or_else(|_| panic!("rejected {payload}"));
    }
    assert!(done, "no [DONE]");
    let started = assembler.output_started();
    (assembler.finish(), deltas, started)
}

#[test]
fn assembles_text_and_usage() {
    let (completion, deltas, started) = assemble(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}],"usage":null}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":64}}}"#,
        "[DONE]",
    ]);
    assert!(started);
    assert_eq!(deltas, ["Hel", "lo"]);
    assert_eq!(
        completion,
        Completion {
            content: "Hello".to_owned(),
            tool_calls: vec![],
            finish_reason: Some("stop".to_owned()),
            usage: Usage {
                input_tokens: 100,
                output_tokens: 7,
                cached_input_tokens: 64,
                cache_creation_input_tokens: 0,
                estimated: false,
            },
        }
    );
}

#[test]
fn assembles_interleaved_tool_call_fragments() {
    let (completion, deltas, started) = assemble(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"ls","arguments":""}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"read","arguments":"{\"pa"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\""}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"th\":\"a\"}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":\".\"}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"id":"call_c","function":{"name":"noargs"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        "[DONE]",
    ]);
    assert!(started);
    assert!(deltas.is_empty());
    assert_eq!(completion.finish_reason.as_deref(), Some("tool_calls"));
    let calls: Vec<_> = completion
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_a", "ls", "{\"path\":\".\"}"),
            ("call_b", "read", "{\"path\":\"a\"}"),
            ("call_c", "noargs", "{}"),
        ]
    );
}

#[test]
fn role_chunk_is_not_output_and_errors_are_reported() {
    let mut assembler = Assembler::default();
    let mut ignore = |_: String| {};
    let role = r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#;
    assert!(!assembler.on_data(role, &mut ignore).ok().unwrap());
    assert!(!assembler.output_started());
    assert!(!assembler.complete_on_eof());
    match assembler.on_data(r#"{"error":{"message":"overloaded"}}"#, &mut ignore) {
        Err(StreamError::Provider { message, overflow }) => {
            assert_eq!(message, "overloaded");
            assert!(!overflow);
        }
        _ => panic!("error chunk not reported"),
    }
    assert!(matches!(
        assembler.on_data("not json", &mut ignore),
        Err(StreamError::Invalid(_))
    ));
}

#[test]
fn an_overflow_inside_the_stream_is_told_from_other_errors() {
    // llama.cpp's server, OpenAI's code, and a message alone.
    for (payload, expected) in [
        (
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#,
            "the request exceeds the available context size, try increasing it",
        ),
        (
            r#"{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
            "too long",
        ),
        (
            r#"{"error":"This model's maximum context length is 4096 tokens"}"#,
            "This model's maximum context length is 4096 tokens",
        ),
    ] {
        let mut assembler = Assembler::default();
        match assembler.on_data(payload, &mut |_| {}) {
            Err(StreamError::Provider { message, overflow }) => {
                assert_eq!(message, expected);
                assert!(overflow, "{payload}");
            }
            _ => panic!("error chunk not reported: {payload}"),
        }
    }
}

#[test]
fn a_reply_without_usage_says_so() {
    let mut assembler = Assembler::default();
    let stop = r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"length"}]}"#;
    assert!(!assembler.on_data(stop, &mut |_| {}).ok().unwrap());
    assert!(!assembler.usage_reported());
    let completion = assembler.finish();
    assert!(completion.cut_at_output_limit());
    let mut assembler = Assembler::default();
    let usage = r#"{"choices":[],"usage":{"prompt_tokens":0,"completion_tokens":0}}"#;
    assert!(!assembler.on_data(usage, &mut |_| {}).ok().unwrap());
    assert!(assembler.usage_reported(), "zeros reported are reported");
}
