//! Compaction (DESIGN §5 step 8): the history before the last two user turns is summarised by
//! the model and sent as that summary from now on. The summary is persisted as a `context`
//! entry (the messages stay whole in the file); a failed summary keeps the history as it is and
//! says so in a `warning`. Used by runs (hard limit, context overflow) and by `session/compact`.

use tokio_util::sync::CancellationToken;

use super::Run;
use super::intercept::{At, CompactTrigger, Interceptors, Point};
use super::sink::{RunLog, SessionShared};
use agentd_core::conversation::{ContextChange, Message, ToolSpec};
use agentd_knowledge::context::{self, SUMMARY_PROMPT};
use agentd_llm::{ChatRequest, LlmClient};
use protocol::event::Event;

use anyhow::Result;

/// What a compaction needs: the model to summarise with, where to record, the session's state.
pub struct Compactor<'a> {
    pub llm: &'a LlmClient,
    pub log: &'a dyn RunLog,
    pub shared: &'a SessionShared,
    pub session_id: &'a str,
    /// The session's system prompt and tools, counted in the token estimate.
    pub system: &'a str,
    pub tools: &'a [ToolSpec],
    /// The run that needs it; `None` for `session/compact`.
    pub run_id: Option<String>,
    /// Stops the summary call (the run was cancelled).
    pub cancel: &'a CancellationToken,
    /// The most text the summariser is given (`ContextLimits::summary_input_chars`).
    pub summary_input_chars: usize,
    /// Asked before and after (`Point::PreCompact`, `Point::PostCompact`).
    pub interceptors: &'a Interceptors,
    pub trigger: CompactTrigger,
    /// What the person wants the summary to keep (`/compact FOCUS`); None: the usual summary.
    pub focus: Option<&'a str>,
}

/// How a compaction went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Compacted {
    Done {
        tokens_before: u64,
        tokens_after: u64,
    },
    /// Nothing is older than the last two user turns.
    NothingToCompact,
    /// The summary failed (said in a `warning`); the history is kept.
    Failed(String),
    /// The run was cancelled while the summary was being written.
    Cancelled,
}

impl Compactor<'_> {
    /// Summarise the history before the last two user turns of `history` (the session's whole
    /// history) and record it; see the module docs.
    pub async fn compact(&self, history: &[Message]) -> anyhow::Result<Compacted> {
        let compacted = self.summarise(history).await?;
        if !self.interceptors.is_empty() && compacted != Compacted::NothingToCompact {
            let summary = match &compacted {
                Compacted::Done { .. } => self.shared.lock().context.summary().map(str::to_owned),
                _ => None,
            };
            let point = Point::PostCompact {
                trigger: self.trigger,
                summary: summary.as_deref(),
            };
            self.intercept(&point).await?;
        }
        Ok(compacted)
    }

    /// Asks the interceptors at `point`; their warnings become `warning` events.
    async fn intercept(&self, point: &Point<'_>) -> anyhow::Result<()> {
        let at = At {
            run_id: self.run_id.as_deref(),
            log: self.log,
        };
        let outcome = self.interceptors.at(at, point).await;
        for message in outcome.warnings {
            self.log.append(Event::Warning { message }).await?;
        }
        Ok(())
    }

    async fn summarise(&self, history: &[Message]) -> anyhow::Result<Compacted> {
        let (state, cut) = {
            let state = self.shared.lock().context.clone();
            let Some(cut) = state.compaction_cut(history) else {
                return Ok(Compacted::NothingToCompact);
            };
            (state, cut)
        };
        if !self.interceptors.is_empty() {
            let point = Point::PreCompact {
                trigger: self.trigger,
                focus: self.focus,
            };
            self.intercept(&point).await?;
        }
        self.log
            .append(Event::CompactionStarted {
                run_id: self.run_id.clone(),
            })
            .await?;
        let mut input = state.summary_input(history, cut, self.summary_input_chars);
        if let Some(focus) = self.focus.map(str::trim).filter(|focus| !focus.is_empty()) {
            input.push_str("\n\nIn the summary, focus on: ");
            input.push_str(focus);
        }
        let messages = [Message::user(input)];
        let request = ChatRequest {
            session_id: self.session_id,
            system: SUMMARY_PROMPT,
            messages: &messages,
            tools: &[],
        };
        let mut ignore = |_event| {};
        let summary = tokio::select! {
            result = self.llm.complete(&request, &mut ignore) => result,
            _ = self.cancel.cancelled() => return Ok(Compacted::Cancelled),
        };
        if let Ok(completion) = &summary {
            // The summary's tokens count in the session's totals (its next `usageUpdated`).
            self.shared
                .lock()
                .add_usage(&completion.usage, self.llm.provider().prices);
        }
        let summary = match summary {
            Ok(completion) if !completion.content.trim().is_empty() => {
                completion.content.trim().to_owned()
            }
            Ok(_) => return self.failed("the model returned an empty summary").await,
            Err(error) => return self.failed(&error.to_string()).await,
        };

        let fixed = self.system.len() + serde_json::to_vec(self.tools).map_or(0, |b| b.len());
        let before_view = state.view(history);
        let tokens_before = if state.last_prompt_tokens > 0 {
            state.last_prompt_tokens
        } else {
            context::estimate_tokens(0, 0, context::json_bytes(&before_view), fixed)
        };
        let change_for = |tokens_after| ContextChange::Compacted {
            summary: summary.clone(),
            first_kept: cut,
            tokens_before,
            tokens_after,
        };
        let mut after_state = state.clone();
        after_state.apply(&change_for(0));
        let tokens_after = context::estimate_tokens(
            tokens_before,
            context::json_bytes(&before_view),
            context::json_bytes(&after_state.view(history)),
            fixed,
        );
        let change = change_for(tokens_after);
        self.log.append_context(&change).await?;
        {
            let mut shared = self.shared.lock();
            shared.context.apply(&change);
            shared.context.last_prompt_tokens = tokens_after;
        }
        self.log
            .append(Event::CompactionCompleted {
                run_id: self.run_id.clone(),
                tokens_before,
                tokens_after,
            })
            .await?;
        Ok(Compacted::Done {
            tokens_before,
            tokens_after,
        })
    }

    async fn failed(&self, why: &str) -> anyhow::Result<Compacted> {
        let message = format!(
            "context compaction failed: {why}; the history is kept as it is (compact it again later)"
        );
        tracing::warn!(session = %self.session_id, "{message}");
        self.log
            .append(Event::Warning {
                message: message.clone(),
            })
            .await?;
        Ok(Compacted::Failed(message))
    }
}

/// The run's side: when to clear and when to compact.
impl Run {
    /// Before a model call, by the last prompt's tokens: over the hard limit compact, over the
    /// soft limit clear old tool results. Each fires once per crossing of its limit.
    pub(super) async fn manage_context(&self, history: &[Message]) -> Result<()> {
        let limits = self.context_limits;
        let (tokens, soft_fired, hard_fired) = {
            let state = &self.shared.lock().context;
            (state.last_prompt_tokens, state.soft_fired, state.hard_fired)
        };
        // A compaction is this step's one change; when there is nothing to compact or the
        // summary failed, clearing old tool results is the relief left.
        if tokens >= limits.hard
            && !hard_fired
            && matches!(
                self.compact(history).await?,
                Compacted::Done { .. } | Compacted::Cancelled
            )
        {
            return Ok(());
        }
        if tokens >= limits.soft && !soft_fired {
            let tool_call_ids = self.shared.lock().context.clearable(history);
            if tool_call_ids.is_empty() {
                return Ok(());
            }
            let change = ContextChange::Cleared { tool_call_ids };
            self.log.append_context(&change).await?;
            let mut state = self.shared.lock();
            state.context.apply(&change);
            state.context.soft_fired = true;
        }
        Ok(())
    }

    /// Compact the history now (hard limit or context overflow); the hard limit then waits
    /// until the prompt goes back under it, also when the summary failed.
    pub(super) async fn compact(&self, history: &[Message]) -> Result<Compacted> {
        self.shared.lock().context.hard_fired = true;
        let outcome = Compactor {
            llm: &self.llm,
            log: &*self.log,
            shared: &self.shared,
            session_id: &self.session_id,
            system: &self.system,
            tools: &self.tools.current().specs,
            run_id: Some(self.run_id.clone()),
            cancel: &self.cancel,
            summary_input_chars: self.context_limits.summary_input_chars(),
            interceptors: &self.interceptors,
            trigger: CompactTrigger::Auto,
            focus: None,
        }
        .compact(history)
        .await?;
        if outcome == Compacted::NothingToCompact {
            // No model call was made: try again at the next step (a new user turn may come).
            self.shared.lock().context.hard_fired = false;
        }
        Ok(outcome)
    }
}
