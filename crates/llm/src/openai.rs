//! The OpenAI-compatible chat completions format: request bodies and the streamed reply.
//!
//! Bodies are built from structs whose field order is fixed and whose last field is the message
//! list, so the body of a longer history is a byte-exact extension of the shorter one's (up to
//! the end of its messages): prefix caches keep hitting.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ProviderConfig;
use super::{ChatRequest, Completion, StreamError};
use agentd_core::conversation::{Message, ToolCall, ToolImage, Usage};

/// Serialises the request body for `POST {base_url}/chat/completions`.
pub(crate) fn request_body(
    provider: &ProviderConfig,
    request: &ChatRequest<'_>,
) -> serde_json::Result<Vec<u8>> {
    // api.openai.com wants the new name (reasoning models reject `max_tokens`); the compatible
    // servers (Ollama, vLLM, llama.cpp) all know `max_tokens`.
    let (max_completion_tokens, max_tokens) = if provider.base_url.contains("api.openai.com") {
        (provider.max_output_tokens, None)
    } else {
        (None, provider.max_output_tokens)
    };
    let body = Body {
        model: &provider.model,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        prompt_cache_key: Some(request.session_id).filter(|id| !id.is_empty()),
        reasoning_effort: provider.reasoning_effort.as_deref(),
        max_completion_tokens,
        max_tokens,
        tools: request
            .tools
            .iter()
            .map(|tool| Tool {
                kind: "function",
                function: Function {
                    name: &tool.name,
                    description: &tool.description,
                    parameters: &tool.input_schema,
                },
            })
            .collect(),
        messages: wire_messages(request.system, request.messages),
    };
    serde_json::to_vec(&body)
}

fn wire_messages<'a>(system: &'a str, messages: &'a [Message]) -> Vec<WireMessage<'a>> {
    let mut wire: Vec<WireMessage<'a>> = Vec::with_capacity(messages.len() + 1);
    if !system.is_empty() {
        wire.push(WireMessage::plain("system", system));
    }
    // Images of tool results wait for the end of the run of tool messages: chat completions
    // take images only in user messages, and nothing may come between an assistant's tool
    // calls and their results.
    let mut pending_images: Vec<ImagePart> = Vec::new();
    for message in messages {
        if !matches!(message, Message::Tool { .. }) {
            flush_images(&mut wire, &mut pending_images);
        }
        match message {
            Message::User { content, images } if images.is_empty() => {
                wire.push(WireMessage::plain("user", content))
            }
            Message::User { content, images } => {
                let text = (!content.is_empty()).then(|| ImagePart::Text {
                    text: content.clone(),
                });
                let parts = text.into_iter().chain(images.iter().map(image_part));
                wire.push(WireMessage {
                    role: "user",
                    content: WireContent::Parts(parts.collect()),
                    tool_calls: Vec::new(),
                    tool_call_id: None,
                });
            }
            Message::Assistant {
                content,
                tool_calls,
            } => wire.push(WireMessage {
                role: "assistant",
                content: WireContent::Text(content),
                tool_calls: tool_calls
                    .iter()
                    .map(|call| WireToolCall {
                        id: &call.id,
                        kind: "function",
                        function: WireFunctionCall {
                            name: &call.name,
                            arguments: &call.arguments,
                        },
                    })
                    .collect(),
                tool_call_id: None,
            }),
            Message::Tool {
                tool_call_id,
                tool_name,
                content,
                images,
                ..
            } => {
                wire.push(WireMessage {
                    role: "tool",
                    content: WireContent::Text(content),
                    tool_calls: Vec::new(),
                    tool_call_id: Some(tool_call_id),
                });
                if !images.is_empty() {
                    pending_images.push(ImagePart::Text {
                        text: format!(
                            "[images returned by the tool call {tool_call_id} ({tool_name})]"
                        ),
                    });
                    pending_images.extend(images.iter().map(image_part));
                }
            }
        }
    }
    flush_images(&mut wire, &mut pending_images);
    wire
}

fn image_part(image: &ToolImage) -> ImagePart {
    ImagePart::ImageUrl {
        image_url: ImageUrl {
            url: format!("data:{};base64,{}", image.mime_type, image.data),
        },
    }
}

/// The images of the tool results just pushed, as one user message after them.
fn flush_images(wire: &mut Vec<WireMessage<'_>>, pending: &mut Vec<ImagePart>) {
    if pending.is_empty() {
        return;
    }
    wire.push(WireMessage {
        role: "user",
        content: WireContent::Parts(std::mem::take(pending)),
        tool_calls: Vec::new(),
        tool_call_id: None,
    });
}

/// Field order is part of the contract: the messages come last.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    messages: Vec<WireMessage<'a>>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a serde_json::Value,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: WireContent<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

impl<'a> WireMessage<'a> {
    fn plain(role: &'static str, content: &'a str) -> Self {
        WireMessage {
            role,
            content: WireContent::Text(content),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A message's content: a string (every message but the images of tool results, so the
/// bytes of a history without images are what they always were) or content parts.
#[derive(Serialize)]
#[serde(untagged)]
enum WireContent<'a> {
    Text(&'a str),
    Parts(Vec<ImagePart>),
}

/// A content part of a user message with images: the user's own, or tool results'.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ImagePart {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Serialize)]
struct ImageUrl {
    /// A `data:` URL holding the base64 image.
    url: String,
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    /// The raw text as the model wrote it, so the history replays byte for byte.
    arguments: &'a str,
}

/// Assembles a streamed reply from `chat.completion.chunk`s.
#[derive(Default)]
pub(crate) struct Assembler {
    content: String,
    /// Tool calls by their stream `index`; fragments of several calls may interleave.
    calls: BTreeMap<u64, PartialCall>,
    finish_reason: Option<String>,
    usage: Usage,
    /// A `usage` object came (llama.cpp's server sends none: then the usage is estimated).
    usage_reported: bool,
    /// Reasoning text received since `take_thinking` (`reasoning_content` or `reasoning`
    /// deltas of OpenAI-compatible servers): shown, never part of the conversation.
    thinking: String,
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

impl Assembler {
    /// Handles one SSE `data` payload; returns true on `[DONE]`.
    pub(crate) fn on_data(
        &mut self,
        data: &str,
        emit_text: &mut dyn FnMut(String),
    ) -> Result<bool, StreamError> {
        if data.trim() == "[DONE]" {
            return Ok(true);
        }
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|error| StreamError::Invalid(format!("bad chunk ({error}): {data}")))?;
        if let Some(error) = chunk.error {
            return Err(StreamError::provider(&error));
        }
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            for reasoning in [choice.delta.reasoning_content, choice.delta.reasoning]
                .into_iter()
                .flatten()
            {
                self.thinking.push_str(&reasoning);
            }
            if let Some(text) = choice.delta.content.filter(|t| !t.is_empty()) {
                self.content.push_str(&text);
                emit_text(text);
            }
            for fragment in choice.delta.tool_calls {
                let index = fragment.index.unwrap_or(self.calls.len() as u64);
                let call = self.calls.entry(index).or_default();
                if let Some(id) = fragment.id.filter(|id| !id.is_empty())
                    && call.id.is_empty()
                {
                    call.id = id;
                }
                if let Some(function) = fragment.function {
                    if let Some(name) = function.name.filter(|n| !n.is_empty())
                        && call.name.is_empty()
                    {
                        call.name = name;
                    }
                    if let Some(arguments) = function.arguments {
                        call.arguments.push_str(&arguments);
                    }
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
        }
        if let Some(usage) = chunk.usage {
            self.usage_reported = true;
            self.usage = Usage {
                input_tokens: usage.prompt_tokens.unwrap_or(0),
                output_tokens: usage.completion_tokens.unwrap_or(0),
                cached_input_tokens: usage
                    .prompt_tokens_details
                    .and_then(|details| details.cached_tokens)
                    .unwrap_or(0),
                cache_creation_input_tokens: 0,
                estimated: false,
            };
        }
        Ok(false)
    }

    /// Text or a tool call reached the caller: the call can no longer be retried.
    /// The reasoning text received since the last call, if any.
    pub(crate) fn take_thinking(&mut self) -> Option<String> {
        (!self.thinking.is_empty()).then(|| std::mem::take(&mut self.thinking))
    }

    pub(crate) fn output_started(&self) -> bool {
        !self.content.is_empty() || !self.calls.is_empty()
    }

    pub(crate) fn usage_reported(&self) -> bool {
        self.usage_reported
    }

    /// Some servers end without `[DONE]`; once the finish reason came, the reply is whole.
    pub(crate) fn complete_on_eof(&self) -> bool {
        self.finish_reason.is_some()
    }

    pub(crate) fn finish(self) -> Completion {
        let tool_calls = self
            .calls
            .into_iter()
            .map(|(index, call)| ToolCall {
                id: if call.id.is_empty() {
                    format!("call_{index}")
                } else {
                    call.id
                },
                name: call.name,
                arguments: if call.arguments.trim().is_empty() {
                    "{}".to_owned()
                } else {
                    call.arguments
                },
            })
            .collect();
        Completion {
            content: self.content,
            tool_calls,
            finish_reason: self.finish_reason,
            usage: self.usage,
        }
    }
}

/// The provider's message from an `{"error": …}` value (an object with `message`, or a string).
pub(crate) fn error_text(error: &serde_json::Value) -> String {
    match error {
        serde_json::Value::String(text) => text.clone(),
        serde_json::Value::Object(fields) => match fields.get("message") {
            Some(serde_json::Value::String(text)) => text.clone(),
            _ => error.to_string(),
        },
        other => other.to_string(),
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<ChunkUsage>,
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: u64,
    #[serde(default)]
    delta: Delta,
    finish_reason: Option<String>,
}

#[derive(Default, Deserialize)]
struct Delta {
    content: Option<String>,
    /// DeepSeek, vLLM, llama.cpp.
    reasoning_content: Option<String>,
    /// Ollama, OpenRouter.
    reasoning: Option<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    tool_calls: Vec<ToolCallFragment>,
}

#[derive(Deserialize)]
struct ToolCallFragment {
    index: Option<u64>,
    id: Option<String>,
    function: Option<FunctionFragment>,
}

#[derive(Deserialize)]
struct FunctionFragment {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct ChunkUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Deserialize)]
struct PromptTokensDetails {
    cached_tokens: Option<u64>,
}

fn null_as_empty<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
#[path = "openai_tests.rs"]
pub(crate) mod tests;
