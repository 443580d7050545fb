//! An answer the model stopped at its output token limit (OpenAI's `finish_reason: "length"`,
//! Anthropic's `stop_reason: "max_tokens"`): the run ends there, `completed` with a persisted
//! `warning` that names the cut, never silently.
//!
//! Why end rather than continue with one more request: chat completions cannot resume an
//! assistant message (no prefill), so a continuation would be a new answer that repeats or
//! loses the cut one's last words; and a cut tool call has cut arguments, which must not run.
//! The person reads the warning and decides (raise `max_output_tokens`, ask for less, or send
//! a follow-up). The cut answer's tool calls get a "not run" result each, so the history stays
//! valid and the model learns, at the next prompt, why they did not happen.

use anyhow::Result;

use super::{Run, RunOutcome};
use agentd_core::conversation::{ToolCall, Usage};
use protocol::event::{Event, RunStatus};

/// The result given to each tool call of a cut answer.
pub(crate) const NOT_RUN_ANSWER_CUT: &str = "not run: the answer was cut at the model's output token limit, so this call's arguments may be incomplete; make the call again, with shorter arguments or split in smaller steps";

impl Run {
    /// End the run after an answer cut at the output limit (already persisted with its
    /// `tool_calls`): pair each call with [`NOT_RUN_ANSWER_CUT`], warn, end `completed`.
    pub(super) async fn end_cut_answer(
        &self,
        tool_calls: &[ToolCall],
        finish_reason: &str,
        usage: Usage,
    ) -> Result<RunOutcome> {
        let pairing = super::Pairing::Announced {
            session_id: &self.session_id,
            run_id: &self.run_id,
        };
        super::pair_orphaned_tool_calls(&*self.log, &self.shared, NOT_RUN_ANSWER_CUT, pairing)
            .await?;
        self.log
            .append(Event::Warning {
                message: cut_answer_warning(self.llm.provider(), finish_reason, tool_calls.len()),
            })
            .await?;
        Ok(RunOutcome {
            status: RunStatus::Completed,
            error: None,
            usage,
        })
    }
}

/// What the person is told: the cut, the limit, what did not run, and what to do.
fn cut_answer_warning(
    provider: &agentd_llm::ProviderConfig,
    finish_reason: &str,
    tool_calls: usize,
) -> String {
    let limit = match provider.max_output_tokens {
        Some(tokens) => format!("max_output_tokens = {tokens}"),
        None => "the model's own output limit".to_owned(),
    };
    let calls = match tool_calls {
        0 => String::new(),
        1 => "; its tool call was not run (its arguments may be cut)".to_owned(),
        n => format!("; its {n} tool calls were not run (their arguments may be cut)"),
    };
    format!(
        "the answer was truncated: the model stopped at its output limit ({limit}, finish reason {finish_reason:?}){calls}; raise max_output_tokens in [providers.{}] or ask for a shorter answer, then send a follow-up to continue",
        provider.name
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warning_names_the_cut_the_limit_and_the_calls_not_run() {
        let mut provider = agentd_llm::ProviderConfig {
            name: "local".to_owned(),
            kind: agentd_llm::ProviderKind::OpenAi,
            base_url: "http://h/v1".to_owned(),
            api_key: None,
            api_key_env: None,
            model: "m".to_owned(),
            context_window: None,
            max_output_tokens: Some(256),
            reasoning_effort: None,
            max_retries: 0,
            retry_base_delay_ms: 1,
            retry_max_delay_ms: 1,
            stream_idle_timeout_secs: 1,
            prices: None,
        };
        let warning = cut_answer_warning(&provider, "length", 2);
        assert!(warning.starts_with("the answer was truncated"), "{warning}");
        assert!(warning.contains("max_output_tokens = 256"), "{warning}");
        assert!(
            warning.contains("its 2 tool calls were not run"),
            "{warning}"
        );
        assert!(warning.contains("[providers.local]"), "{warning}");
        provider.max_output_tokens = None;
        let warning = cut_answer_warning(&provider, "max_tokens", 0);
        assert!(
            warning.contains("the model's own output limit"),
            "{warning}"
        );
        assert!(!warning.contains("not run"), "{warning}");
    }
}
