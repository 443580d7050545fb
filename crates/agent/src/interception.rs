//! The run's side of the interception points: the prompt before it joins the history, the end
//! of a run (Stop), where interceptors are asked from and how their warnings are recorded, and
//! the points around a model request that cost something to prepare: the raw provider body
//! (`Point::ProviderRequest`, built only when an interceptor wants it) and an answer cut off
//! while it streams (`Interceptor::watch_stream`).

use anyhow::Result;

use super::{Run, RunOutcome, intercept};
use agentd_core::conversation::{Message, Usage};
use agentd_llm::ChatRequest;
use protocol::event::{Event, RunStatus, UserMessageKind};

impl Run {
    /// The user's prompt as the interceptors leave it (`Point::UserPrompt`): transformed, with
    /// their context added, or refused (the inner error: the run fails with the reason and
    /// nothing of the prompt is kept). Follow-ups and steers are not asked.
    pub(super) async fn intercept_prompt(
        &self,
        text: String,
        kind: UserMessageKind,
    ) -> Result<Result<String, anyhow::Error>> {
        if self.interceptors.is_empty() || kind != UserMessageKind::Prompt {
            return Ok(Ok(text));
        }
        let outcome = self
            .interceptors
            .at(self.at(), &intercept::Point::UserPrompt { text: &text })
            .await;
        self.warn(&outcome.warnings).await?;
        if let Some(reason) = outcome.block.or(outcome.halt) {
            return Ok(Err(anyhow::anyhow!(
                "the prompt was blocked by a hook: {reason}"
            )));
        }
        let mut text = outcome.replace_text.unwrap_or(text);
        for context in outcome.context {
            text.push_str("\n\n");
            text.push_str(&context);
        }
        Ok(Ok(text))
    }

    /// Where interceptors are asked from within this run.
    pub(crate) fn at(&self) -> intercept::At<'_> {
        intercept::At {
            run_id: Some(&self.run_id),
            log: &*self.log,
        }
    }

    /// Interceptors' warnings, as `warning` events.
    pub(crate) async fn warn(&self, warnings: &[String]) -> Result<()> {
        for message in warnings {
            self.log
                .append(Event::Warning {
                    message: message.clone(),
                })
                .await?;
        }
        Ok(())
    }

    /// Asks the interceptors whether the run may end (`Point::Stop`); Some: the reason to go
    /// on with, as the next user message. Once per chain: not while `stop_hook_active`.
    pub(super) async fn intercept_stop(
        &self,
        history: &[Message],
        stop_hook_active: bool,
    ) -> Result<Option<String>> {
        if self.interceptors.is_empty() {
            return Ok(None);
        }
        let last_message = match history.last() {
            Some(Message::Assistant { content, .. }) => content.as_str(),
            _ => "",
        };
        let agent_type = self
            .permissions
            .task_label
            .as_ref()
            .map(|(_, agent)| agent.as_str());
        let point = intercept::Point::Stop {
            stop_hook_active,
            last_message,
            agent_type,
        };
        let outcome = self.interceptors.at(self.at(), &point).await;
        self.warn(&outcome.warnings).await?;
        Ok(outcome.block.filter(|_| !stop_hook_active))
    }

    /// The body to send instead of the one `llm.complete` would build, when an interceptor
    /// wants to see it (None: nobody does, the request goes the usual way). The body the
    /// interceptors leave is sent as they left it.
    pub(super) async fn intercept_provider_request(
        &self,
        request: &ChatRequest<'_>,
    ) -> Result<Option<Vec<u8>>> {
        if self.interceptors.is_empty() || !self.interceptors.wants_provider_request() {
            return Ok(None);
        }
        // A body that cannot be built fails the same way in `complete`.
        let Ok(raw) = self.llm.request_body(request) else {
            return Ok(None);
        };
        let Ok(body) = serde_json::from_slice::<serde_json::Value>(&raw) else {
            return Ok(Some(raw));
        };
        let outcome = self
            .interceptors
            .at(
                self.at(),
                &intercept::Point::ProviderRequest { body: &body },
            )
            .await;
        self.warn(&outcome.warnings).await?;
        Ok(Some(match outcome.request_body {
            Some(patched) => serde_json::to_vec(&patched)?,
            None => raw,
        }))
    }

    /// The run after an interceptor cut its answer off: the text streamed so far is dropped
    /// (never in the history), a `warning` records the cut, and the run ends cancelled with
    /// the reason.
    pub(super) async fn cut_off(
        &self,
        reason: &str,
        partial: &str,
        usage: Usage,
    ) -> Result<RunOutcome> {
        self.warn(&[format!(
            "the answer was cut off after {} characters, which were dropped: {reason}",
            partial.chars().count()
        )])
        .await?;
        Ok(RunOutcome {
            status: RunStatus::Cancelled,
            error: Some(format!("the answer was cut off: {reason}")),
            usage,
        })
    }
}
