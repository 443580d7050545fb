//! LLM providers: OpenAI-compatible chat completions and Anthropic messages, streamed over SSE.
//!
//! `LlmClient::complete` sends one request, streams text deltas to the caller, assembles tool
//! calls and usage, and retries what may succeed on a second try (connect errors, 408/409/429/5xx
//! and streams cut before any output) with backoff. Cancelling is dropping the future: nothing is
//! spawned, so dropping it closes the connection and stops everything.
//!
//! A provider that sends no byte for its idle limit (`[llm] stream_idle_secs`), for the headers
//! or mid-stream, has its stream counted as cut; a reply without usage gets an estimate
//! (`usage_estimate`); an overflow refused inside a `200 OK` stream is
//! `LlmError::RejectedInStream`, a context overflow like a 400.

mod anthropic;
mod error;
mod http;
mod openai;
mod prices;
mod provider;
mod retry;
mod stream;
pub mod usage_estimate;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, USER_AGENT};
use sse_stream::SseStream;

use self::stream::{Assembler, StreamError};

pub use self::error::LlmError;
pub use self::http::HttpClients;
pub use self::prices::{FilePrices, MAX_PRICE_PER_MTOK, Prices};
pub use self::provider::{MissingApiKey, ProviderConfig, ProviderKind};
use agentd_core::conversation::{Message, ToolCall, ToolSpec, Usage};

/// One model call: the frozen system prompt, the history and the tools on offer.
#[derive(Clone, Copy, Debug)]
pub struct ChatRequest<'a> {
    /// Sent as OpenAI's `prompt_cache_key` so a session's requests share a cache.
    pub session_id: &'a str,
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
}

/// What happens while a call is in flight.
#[derive(Clone, Debug, PartialEq)]
pub enum LlmEvent {
    /// A piece of the reply text, in order.
    TextDelta(String),
    /// A piece of the model's reasoning (thinking), in order: shown, not kept.
    ThinkingDelta(String),
    /// The previous attempt failed before any output; the next starts after `delay`.
    Retrying {
        attempt: u32,
        delay: Duration,
        message: String,
    },
}

/// The whole reply of one call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Completion {
    pub content: String,
    /// In the model's order; `arguments` is the raw JSON text (`"{}"` when the model sent none).
    pub tool_calls: Vec<ToolCall>,
    /// The provider's own word: `stop`, `tool_calls`, `length`, `end_turn`, `tool_use`, …
    pub finish_reason: Option<String>,
    /// As the provider reported it, else estimated (`usage.estimated`).
    pub usage: Usage,
}

impl Completion {
    /// The model stopped at its output token limit (OpenAI's `finish_reason: "length"`,
    /// Anthropic's `stop_reason: "max_tokens"`): the answer, and its last tool call's
    /// arguments, may be cut.
    pub fn cut_at_output_limit(&self) -> bool {
        matches!(self.finish_reason.as_deref(), Some("length" | "max_tokens"))
    }
}

/// A client for one provider and model. Cheap to clone.
#[derive(Clone, Debug)]
pub struct LlmClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    provider: ProviderConfig,
    http: HttpClients,
    /// The full endpoint URL, named in errors.
    url: String,
}

/// How long to wait for a TCP/TLS connection before the attempt counts as failed (and retried).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Error bodies longer than this are cut in messages.
const MAX_ERROR_MESSAGE_CHARS: usize = 600;
const ANTHROPIC_VERSION: &str = "2023-06-01";

impl LlmClient {
    pub fn new(provider: ProviderConfig, http: HttpClients) -> Self {
        let base = provider.base_url.trim_end_matches('/');
        let url = match provider.kind {
            ProviderKind::OpenAi => format!("{base}/chat/completions"),
            // Accept a base URL given with or without the version segment.
            ProviderKind::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
            ProviderKind::Anthropic => format!("{base}/v1/messages"),
        };
        LlmClient {
            inner: Arc::new(Inner {
                provider,
                http,
                url,
            }),
        }
    }

    /// Builds an HTTP client with the system's TLS roots (MCP servers over HTTP; providers use
    /// `HttpClients`, which reads the roots only for `https://`). Blocking: reads the
    /// certificate stores. Builds the HTTP client to share between providers: a connect timeout but no total
    /// timeout (streams run long; idle streams are caught per event instead).
    pub fn http_client() -> anyhow::Result<reqwest::Client> {
        // reqwest is built without a crypto provider; an error here only means another part of
        // the process installed one already.
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|error| {
                anyhow::anyhow!("cannot build the HTTP client: {}", error_chain(&error))
            })?;
        Ok(client)
    }

    /// The same provider and model, its answers at most `max` tokens (below its own limit).
    pub fn with_max_output_tokens(&self, max: u64) -> LlmClient {
        let mut provider = self.inner.provider.clone();
        provider.max_output_tokens =
            Some(provider.max_output_tokens.map_or(max, |own| own.min(max)));
        LlmClient {
            inner: Arc::new(Inner {
                provider,
                http: self.inner.http.clone(),
                url: self.inner.url.clone(),
            }),
        }
    }

    pub fn model(&self) -> &str {
        &self.inner.provider.model
    }

    pub fn provider_name(&self) -> &str {
        &self.inner.provider.name
    }

    pub fn provider(&self) -> &ProviderConfig {
        &self.inner.provider
    }

    /// The exact bytes `complete` would send for `request`.
    pub fn request_body(&self, request: &ChatRequest<'_>) -> Result<Vec<u8>, LlmError> {
        let provider = &self.inner.provider;
        let body = match provider.kind {
            ProviderKind::OpenAi => openai::request_body(provider, request),
            ProviderKind::Anthropic => anthropic::request_body(provider, request),
        };
        body.map_err(|error| LlmError::InvalidResponse {
            url: self.inner.url.clone(),
            message: format!("cannot serialise the request: {error}"),
        })
    }

    /// Runs one model call, retrying transient failures; see the module docs.
    pub async fn complete(
        &self,
        request: &ChatRequest<'_>,
        on_event: &mut (dyn FnMut(LlmEvent) + Send),
    ) -> Result<Completion, LlmError> {
        let body = self.request_body(request)?;
        self.complete_body(body, on_event).await
    }

    /// Runs one model call with `body` as the request body (what [`Self::request_body`] made,
    /// perhaps patched by an extension), retrying like [`Self::complete`].
    pub async fn complete_body(
        &self,
        body: Vec<u8>,
        on_event: &mut (dyn FnMut(LlmEvent) + Send),
    ) -> Result<Completion, LlmError> {
        let provider = &self.inner.provider;
        let body = bytes::Bytes::from(body);
        let base_delay = Duration::from_millis(provider.retry_base_delay_ms);
        let max_delay = Duration::from_millis(provider.retry_max_delay_ms);
        let mut retries = 0;
        loop {
            let (error, retry_after) = match self.attempt(body.clone(), on_event).await {
                Ok(completion) => return Ok(completion),
                Err(failure) => failure,
            };
            if !error.is_retryable() {
                return Err(error);
            }
            if retries >= provider.max_retries {
                if retries == 0 {
                    return Err(error);
                }
                return Err(LlmError::RetriesExhausted {
                    attempts: retries.saturating_add(1),
                    last: Box::new(error),
                });
            }
            retries = retries.saturating_add(1);
            let delay = retry::backoff_delay(retries, base_delay, max_delay, retry_after);
            let message = error.to_string();
            tracing::warn!(provider = %provider.name, attempt = retries, ?delay, %message, "retrying model call");
            on_event(LlmEvent::Retrying {
                attempt: retries,
                delay,
                message,
            });
            tokio::time::sleep(delay).await;
        }
    }

    /// One HTTP exchange. On failure also returns the server's `Retry-After`, if any.
    async fn attempt(
        &self,
        body: bytes::Bytes,
        on_event: &mut (dyn FnMut(LlmEvent) + Send),
    ) -> Result<Completion, (LlmError, Option<Duration>)> {
        let Inner {
            provider,
            http,
            url,
        } = &*self.inner;
        let idle = Duration::from_secs(provider.stream_idle_timeout_secs.max(1));
        let http = http.for_url(url).await.map_err(|message| {
            (
                LlmError::Connect {
                    url: url.clone(),
                    message,
                },
                None,
            )
        })?;
        let mut request = http
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .header(USER_AGENT, concat!("agentd/", env!("CARGO_PKG_VERSION")))
            .body(body.clone());
        // Kept for the usage estimate (a cheap clone: `Bytes` shares the buffer).
        let sent = body;
        match provider.kind {
            ProviderKind::OpenAi => {
                if let Some(key) = &provider.api_key {
                    request = request.bearer_auth(key);
                }
            }
            ProviderKind::Anthropic => {
                if let Some(key) = &provider.api_key {
                    request = request.header("x-api-key", key);
                }
                request = request.header("anthropic-version", ANTHROPIC_VERSION);
            }
        }
        let connect_failed = |message: String| {
            (
                LlmError::Connect {
                    url: url.clone(),
                    message,
                },
                None,
            )
        };
        let response = match tokio::time::timeout(idle, request.send()).await {
            Err(_elapsed) => return Err(connect_failed(idle_reason(provider, idle, "headers"))),
            // A URL reqwest cannot even use (no scheme, bad host) will not improve on retry.
            Ok(Err(error)) if error.is_builder() => {
                return Err((
                    LlmError::EndpointNotFound {
                        url: url.clone(),
                        message: error_chain(&error),
                    },
                    None,
                ));
            }
            Ok(Err(error)) => return Err(connect_failed(error_chain(&error))),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry::retry_after(response.headers());
            let text = match tokio::time::timeout(idle, response.text()).await {
                Ok(Ok(text)) => text,
                _ => String::new(),
            };
            let message = error_message(&text, status);
            return Err((self.status_error(status.as_u16(), message), retry_after));
        }

        // A server that ignored `stream: true` answers with one JSON object: say so plainly
        // instead of reporting an empty stream.
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        if content_type.starts_with("application/json") {
            let text = tokio::time::timeout(idle, response.text())
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
            if let Some(message) = overflow_in_json(&text) {
                return Err((
                    LlmError::RejectedInStream {
                        url: url.clone(),
                        message,
                    },
                    None,
                ));
            }
            return Err((
                LlmError::InvalidResponse {
                    url: url.clone(),
                    message: format!(
                        "expected an event stream but got JSON (does the server support \"stream\": true?): {}",
                        truncate(&text, MAX_ERROR_MESSAGE_CHARS)
                    ),
                },
                None,
            ));
        }

        let mut assembler = Assembler::new(&provider.kind);
        let mut thinking_bytes = 0usize;
        let mut events = SseStream::from_bytes_stream(response.bytes_stream());
        loop {
            let cut = |reason: String, output_started: bool| {
                (
                    LlmError::StreamCut {
                        url: url.clone(),
                        reason,
                        output_started,
                    },
                    None,
                )
            };
            let next = match tokio::time::timeout(idle, events.next()).await {
                Ok(next) => next,
                Err(_elapsed) => {
                    return Err(cut(
                        idle_reason(provider, idle, "data"),
                        assembler.output_started(),
                    ));
                }
            };
            let event = match next {
                Some(Ok(event)) => event,
                Some(Err(error)) => {
                    return Err(cut(error.to_string(), assembler.output_started()));
                }
                None if assembler.complete_on_eof() => break,
                None => {
                    return Err(cut(
                        "the connection closed before the final event".to_owned(),
                        assembler.output_started(),
                    ));
                }
            };
            let Some(data) = event.data else { continue };
            let handled = assembler.on_data(&data, &mut |text| on_event(LlmEvent::TextDelta(text)));
            if let Some(thinking) = assembler.take_thinking() {
                thinking_bytes = thinking_bytes.saturating_add(thinking.len());
                on_event(LlmEvent::ThinkingDelta(thinking));
            }
            match handled {
                Ok(true) => break,
                Ok(false) => {}
                // Refused before any output, in words of a prompt too long: an overflow.
                Err(StreamError::Provider {
                    message,
                    overflow: true,
                }) if !assembler.output_started() => {
                    return Err((
                        LlmError::RejectedInStream {
                            url: url.clone(),
                            message: truncate(&message, MAX_ERROR_MESSAGE_CHARS),
                        },
                        None,
                    ));
                }
                Err(StreamError::Provider { message, .. }) => {
                    return Err(cut(
                        format!("the provider reported: {message}"),
                        assembler.output_started(),
                    ));
                }
                Err(StreamError::Invalid(message)) => {
                    return Err((
                        LlmError::InvalidResponse {
                            url: url.clone(),
                            message: truncate(&message, MAX_ERROR_MESSAGE_CHARS),
                        },
                        None,
                    ));
                }
            }
        }
        let usage_reported = assembler.usage_reported();
        let mut completion = assembler.finish();
        if !usage_reported {
            usage_estimate::estimate(&sent, &mut completion, thinking_bytes);
        }
        Ok(completion)
    }

    fn status_error(&self, status: u16, message: String) -> LlmError {
        let Inner { provider, url, .. } = &*self.inner;
        let url = url.clone();
        match status {
            401 | 403 => LlmError::Auth {
                url,
                message,
                hint: match (&provider.api_key_env, &provider.api_key) {
                    (Some(var), None) => format!("set {var} (it is not set)"),
                    (Some(var), Some(_)) => format!("set {var}"),
                    (None, _) => format!(
                        "set api_key_env for [providers.{}] in config.toml",
                        provider.name
                    ),
                },
            },
            404 if message.to_lowercase().contains("model") => LlmError::ModelNotFound {
                model: provider.model.clone(),
                url,
                message,
            },
            404 => LlmError::EndpointNotFound { url, message },
            status if retry::is_retryable_status(status) => LlmError::Http {
                url,
                status,
                message,
            },
            status => LlmError::Rejected {
                url,
                status,
                message,
            },
        }
    }
}

/// Why an attempt gave up on a silent provider (`what`: the `headers` or more `data`): its
/// name, the wait, and the settings that set it.
fn idle_reason(provider: &ProviderConfig, idle: Duration, what: &str) -> String {
    let name = &provider.name;
    format!(
        "no {what} from provider {name} for {} s; check the server, or raise [llm] stream_idle_secs (providers.{name}.stream_idle_timeout_secs for this provider alone)",
        idle.as_secs()
    )
}

/// The message of a JSON error body that came with `200 OK` and names a context overflow.
fn overflow_in_json(body: &str) -> Option<String> {
    let value = serde_json::from_str::<serde_json::Value>(body).ok()?;
    let error = value.get("error")?;
    error::names_context_overflow(&error.to_string())
        .then(|| truncate(&openai::error_text(error), MAX_ERROR_MESSAGE_CHARS))
}

/// The provider's own error message from an error body (`{"error":{"message"}}`, Ollama's
/// `{"error":"…"}`, or plain text), cut to a readable length.
fn error_message(body: &str, status: reqwest::StatusCode) -> String {
    let from_json = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|value| {
            value.get("error").map(openai::error_text).or_else(|| {
                value
                    .get("message")
                    .and_then(|m| m.as_str())
                    .map(str::to_owned)
            })
        });
    let message = from_json.unwrap_or_else(|| body.trim().to_owned());
    if message.is_empty() {
        return status
            .canonical_reason()
            .unwrap_or("no details")
            .to_lowercase();
    }
    truncate(&message, MAX_ERROR_MESSAGE_CHARS)
}

fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// An error with its causes, which is where reqwest keeps the useful part ("connection refused").
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The agent loop spawns model calls on the multi-threaded runtime.
    #[test]
    fn complete_future_is_send() {
        fn assert_send<T: Send>(_: &T) {}
        let provider = crate::provider::tests::openai_quick_start();
        let client = LlmClient::new(provider, HttpClients::new().unwrap());
        let request = ChatRequest {
            session_id: "s",
            system: "",
            messages: &[],
            tools: &[],
        };
        let mut on_event = |_: LlmEvent| {};
        let future = client.complete(&request, &mut on_event);
        assert_send(&future);
    }

    #[test]
    fn endpoint_urls() {
        let url = |kind: ProviderKind, base: &str| {
            let mut provider = crate::provider::tests::openai_quick_start();
            provider.kind = kind;
            provider.base_url = base.to_owned();
            LlmClient::new(provider, HttpClients::new().unwrap())
                .inner
                .url
                .clone()
        };
        assert_eq!(
            url(ProviderKind::OpenAi, "http://h/v1"),
            "http://h/v1/chat/completions"
        );
        assert_eq!(
            url(ProviderKind::Anthropic, "https://a.com"),
            "https://a.com/v1/messages"
        );
        assert_eq!(
            url(ProviderKind::Anthropic, "https://a.com/v1/"),
            "https://a.com/v1/messages"
        );
    }

    #[test]
    fn a_json_error_answered_with_200_is_an_overflow_only_in_its_words() {
        let llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#;
        assert_eq!(
            overflow_in_json(llama).as_deref(),
            Some("the request exceeds the available context size, try increasing it")
        );
        assert_eq!(
            overflow_in_json(r#"{"error":{"message":"overloaded"}}"#),
            None
        );
        assert_eq!(
            overflow_in_json(r#"{"id":"chatcmpl-1","choices":[]}"#),
            None
        );
        assert_eq!(overflow_in_json("not json"), None);
    }

    #[test]
    fn the_idle_reason_names_the_provider_the_wait_and_the_setting() {
        let provider = crate::provider::tests::openai_quick_start();
        assert_eq!(
            idle_reason(&provider, Duration::from_secs(90), "data"),
            "no data from provider openai for 90 s; check the server, or raise [llm] stream_idle_secs (providers.openai.stream_idle_timeout_secs for this provider alone)"
        );
    }

    #[test]
    fn error_messages_from_bodies() {
        let status = reqwest::StatusCode::BAD_GATEWAY;
        assert_eq!(error_message(r#"{"error":{"message":"m1"}}"#, status), "m1");
        assert_eq!(
            error_message(r#"{"error":"ollama says"}"#, status),
            "ollama says"
        );
        assert_eq!(
            error_message("  <html>gateway</html> ", status),
            "<html>gateway</html>"
        );
        assert_eq!(error_message("", status), "bad gateway");
        assert_eq!(error_message(&"x".repeat(700), status).chars().count(), 601);
    }
}
