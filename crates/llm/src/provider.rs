//! A configured LLM provider: its wire format, endpoint, key, model, limits and prices, as
//! `config` assembles it from config.toml and the environment and the clients here use it.

use super::prices::Prices;

/// The wire format a provider speaks.
#[derive(Clone, Debug, PartialEq)]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter, …).
    OpenAi,
    /// Anthropic messages.
    Anthropic,
}

/// One named LLM provider with the model to use and its retry limits.
///
/// `Debug` is written by hand so the API key never reaches a log.
#[derive(Clone)]
pub struct ProviderConfig {
    pub name: String,
    pub kind: ProviderKind,
    /// Without a trailing slash.
    pub base_url: String,
    /// The key itself, read from `api_key_env` (or the file) at load time.
    pub api_key: Option<String>,
    /// Where the key comes from; named in "API key rejected" messages.
    pub api_key_env: Option<String>,
    pub model: String,
    pub context_window: Option<u64>,
    pub max_output_tokens: Option<u64>,
    pub reasoning_effort: Option<String>,
    /// Retries after the first attempt for 408/409/429/5xx, connect errors and cut streams.
    pub max_retries: u32,
    pub retry_base_delay_ms: u64,
    pub retry_max_delay_ms: u64,
    /// Seconds without any bytes from the provider before the stream counts as cut.
    pub stream_idle_timeout_secs: u64,
    /// What `model` costs (`[providers.NAME.prices]`); None: unknown, no cost is reported.
    pub prices: Option<Prices>,
}

impl ProviderConfig {
    /// Refuse a provider whose `api_key_env` names a variable the daemon does not have: every
    /// request would fail, so a session is refused at creation instead.
    pub fn require_key(&self) -> Result<(), MissingApiKey> {
        match (&self.api_key, &self.api_key_env) {
            (None, Some(var)) => Err(MissingApiKey {
                provider: self.name.clone(),
                var: var.clone(),
            }),
            _ => Ok(()),
        }
    }
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("api_key_env", &self.api_key_env)
            .field("model", &self.model)
            .field("context_window", &self.context_window)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("reasoning_effort", &self.reasoning_effort)
            .field("max_retries", &self.max_retries)
            .field("retry_base_delay_ms", &self.retry_base_delay_ms)
            .field("retry_max_delay_ms", &self.retry_max_delay_ms)
            .field("stream_idle_timeout_secs", &self.stream_idle_timeout_secs)
            .finish()
    }
}

/// A provider whose key variable the daemon does not have: every request would fail, so a
/// session is refused at creation instead.
#[derive(thiserror::Error, Debug)]
#[error(
    "provider {provider:?} reads its API key from the variable {var}, which is not set in the daemon's environment; set it where the daemon starts (a systemd unit: EnvironmentFile= or `systemctl --user import-environment {var}`) and restart the daemon"
)]
pub struct MissingApiKey {
    pub provider: String,
    pub var: String,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The provider `config` makes of `OPENAI_API_KEY=k` alone (its quick start, with its
    /// defaults), for tests of the clients without the layer above.
    pub(crate) fn openai_quick_start() -> ProviderConfig {
        ProviderConfig {
            name: "openai".to_owned(),
            kind: ProviderKind::OpenAi,
            base_url: "https://api.openai.com/v1".to_owned(),
            api_key: Some("k".to_owned()),
            api_key_env: Some("OPENAI_API_KEY".to_owned()),
            model: "gpt-4o-mini".to_owned(),
            context_window: None,
            max_output_tokens: None,
            reasoning_effort: None,
            max_retries: 4,
            retry_base_delay_ms: 500,
            retry_max_delay_ms: 30_000,
            stream_idle_timeout_secs: 90,
            prices: None,
        }
    }
}
