//! `/context` and `/model` without a name: how full the model's context window is (the last
//! model call's tokens, `usageUpdated`, against the daemon's `[context]` limits of
//! `daemon/status`), and the configured providers' models with the chat's marked.

use protocol::daemon::{ContextLimits, DaemonStatusParams, DaemonStatusResult, ProviderInfo};
use protocol::methods::DaemonStatus;

use super::Chat;
use crate::render::summary::{Context, bar, tokens_short};

/// Cells of the bar in the chat's after-run line.
pub const AFTER_RUN_BAR_CELLS: usize = 8;

/// Cells of `/context`'s bar.
const CONTEXT_BAR_CELLS: usize = 40;

impl Chat {
    /// `/context`: the gauge as of the last model call seen in this chat, and the limits.
    pub(super) async fn context_gauge(&mut self) {
        let context = self
            .run
            .as_ref()
            .and_then(|run| run.renderer.context())
            .or(self.context);
        let limits = self
            .daemon_status()
            .await
            .ok()
            .and_then(|s| s.context_limits);
        self.say(&context_text(context, limits)).await;
    }

    /// `/model`: every configured provider's model, the one the chat's session uses (or the
    /// next prompt's session will) marked.
    pub(super) async fn models(&mut self) {
        let status = match self.daemon_status().await {
            Ok(status) => status,
            Err(message) => {
                self.say(&message).await;
                return;
            }
        };
        let current = match &self.session {
            Some(_) => match self.current().await {
                Some(info) => Some(format!("{}:{}", info.provider, info.model)),
                None => return,
            },
            None => next_model(self.new_session.model.as_deref(), &status),
        };
        self.say(&models_text(&status.providers, current.as_deref()))
            .await;
    }

    async fn daemon_status(&self) -> Result<DaemonStatusResult, String> {
        self.connection
            .request::<DaemonStatus>(&DaemonStatusParams::default())
            .await
            .map_err(|err| format!("agentctl: {err}"))
    }
}

/// The model the next prompt's session gets, as `provider:model`, when it can be told.
fn next_model(chosen: Option<&str>, status: &DaemonStatusResult) -> Option<String> {
    let default = status.default_provider.as_deref();
    match chosen {
        Some(model) if model.contains(':') => Some(model.to_owned()),
        Some(model) => default.map(|provider| format!("{provider}:{model}")),
        None => {
            let provider = status
                .providers
                .iter()
                .find(|provider| Some(provider.name.as_str()) == default)?;
            Some(format!("{}:{}", provider.name, provider.model))
        }
    }
}

/// `/context`'s answer.
fn context_text(context: Option<Context>, limits: Option<ContextLimits>) -> String {
    let mut text = match context.filter(|context| context.window > 0) {
        Some(Context { used, window }) => format!(
            "context {} {}% · {used} of {} tokens at the last model call",
            bar(used, window, CONTEXT_BAR_CELLS),
            used.saturating_mul(100) / window,
            tokens_short(window)
        ),
        None => {
            "context: no model call yet in this chat (the gauge fills with the next run)".to_owned()
        }
    };
    text.push('\n');
    match limits {
        Some(limits) => {
            let of_window = |percent: u8| match context.filter(|context| context.window > 0) {
                Some(context) => format!(
                    " ({})",
                    tokens_short(context.window * u64::from(percent) / 100)
                ),
                None => String::new(),
            };
            text.push_str(&format!(
                "soft limit {}%{}: old tool results are cleared · hard limit {}%{}: the older \
                 history is summarised ([context] of config.toml; /compact now)",
                limits.soft_limit_percent,
                of_window(limits.soft_limit_percent),
                limits.hard_limit_percent,
                of_window(limits.hard_limit_percent),
            ));
        }
        None => text.push_str(
            "(this agentd does not say its compaction limits; after updating agentd, run \
             `agentctl daemon restart`)",
        ),
    }
    text
}

/// `/model`'s answer: one provider a line, `*` before `current`.
fn models_text(providers: &[ProviderInfo], current: Option<&str>) -> String {
    if providers.is_empty() {
        return "no provider is configured (config.toml [providers.NAME], or OPENAI_API_KEY / \
                ANTHROPIC_API_KEY for the daemon)"
            .to_owned();
    }
    let mut lines = vec!["models of the configured providers (* this chat's):".to_owned()];
    let mut listed_current = false;
    for provider in providers {
        let name = format!("{}:{}", provider.name, provider.model);
        let is_current = current == Some(name.as_str());
        listed_current |= is_current;
        let key = if provider.has_key { "" } else { ", no key" };
        lines.push(format!(
            "{} {name}  ({}{key})",
            if is_current { "*" } else { " " },
            provider.kind
        ));
    }
    if let Some(current) = current.filter(|_| !listed_current) {
        lines.push(format!("* {current}  (chosen for this chat)"));
    }
    lines.push("/model NAME or /model provider:model uses another from the next run".to_owned());
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(name: &str, model: &str, has_key: bool) -> ProviderInfo {
        ProviderInfo {
            name: name.to_owned(),
            kind: "openai".to_owned(),
            model: model.to_owned(),
            base_url: "http://x".to_owned(),
            api_key_env: None,
            has_key,
        }
    }

    #[test]
    fn the_context_answer_has_the_bar_the_tokens_and_the_limits() {
        let limits = ContextLimits {
            soft_limit_percent: 50,
            hard_limit_percent: 80,
        };
        let text = context_text(
            Some(Context {
                used: 32_000,
                window: 128_000,
            }),
            Some(limits),
        );
        let first = text.lines().next().unwrap();
        assert!(first.starts_with("context ██████████░░"), "{text}");
        assert!(
            first.ends_with(" 25% · 32000 of 128k tokens at the last model call"),
            "{text}"
        );
        assert!(text.contains("soft limit 50% (64k)"), "{text}");
        assert!(text.contains("hard limit 80% (102k)"), "{text}");
        let unknown = context_text(None, Some(limits));
        assert!(unknown.contains("no model call yet"), "{unknown}");
        assert!(unknown.contains("soft limit 50%:"), "{unknown}");
    }

    #[test]
    fn the_models_list_marks_the_chats_model() {
        let providers = [provider("a", "m1", true), provider("b", "m2", false)];
        let text = models_text(&providers, Some("b:m2"));
        assert!(text.contains("\n  a:m1  (openai)\n"), "{text}");
        assert!(text.contains("\n* b:m2  (openai, no key)\n"), "{text}");
        let other = models_text(&providers, Some("a:m9"));
        assert!(other.contains("* a:m9  (chosen for this chat)"), "{other}");
        assert!(models_text(&[], None).starts_with("no provider"));
    }
}
