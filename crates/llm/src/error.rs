//! What can go wrong talking to a provider, with messages a user can act on.

/// A failed model call. Display is a clear lowercase message naming what to do.
#[derive(thiserror::Error, Debug)]
pub enum LlmError {
    /// 401/403: the key is missing or wrong.
    #[error("API key rejected by {url}{}: {hint}", detail(.message))]
    Auth {
        url: String,
        message: String,
        /// e.g. "set OPENAI_API_KEY".
        hint: String,
    },
    /// 404 mentioning the model.
    #[error("model not found: {model} ({url}{})", detail(.message))]
    ModelNotFound {
        model: String,
        url: String,
        message: String,
    },
    /// 404 for the endpoint itself (wrong base_url).
    #[error("endpoint not found: {url}{}: check base_url", detail(.message))]
    EndpointNotFound { url: String, message: String },
    /// 400 and other non-retryable statuses.
    #[error("request rejected by {url} (HTTP {status}): {message}")]
    Rejected {
        url: String,
        status: u16,
        message: String,
    },
    /// The provider answered `200 OK` and then refused the request inside its body (an SSE
    /// `error` in the stream, or a JSON error object), in words that say the prompt is too
    /// long: llama.cpp's server does this when the prompt exceeds its context.
    #[error("request rejected by {url} inside its 200 OK answer: {message}")]
    RejectedInStream { url: String, message: String },
    /// 408/409/429/5xx.
    #[error("HTTP {status} from {url}: {message}")]
    Http {
        url: String,
        status: u16,
        message: String,
    },
    /// No response: connect refused, DNS, TLS, reset before the headers, header timeout.
    #[error("cannot reach {url}: {message}")]
    Connect { url: String, message: String },
    /// The stream ended, broke, reported an error or went idle before its final event.
    #[error("stream from {url} was cut {}: {reason}", cut_when(*.output_started))]
    StreamCut {
        url: String,
        reason: String,
        /// Text or a tool call already reached the caller; the call cannot be retried.
        output_started: bool,
    },
    /// The provider sent something we cannot read.
    #[error("invalid response from {url}: {message}")]
    InvalidResponse { url: String, message: String },
    /// The retry budget ran out; `last` is the final failure.
    #[error("{last} (gave up after {attempts} attempts)")]
    RetriesExhausted { attempts: u32, last: Box<LlmError> },
}

impl LlmError {
    /// Whether this failure, on its own, may go away when the same request is sent again.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Http { .. } | LlmError::Connect { .. } => true,
            LlmError::StreamCut { output_started, .. } => !output_started,
            _ => false,
        }
    }

    /// Whether the provider refused the request because the prompt is too long for the model:
    /// the caller should compact the history and try again.
    pub fn is_context_overflow(&self) -> bool {
        let message = match self {
            LlmError::Rejected { message, .. } | LlmError::RejectedInStream { message, .. } => {
                message
            }
            LlmError::RetriesExhausted { last, .. } => return last.is_context_overflow(),
            _ => return false,
        };
        names_context_overflow(message)
    }
}

/// Whether a provider's error text (a message, or a whole error object as JSON with its
/// `type` and `code`) says the prompt is too long for the model.
pub(crate) fn names_context_overflow(text: &str) -> bool {
    let text = text.to_lowercase();
    CONTEXT_OVERFLOW_PHRASES
        .iter()
        .any(|needle| text.contains(needle))
}

/// How providers word a prompt too long for the model (lowercase): OpenAI
/// (`context_length_exceeded`, "maximum context length"), Anthropic ("prompt is too long",
/// "exceed context limit"), vLLM, llama.cpp ("exceeds the available context size", its type
/// `exceed_context_size_error`), Ollama.
const CONTEXT_OVERFLOW_PHRASES: &[&str] = &[
    "exceed_context_size",
    "context length",
    "context_length",
    "context window",
    "context size",
    "context limit",
    "prompt is too long",
    "too many tokens",
    "maximum context",
];

fn cut_when(output_started: bool) -> &'static str {
    if output_started {
        "after the reply began (the partial reply is incomplete; send the prompt again)"
    } else {
        "before the reply began"
    }
}

fn detail(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(" ({message})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejected(message: &str) -> LlmError {
        LlmError::Rejected {
            url: "http://x".to_owned(),
            status: 400,
            message: message.to_owned(),
        }
    }

    #[test]
    fn context_overflow_is_recognised_in_each_providers_words() {
        for message in [
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
            "prompt is too long: 210000 tokens > 200000 maximum",
            "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000",
            "the request exceeds the available context size, try increasing it",
            "context_length_exceeded",
        ] {
            assert!(rejected(message).is_context_overflow(), "{message}");
        }
        for message in ["invalid model", "max_tokens: must be at most 8192"] {
            assert!(!rejected(message).is_context_overflow(), "{message}");
        }
        let server_error = LlmError::Http {
            url: "http://x".to_owned(),
            status: 500,
            message: "prompt is too long".to_owned(),
        };
        assert!(!server_error.is_context_overflow(), "only a refusal counts");
        let exhausted = LlmError::RetriesExhausted {
            attempts: 2,
            last: Box::new(rejected("prompt is too long")),
        };
        assert!(exhausted.is_context_overflow());
        let in_stream = LlmError::RejectedInStream {
            url: "http://x".to_owned(),
            message: "the request exceeds the available context size, try increasing it".to_owned(),
        };
        assert!(in_stream.is_context_overflow());
        assert!(!in_stream.is_retryable());
        assert!(names_context_overflow(
            r#"{"type":"exceed_context_size_error","message":"m"}"#
        ));
    }
}
