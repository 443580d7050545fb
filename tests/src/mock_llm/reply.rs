//! A scripted reply of the mock LLM: what to say (text, tool calls, an error) and how to say it
//! (fragmented, cut, delayed, stalled). Builders for tests, serde for script files.

use serde::{Deserialize, Deserializer};

/// One scripted reply, rendered in the format of whichever endpoint the request hit.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Reply {
    /// Text of the reply (may be empty when there are tool calls).
    #[serde(default)]
    pub text: String,
    /// More text of the same message, streamed only once the test calls
    /// [`super::MockLlm::release`]: the stream holds after `text` (a client shows a half line,
    /// or a model that has not answered yet, for as long as the test needs).
    pub held_text: Option<String>,
    /// Reasoning streamed before the text (`reasoning_content` deltas; a `thinking` block).
    #[serde(default)]
    pub thinking: String,
    #[serde(default)]
    pub tool_calls: Vec<MockToolCall>,
    /// Answer with this HTTP error instead of a stream.
    pub error: Option<MockError>,
    /// `Retry-After` header (seconds) on an error reply.
    pub retry_after_secs: Option<u64>,
    /// Extra response headers, sent as given (e.g. a hostile `Retry-After: 1e300`).
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// Split text and tool-call arguments into many small pieces; interleave tool calls (OpenAI).
    #[serde(default)]
    pub fragmented: bool,
    /// Abort the connection after this many SSE events, before the final ones.
    pub cut_after_events: Option<usize>,
    /// Wait this long before each SSE event.
    #[serde(default)]
    pub delay_ms: u64,
    /// Token usage to report; defaults to 10 in, 5 out, 0 cached.
    pub usage: Option<MockUsage>,
    /// Report no usage at all (llama.cpp's server sends none): no `usage` chunk (OpenAI), no
    /// token counts in `message_start`/`message_delta` (Anthropic).
    #[serde(default)]
    pub no_usage: bool,
    /// Answer `200 OK` and then this error inside the stream, before any output (OpenAI: a
    /// `data: {"error": …}` line, as llama.cpp sends a context overflow; Anthropic: an
    /// `error` event). The status is only the error's `code`.
    pub stream_error: Option<MockError>,
    /// End as a model stopped at its output token limit: `finish_reason: "length"` (OpenAI),
    /// `stop_reason: "max_tokens"` (Anthropic).
    #[serde(default)]
    pub cut_at_limit: bool,
    /// Hold the response, headers included, until the client goes away.
    #[serde(default)]
    pub stall_before_headers: bool,
    /// Send the headers, then nothing until the client goes away.
    #[serde(default)]
    pub stall: bool,
    /// Send this many SSE events, then nothing until the client goes away (mid-stream).
    pub stall_after_events: Option<usize>,
    /// Answer only once the mock has recorded this many requests in all (a gate: e.g. two
    /// subagents' requests must both be in flight before either is answered).
    pub after_requests: Option<usize>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockToolCall {
    pub id: String,
    pub name: String,
    /// The raw arguments text; a script file may give a JSON object instead of a string.
    #[serde(deserialize_with = "string_or_json")]
    pub arguments: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockError {
    pub status: u16,
    pub message: String,
}

/// Usage as both formats report it: `input` includes `cached`.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockUsage {
    pub input: u64,
    pub output: u64,
    #[serde(default)]
    pub cached: u64,
}

impl Reply {
    /// A plain text reply.
    pub fn text(text: impl Into<String>) -> Self {
        Reply {
            text: text.into(),
            ..Reply::default()
        }
    }

    /// One tool call with JSON arguments.
    pub fn tool_call(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: serde_json::Value,
    ) -> Self {
        Reply::tool_calls(vec![(id.into(), name.into(), arguments.to_string())])
    }

    /// Several tool calls: (id, name, raw arguments text).
    pub fn tool_calls<I, N, A>(calls: Vec<(I, N, A)>) -> Self
    where
        I: Into<String>,
        N: Into<String>,
        A: Into<String>,
    {
        Reply {
            tool_calls: calls
                .into_iter()
                .map(|(id, name, arguments)| MockToolCall {
                    id: id.into(),
                    name: name.into(),
                    arguments: arguments.into(),
                })
                .collect(),
            ..Reply::default()
        }
    }

    /// An HTTP error with a provider-shaped JSON body.
    pub fn error(status: u16, message: impl Into<String>) -> Self {
        Reply {
            error: Some(MockError {
                status,
                message: message.into(),
            }),
            ..Reply::default()
        }
    }

    /// Headers, then silence until the client goes away.
    pub fn stall() -> Self {
        Reply {
            stall: true,
            ..Reply::default()
        }
    }

    /// Headers never come: the request waits until the client goes away.
    pub fn stall_before_headers() -> Self {
        Reply {
            stall_before_headers: true,
            ..Reply::default()
        }
    }

    /// `200 OK`, then `message` as an error inside the stream (see `stream_error`).
    pub fn stream_error(message: impl Into<String>) -> Self {
        Reply {
            stream_error: Some(MockError {
                status: 400,
                message: message.into(),
            }),
            ..Reply::default()
        }
    }

    /// Report no usage (see `no_usage`).
    pub fn without_usage(mut self) -> Self {
        self.no_usage = true;
        self
    }

    /// End at the output limit (see `cut_at_limit`).
    pub fn cut_at_limit(mut self) -> Self {
        self.cut_at_limit = true;
        self
    }

    /// Stream `thinking` as reasoning before the reply.
    pub fn with_thinking(mut self, thinking: impl Into<String>) -> Self {
        self.thinking = thinking.into();
        self
    }

    /// Stream `text`, hold until [`super::MockLlm::release`], then stream `rest` as more of
    /// the same message.
    pub fn held(text: impl Into<String>, rest: impl Into<String>) -> Self {
        Reply {
            text: text.into(),
            held_text: Some(rest.into()),
            ..Reply::default()
        }
    }

    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = text.into();
        self
    }

    /// Adds a response header, sent as given.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn retry_after_secs(mut self, secs: u64) -> Self {
        self.retry_after_secs = Some(secs);
        self
    }

    pub fn fragmented(mut self) -> Self {
        self.fragmented = true;
        self
    }

    pub fn cut_after_events(mut self, events: usize) -> Self {
        self.cut_after_events = Some(events);
        self
    }

    pub fn stall_after_events(mut self, events: usize) -> Self {
        self.stall_after_events = Some(events);
        self
    }

    pub fn after_requests(mut self, count: usize) -> Self {
        self.after_requests = Some(count);
        self
    }

    pub fn delay_ms(mut self, ms: u64) -> Self {
        self.delay_ms = ms;
        self
    }

    pub fn usage(mut self, input: u64, output: u64, cached: u64) -> Self {
        self.usage = Some(MockUsage {
            input,
            output,
            cached,
        });
        self
    }

    pub(crate) fn usage_or_default(&self) -> MockUsage {
        self.usage.unwrap_or(MockUsage {
            input: 10,
            output: 5,
            cached: 0,
        })
    }
}

fn string_or_json<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(match serde_json::Value::deserialize(deserializer)? {
        serde_json::Value::String(text) => text,
        other => other.to_string(),
    })
}
