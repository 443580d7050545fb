//! Renders a `Reply` as the SSE events (or error body) of the OpenAI or Anthropic format.

use serde_json::{Value, json};

use super::reply::Reply;

/// The wire format, chosen by the endpoint the request hit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Format {
    OpenAi,
    Anthropic,
}

/// One SSE event: an optional `event:` name and its `data:` line.
pub(crate) struct SseEvent {
    pub name: Option<&'static str>,
    pub data: Data,
    /// Not sent: the stream waits here until the test releases it (`Reply::held`).
    pub hold: bool,
}

/// An event's data: JSON is serialised when the event is sent, not when the reply is
/// rendered, so a huge reply's headers and first events go out at once (serialising 50 MB in
/// a debug build takes seconds, past the client's timeout on a busy machine).
pub(crate) enum Data {
    Text(&'static str),
    Json(Value),
}

impl SseEvent {
    fn data(data: Value) -> Self {
        SseEvent {
            name: None,
            data: Data::Json(data),
            hold: false,
        }
    }

    fn named(name: &'static str, data: Value) -> Self {
        SseEvent {
            name: Some(name),
            data: Data::Json(data),
            hold: false,
        }
    }

    /// Where a held reply waits for the test.
    fn hold() -> Self {
        SseEvent {
            name: None,
            data: Data::Text(""),
            hold: true,
        }
    }

    pub(crate) fn to_bytes(&self) -> bytes::Bytes {
        let mut text = Vec::new();
        if let Some(name) = self.name {
            text.extend_from_slice(b"event: ");
            text.extend_from_slice(name.as_bytes());
            text.push(b'\n');
        }
        text.extend_from_slice(b"data: ");
        match &self.data {
            Data::Text(data) => text.extend_from_slice(data.as_bytes()),
            Data::Json(value) => {
                serde_json::to_writer(&mut text, value).expect("JSON to a Vec");
            }
        }
        text.extend_from_slice(b"\n\n");
        bytes::Bytes::from(text)
    }
}

/// The provider-shaped JSON body of an error reply.
pub(crate) fn error_body(format: Format, status: u16, message: &str) -> String {
    match format {
        Format::OpenAi => {
            json!({"error": {"message": message, "type": "mock_error", "code": status}})
        }
        Format::Anthropic => {
            let kind = match status {
                400 => "invalid_request_error",
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
    }
    .to_string()
}

/// All the events of a streamed reply, final ones included.
pub(crate) fn events(format: Format, reply: &Reply, model: &str) -> Vec<SseEvent> {
    if let Some(error) = &reply.stream_error {
        return stream_error_events(format, error.status, &error.message);
    }
    match format {
        Format::OpenAi => openai_events(reply, model),
        Format::Anthropic => anthropic_events(reply, model),
    }
}

/// An error inside a `200 OK` stream, before any output: llama.cpp's shape (OpenAI format,
/// with its `type` for a context overflow) or Anthropic's `error` event.
fn stream_error_events(format: Format, status: u16, message: &str) -> Vec<SseEvent> {
    match format {
        Format::OpenAi => vec![SseEvent::data(json!({"error": {
            "code": status,
            "message": message,
            "type": "exceed_context_size_error",
        }}))],
        Format::Anthropic => vec![SseEvent::named(
            "error",
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}}),
        )],
    }
}

/// Splits text into pieces: small ones when fragmented, else word by word (keeping spaces).
fn pieces(text: &str, fragmented: bool) -> Vec<String> {
    if fragmented {
        let chars: Vec<char> = text.chars().collect();
        return chars.chunks(2).map(|c| c.iter().collect()).collect();
    }
    // `split_inclusive` (the standard library's, built optimised) rather than a loop over the
    // chars: a 50 MB reply is rendered before its headers go out, within the client's timeout.
    text.split_inclusive(' ').map(str::to_owned).collect()
}

/// Tool-call arguments: whole unless fragmented.
fn argument_pieces(arguments: &str, fragmented: bool) -> Vec<String> {
    if fragmented {
        let chars: Vec<char> = arguments.chars().collect();
        chars.chunks(3).map(|c| c.iter().collect()).collect()
    } else if arguments.is_empty() {
        Vec::new()
    } else {
        vec![arguments.to_owned()]
    }
}

fn openai_events(reply: &Reply, model: &str) -> Vec<SseEvent> {
    let chunk = |delta: Value, finish_reason: Value| {
        SseEvent::data(json!({
            "id": "chatcmpl-mock",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }))
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    for piece in pieces(&reply.thinking, reply.fragmented) {
        events.push(chunk(json!({"reasoning_content": piece}), Value::Null));
    }
    for piece in pieces(&reply.text, reply.fragmented) {
        events.push(chunk(json!({"content": piece}), Value::Null));
    }
    if let Some(rest) = &reply.held_text {
        events.push(SseEvent::hold());
        for piece in pieces(rest, reply.fragmented) {
            events.push(chunk(json!({"content": piece}), Value::Null));
        }
    }
    // Round-robin over the calls so fragments of several calls interleave by index.
    let call_pieces: Vec<Vec<String>> = reply
        .tool_calls
        .iter()
        .map(|call| argument_pieces(&call.arguments, reply.fragmented))
        .collect();
    let rounds = call_pieces.iter().map(Vec::len).max().unwrap_or(0).max(1);
    for round in 0..rounds {
        for (index, (call, pieces)) in reply.tool_calls.iter().zip(&call_pieces).enumerate() {
            let arguments = pieces.get(round).cloned().unwrap_or_default();
            let fragment = if round == 0 {
                json!({"index": index, "id": call.id, "type": "function",
                       "function": {"name": call.name, "arguments": arguments}})
            } else if arguments.is_empty() {
                continue;
            } else {
                json!({"index": index, "function": {"arguments": arguments}})
            };
            events.push(chunk(json!({"tool_calls": [fragment]}), Value::Null));
        }
    }
    let finish = if reply.cut_at_limit {
        "length"
    } else if reply.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    events.push(chunk(json!({}), json!(finish)));
    let usage = reply.usage_or_default();
    if !reply.no_usage {
        events.push(SseEvent::data(json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [],
        "usage": {
            "prompt_tokens": usage.input,
            "completion_tokens": usage.output,
            "total_tokens": usage.input.saturating_add(usage.output),
            "prompt_tokens_details": {"cached_tokens": usage.cached},
        },
        })));
    }
    events.push(SseEvent {
        name: None,
        data: Data::Text("[DONE]"),
        hold: false,
    });
    events
}

fn anthropic_events(reply: &Reply, model: &str) -> Vec<SseEvent> {
    let usage = reply.usage_or_default();
    let start_usage = if reply.no_usage {
        json!({})
    } else {
        json!({
            "input_tokens": usage.input.saturating_sub(usage.cached),
            "cache_read_input_tokens": usage.cached,
            "cache_creation_input_tokens": 0,
            "output_tokens": 1,
        })
    };
    let mut events = vec![SseEvent::named(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": "msg_mock", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": start_usage,
        }}),
    )];
    let mut index = 0;
    if !reply.thinking.is_empty() {
        events.push(SseEvent::named(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "thinking", "thinking": ""}}),
        ));
        for piece in pieces(&reply.thinking, reply.fragmented) {
            events.push(SseEvent::named(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                       "delta": {"type": "thinking_delta", "thinking": piece}}),
            ));
        }
        events.push(SseEvent::named(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index,
                   "delta": {"type": "signature_delta", "signature": "mock-signature"}}),
        ));
        events.push(SseEvent::named(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    if !reply.text.is_empty() || reply.held_text.is_some() {
        events.push(SseEvent::named(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "text", "text": ""}}),
        ));
        events.push(SseEvent::named("ping", json!({"type": "ping"})));
        let text_delta = |piece: String| {
            SseEvent::named(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                       "delta": {"type": "text_delta", "text": piece}}),
            )
        };
        events.extend(
            pieces(&reply.text, reply.fragmented)
                .into_iter()
                .map(text_delta),
        );
        if let Some(rest) = &reply.held_text {
            events.push(SseEvent::hold());
            events.extend(pieces(rest, reply.fragmented).into_iter().map(text_delta));
        }
        events.push(SseEvent::named(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for call in &reply.tool_calls {
        events.push(SseEvent::named(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}}),
        ));
        for piece in argument_pieces(&call.arguments, reply.fragmented) {
            events.push(SseEvent::named(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                       "delta": {"type": "input_json_delta", "partial_json": piece}}),
            ));
        }
        events.push(SseEvent::named(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    let stop_reason = if reply.cut_at_limit {
        "max_tokens"
    } else if reply.tool_calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    let mut delta = json!({"type": "message_delta",
           "delta": {"stop_reason": stop_reason, "stop_sequence": null},
           "usage": {"output_tokens": usage.output}});
    if reply.no_usage
        && let Some(fields) = delta.as_object_mut()
    {
        fields.remove("usage");
    }
    events.push(SseEvent::named("message_delta", delta));
    events.push(SseEvent::named(
        "message_stop",
        json!({"type": "message_stop"}),
    ));
    events
}

/// The last text the user wrote, for echo mode.
pub(crate) fn last_user_text(body: &Value) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    for message in messages.iter().rev() {
        if message["role"] != "user" {
            continue;
        }
        match &message["content"] {
            Value::String(text) => return text.clone(),
            Value::Array(parts) => {
                let text = parts
                    .iter()
                    .rev()
                    .find(|part| part["type"] == "text")
                    .and_then(|part| part["text"].as_str());
                if let Some(text) = text {
                    return text.to_owned();
                }
            }
            _ => {}
        }
    }
    String::new()
}
