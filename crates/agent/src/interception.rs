//! The run's side of the interception points around a model request that cost something to
//! prepare: the raw provider body (`Point::ProviderRequest`, built only when an interceptor
//! wants it) and an answer cut off while it streams (`Interceptor::watch_stream`).

use anyhow::Result;

use super::{Run, RunOutcome, intercept};
use agentd_core::conversation::Usage;
use agentd_llm::ChatRequest;
use protocol::event::RunStatus;

impl Run {
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
