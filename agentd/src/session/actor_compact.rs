//! `session/compact` as the session's actor handles it, and the session's model client with its
//! context limits (shared with starting a run).

use super::{Actor, SessionError, closed};
use agentd_agent::compaction::{Compacted, Compactor};
use agentd_knowledge::context::{ContextLimits, context_window};
use agentd_llm::LlmClient;
use protocol::session::SessionCompactResult;

impl Actor {
    /// `session/compact`: refused while a run is active (its own limits compact when needed;
    /// a summary written beside it would race its history).
    /// `focus` (`/compact FOCUS`) tells the summariser what to keep.
    pub(super) async fn compact(
        &mut self,
        focus: Option<String>,
    ) -> Result<SessionCompactResult, SessionError> {
        if let Some(run_id) = self.active_run_id() {
            return Err(SessionError::Conflict(format!(
                "a run is active on this session ({run_id}); compact once it has finished (runFinished), or cancel it first"
            )));
        }
        let (llm, limits) = self.model()?;
        if let Some(previous) = self.previous_run.take() {
            let _ = previous.await;
        }
        let history = self.shared.lock().history.clone();
        // The tools of the session's last model call (MCP tools included), so the summary
        // request shares its prefix; the built-ins before any.
        let tool_specs: std::sync::Arc<[agentd_core::conversation::ToolSpec]> =
            match self.shared.lock().offered_tools.clone() {
                Some(offered) => offered,
                None => self.deps.tools.specs().into(),
            };
        // PreCompact and PostCompact hooks (the summary itself is written by the actor too).
        let (hooks, _) = crate::session::hooks::session_hooks(
            &self.header,
            &self.deps,
            agentd_agent::hooks::PendingStart::default(),
        )
        .await;
        let interceptors = crate::session::hooks::interceptors(hooks);
        let outcome = Compactor {
            llm: &llm,
            log: &*self.log,
            shared: &self.shared,
            session_id: &self.header.id,
            system: &self.header.system_prompt,
            tools: &tool_specs,
            run_id: None,
            cancel: &self.closing,
            summary_input_chars: limits.summary_input_chars(),
            interceptors: &interceptors,
            trigger: agentd_agent::intercept::CompactTrigger::Manual,
            focus: focus.as_deref(),
        }
        .compact(&history)
        .await
        .map_err(|err| SessionError::Internal(format!("{err:#}")))?;
        match outcome {
            Compacted::Done {
                tokens_before,
                tokens_after,
            } => Ok(SessionCompactResult {
                compacted: true,
                tokens_before: Some(tokens_before),
                tokens_after: Some(tokens_after),
            }),
            Compacted::Cancelled => Err(closed()),
            Compacted::NothingToCompact => Ok(SessionCompactResult {
                compacted: false,
                tokens_before: None,
                tokens_after: None,
            }),
            Compacted::Failed(message) => Err(SessionError::Upstream(message)),
        }
    }

    /// The session's model client and its context limits, from the current config.
    pub(super) fn model(&self) -> Result<(LlmClient, ContextLimits), SessionError> {
        self.model_named(&format!("{}:{}", self.header.provider, self.header.model))
    }

    /// The client and limits of `model` (as `session/update` names one), from the current
    /// config.
    pub(super) fn model_named(
        &self,
        model: &str,
    ) -> Result<(LlmClient, ContextLimits), SessionError> {
        let (config, provider) = self.deps.provider(Some(model))?;
        let window = context_window(&provider.model, provider.context_window);
        let limits = ContextLimits::new(
            window,
            config.context.soft_limit_percent,
            config.context.hard_limit_percent,
        );
        Ok((LlmClient::new(provider, self.deps.http.clone()), limits))
    }
}
