//! The reply assemblers of both formats behind one type, and why a stream cannot be read
//! further (`StreamError`, mapped to an `LlmError` with the URL by `LlmClient`).

use super::{Completion, ProviderKind, anthropic, error, openai};

/// Why a stream could not be read further (mapped to `LlmError` with the URL by the caller).
pub(crate) enum StreamError {
    /// The provider sent an error event in the stream (overloaded, a prompt too long, …).
    Provider {
        message: String,
        /// Its words (message, `type`, `code`) say the prompt is too long for the model.
        overflow: bool,
    },
    /// The provider sent something that is not its format.
    Invalid(String),
}

/// The provider-specific reply assembler.
pub(crate) enum Assembler {
    OpenAi(openai::Assembler),
    Anthropic(anthropic::Assembler),
}

impl StreamError {
    /// The provider's `{"error": …}` value of an in-stream error.
    pub(crate) fn provider(error: &serde_json::Value) -> Self {
        StreamError::Provider {
            message: openai::error_text(error),
            overflow: error::names_context_overflow(&error.to_string()),
        }
    }
}

impl Assembler {
    pub(crate) fn new(kind: &ProviderKind) -> Self {
        match kind {
            ProviderKind::OpenAi => Assembler::OpenAi(openai::Assembler::default()),
            ProviderKind::Anthropic => Assembler::Anthropic(anthropic::Assembler::default()),
        }
    }

    pub(crate) fn on_data(
        &mut self,
        data: &str,
        emit_text: &mut dyn FnMut(String),
    ) -> Result<bool, StreamError> {
        match self {
            Assembler::OpenAi(assembler) => assembler.on_data(data, emit_text),
            Assembler::Anthropic(assembler) => assembler.on_data(data, emit_text),
        }
    }

    pub(crate) fn take_thinking(&mut self) -> Option<String> {
        match self {
            Assembler::OpenAi(assembler) => assembler.take_thinking(),
            Assembler::Anthropic(assembler) => assembler.take_thinking(),
        }
    }

    pub(crate) fn output_started(&self) -> bool {
        match self {
            Assembler::OpenAi(assembler) => assembler.output_started(),
            Assembler::Anthropic(assembler) => assembler.output_started(),
        }
    }

    pub(crate) fn usage_reported(&self) -> bool {
        match self {
            Assembler::OpenAi(assembler) => assembler.usage_reported(),
            Assembler::Anthropic(assembler) => assembler.usage_reported(),
        }
    }

    pub(crate) fn complete_on_eof(&self) -> bool {
        match self {
            Assembler::OpenAi(assembler) => assembler.complete_on_eof(),
            Assembler::Anthropic(assembler) => assembler.complete_on_eof(),
        }
    }

    pub(crate) fn finish(self) -> Completion {
        match self {
            Assembler::OpenAi(assembler) => assembler.finish(),
            Assembler::Anthropic(assembler) => assembler.finish(),
        }
    }
}
