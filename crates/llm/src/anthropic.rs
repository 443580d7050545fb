//! The Anthropic messages format: request bodies and the streamed reply.
//!
//! Prompt caching: `cache_control` on the system block (which caches tools + system) and on the
//! last content block of the last message. That second breakpoint moves to the newest block on
//! each request on purpose; apart from it every body extends the previous one byte for byte.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ProviderConfig;
use super::{ChatRequest, Completion, StreamError};
use agentd_core::conversation::{Message, ToolCall, ToolImage, Usage};

/// `max_tokens` is required by the API; used when the provider config sets none.
pub(crate) const DEFAULT_MAX_TOKENS: u64 = 8192;

/// Serialises the request body for `POST {base_url}/v1/messages`.
pub(crate) fn request_body(
    provider: &ProviderConfig,
    request: &ChatRequest<'_>,
) -> serde_json::Result<Vec<u8>> {
    let system = if request.system.is_empty() {
        Vec::new()
    } else {
        vec![Block::Text {
            text: request.system,
            cache_control: Some(EPHEMERAL),
        }]
    };
    let mut messages = wire_messages(request.messages);
    if let Some(block) = messages.last_mut().and_then(|m| m.content.last_mut()) {
        block.set_cache_control();
    }
    let body = Body {
        model: &provider.model,
        max_tokens: provider.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        stream: true,
        system,
        tools: request
            .tools
            .iter()
            .map(|tool| Tool {
                name: &tool.name,
                description: &tool.description,
                input_schema: &tool.input_schema,
            })
            .collect(),
        messages,
    };
    serde_json::to_vec(&body)
}

/// Maps the history: consecutive tool results (and a user text right after them) share one user
/// message; empty text blocks, which the API rejects, are left out.
fn wire_messages(messages: &[Message]) -> Vec<WireMessage<'_>> {
    let mut wire: Vec<WireMessage<'_>> = Vec::new();
    for message in messages {
        let (role, blocks) = match message {
            Message::User { content, images } => {
                // Images first, then the text that speaks of them, as the API advises.
                let images = images.iter().map(|image| Block::Image {
                    source: image_source(image),
                    cache_control: None,
                });
                ("user", images.chain(text_block(content)).collect())
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let tool_uses = tool_calls.iter().map(|call| Block::ToolUse {
                    id: &call.id,
                    name: &call.name,
                    input: tool_input(&call.arguments),
                    cache_control: None,
                });
                let blocks: Vec<Block<'_>> =
                    text_block(content).into_iter().chain(tool_uses).collect();
                ("assistant", blocks)
            }
            Message::Tool {
                tool_call_id,
                content,
                is_error,
                images,
                ..
            } => (
                "user",
                vec![Block::ToolResult {
                    tool_use_id: tool_call_id,
                    content: tool_result_content(content, images),
                    is_error: *is_error,
                    cache_control: None,
                }],
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        let joins_previous = role == "user"
            && wire.last().is_some_and(|previous| {
                previous.role == "user"
                    && matches!(previous.content.last(), Some(Block::ToolResult { .. }))
            });
        match wire.last_mut() {
            Some(previous) if joins_previous => previous.content.extend(blocks),
            _ => wire.push(WireMessage {
                role,
                content: blocks,
            }),
        }
    }
    wire
}

/// A result's text as a plain string (the bytes of every result without images), or text and
/// image blocks when the tool returned images.
fn tool_result_content<'a>(text: &'a str, images: &'a [ToolImage]) -> ResultContent<'a> {
    if images.is_empty() {
        return ResultContent::Text(text);
    }
    let text = (!text.is_empty()).then_some(ResultBlock::Text { text });
    let images = images.iter().map(|image| ResultBlock::Image {
        source: image_source(image),
    });
    ResultContent::Blocks(text.into_iter().chain(images).collect())
}

fn image_source(image: &ToolImage) -> ImageSource<'_> {
    ImageSource {
        kind: "base64",
        media_type: &image.mime_type,
        data: &image.data,
    }
}

fn text_block(text: &str) -> Option<Block<'_>> {
    (!text.is_empty()).then_some(Block::Text {
        text,
        cache_control: None,
    })
}

/// The raw arguments as a JSON object; malformed or non-object arguments become `{}`.
fn tool_input(arguments: &str) -> serde_json::Value {
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(value @ serde_json::Value::Object(_)) => value,
        _ => serde_json::Value::Object(serde_json::Map::new()),
    }
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

/// Field order is part of the contract: the messages come last.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u64,
    stream: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<Block<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    messages: Vec<WireMessage<'a>>,
}

#[derive(Serialize)]
struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a serde_json::Value,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Clone, Copy, Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Image {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: serde_json::Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: ResultContent<'a>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

/// The content of a `tool_result`.
#[derive(Serialize)]
#[serde(untagged)]
enum ResultContent<'a> {
    Text(&'a str),
    Blocks(Vec<ResultBlock<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ResultBlock<'a> {
    Text { text: &'a str },
    Image { source: ImageSource<'a> },
}

#[derive(Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

impl Block<'_> {
    fn set_cache_control(&mut self) {
        let (Block::Text { cache_control, .. }
        | Block::Image { cache_control, .. }
        | Block::ToolUse { cache_control, .. }
        | Block::ToolResult { cache_control, .. }) = self;
        *cache_control = Some(EPHEMERAL);
    }
}

/// Assembles a streamed reply from `message_start` … `message_stop` events.
#[derive(Default)]
pub(crate) struct Assembler {
    content: String,
    /// Tool calls in block order, by content block index.
    calls: BTreeMap<u64, ToolCall>,
    stop_reason: Option<String>,
    input_tokens: u64,
    output_tokens: u64,
    cache_read_input_tokens: u64,
    cache_creation_input_tokens: u64,
    /// Some token count came (a proxy in front of a local model may send none: then the
    /// usage is estimated).
    usage_reported: bool,
    /// Thinking text received since `take_thinking` (`thinking_delta`): shown, never part of
    /// the conversation.
    thinking: String,
}

impl Assembler {
    /// The thinking text received since the last call, if any.
    pub(crate) fn take_thinking(&mut self) -> Option<String> {
        (!self.thinking.is_empty()).then(|| std::mem::take(&mut self.thinking))
    }

    /// Handles one SSE `data` payload; returns true on `message_stop`.
    pub(crate) fn on_data(
        &mut self,
        data: &str,
        emit_text: &mut dyn FnMut(String),
    ) -> Result<bool, StreamError> {
        let event: StreamEvent = serde_json::from_str(data)
            .map_err(|error| StreamError::Invalid(format!("bad event ({error}): {data}")))?;
        match event {
            StreamEvent::MessageStart { message } => self.add_usage(message.usage),
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => match content_block {
                ContentBlock::Text { text } => self.push_text(text, emit_text),
                ContentBlock::ToolUse { id, name } => {
                    self.calls.insert(
                        index,
                        ToolCall {
                            id,
                            name,
                            arguments: String::new(),
                        },
                    );
                }
                ContentBlock::Other => {}
            },
            StreamEvent::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } => self.push_text(text, emit_text),
                BlockDelta::InputJsonDelta { partial_json } => {
                    if let Some(call) = self.calls.get_mut(&index) {
                        call.arguments.push_str(&partial_json);
                    }
                }
                BlockDelta::ThinkingDelta { thinking } => self.thinking.push_str(&thinking),
                BlockDelta::Other => {}
            },
            StreamEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop_reason = Some(reason);
                }
                if let Some(usage) = usage {
                    self.add_usage(usage);
                }
            }
            StreamEvent::MessageStop => return Ok(true),
            StreamEvent::Error { error } => return Err(StreamError::provider(&error)),
            StreamEvent::ContentBlockStop | StreamEvent::Ping | StreamEvent::Other => {}
        }
        Ok(false)
    }

    fn push_text(&mut self, text: String, emit_text: &mut dyn FnMut(String)) {
        if !text.is_empty() {
            self.content.push_str(&text);
            emit_text(text);
        }
    }

    /// Later usage reports (`message_delta`) carry running totals: each field replaces.
    fn add_usage(&mut self, usage: EventUsage) {
        self.usage_reported |= usage.input_tokens.is_some() || usage.output_tokens.is_some();
        let fields = [
            (usage.input_tokens, &mut self.input_tokens),
            (usage.output_tokens, &mut self.output_tokens),
            (
                usage.cache_read_input_tokens,
                &mut self.cache_read_input_tokens,
            ),
            (
                usage.cache_creation_input_tokens,
                &mut self.cache_creation_input_tokens,
            ),
        ];
        for (value, field) in fields {
            if let Some(value) = value {
                *field = value;
            }
        }
    }

    /// Text or a tool call reached the caller: the call can no longer be retried.
    pub(crate) fn output_started(&self) -> bool {
        !self.content.is_empty() || !self.calls.is_empty()
    }

    pub(crate) fn usage_reported(&self) -> bool {
        self.usage_reported
    }

    /// A stream that ends after the stop reason but without `message_stop` is still whole.
    pub(crate) fn complete_on_eof(&self) -> bool {
        self.stop_reason.is_some()
    }

    pub(crate) fn finish(self) -> Completion {
        let tool_calls = self
            .calls
            .into_values()
            .map(|mut call| {
                if call.arguments.trim().is_empty() {
                    call.arguments = "{}".to_owned();
                }
                call
            })
            .collect();
        Completion {
            content: self.content,
            tool_calls,
            finish_reason: self.stop_reason,
            usage: Usage {
                // Counts from the endpoint: saturate rather than overflow.
                input_tokens: self
                    .input_tokens
                    .saturating_add(self.cache_read_input_tokens)
                    .saturating_add(self.cache_creation_input_tokens),
                output_tokens: self.output_tokens,
                cached_input_tokens: self.cache_read_input_tokens,
                cache_creation_input_tokens: self.cache_creation_input_tokens,
                estimated: false,
            },
        }
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: u64,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: u64,
        delta: BlockDelta,
    },
    ContentBlockStop,
    MessageDelta {
        delta: MessageDeltaBody,
        usage: Option<EventUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: serde_json::Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: EventUsage,
}

#[derive(Default, Deserialize)]
struct EventUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    /// Thinking and server-tool blocks: not part of the conversation vocabulary.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDeltaBody {
    stop_reason: Option<String>,
}

#[cfg(test)]
#[path = "anthropic_tests.rs"]
mod tests;
