//! The outcome of one finished run for scripts: `run --json`'s last line, the result object
//! (`type: "result"`), and `run --output final`'s text. Read back from the session's log (a
//! replay from the seq the run started after), so it is what the daemon recorded.

use std::collections::HashMap;
use std::time::Duration;

use protocol::event::{Event, MessageRole, RunStatus, Usage};
use serde::Serialize;

use crate::client::Connection;
use crate::follow;
use crate::output::CommandError;

/// How long reading the run back may take: its events are already in the log.
const READ_BACK_TIMEOUT: Duration = Duration::from_secs(10);

/// One finished run, as scripts read it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// Always `"result"`: the line that ends `run --json`'s output.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub session_id: String,
    pub run_id: String,
    /// `completed`, `cancelled`, `failed`, `maxSteps` or `interrupted`.
    pub status: Option<RunStatus>,
    /// The last assistant message with text (empty when the model said nothing).
    pub final_text: String,
    pub usage: Usage,
    /// What the run cost in US dollars, when prices are configured for its model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Model calls the run made.
    pub steps: u32,
    /// Tool calls not run because an approval was denied.
    pub denials: Vec<Denial>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A denied tool call.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Denial {
    pub tool: String,
    pub summary: String,
    /// `client:<name>`, `timeout`, `mode`, `cancel` or `restart`.
    pub decided_by: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl RunResult {
    /// Fold one event of the run into the result; true once the run has finished.
    pub fn apply(
        &mut self,
        event: &Event,
        pending: &mut HashMap<String, (String, String)>,
    ) -> bool {
        if event.run_id().is_some_and(|run_id| run_id != self.run_id) {
            return false;
        }
        match event {
            Event::TurnStarted { .. } => self.steps += 1,
            Event::MessageCompleted {
                role: MessageRole::Assistant,
                content,
                ..
            } if !content.trim().is_empty() => self.final_text.clone_from(content),
            Event::ApprovalRequested { approval, .. } => {
                pending.insert(
                    approval.approval_id.clone(),
                    (approval.tool.clone(), approval.summary.clone()),
                );
            }
            Event::ApprovalResolved {
                approval_id,
                decision,
                decided_by,
                reason,
                ..
            } if !decision.allows() => {
                let (tool, summary) = pending.remove(approval_id).unwrap_or_default();
                self.denials.push(Denial {
                    tool,
                    summary,
                    decided_by: decided_by.clone(),
                    reason: reason.clone(),
                });
            }
            Event::RunFinished {
                status,
                error,
                usage,
                cost_usd,
                ..
            } => {
                self.status = Some(*status);
                self.error.clone_from(error);
                self.usage = *usage;
                self.cost_usd = *cost_usd;
                return true;
            }
            _ => {}
        }
        false
    }
}

/// Read run `run_id` of `session_id` back from the log, from `after_seq`.
pub async fn read_back(
    connection: &Connection,
    session_id: &str,
    run_id: &str,
    after_seq: u64,
) -> Result<RunResult, CommandError> {
    let mut result = RunResult {
        kind: "result",
        session_id: session_id.to_owned(),
        run_id: run_id.to_owned(),
        ..RunResult::default()
    };
    let mut pending = HashMap::new();
    let mut subscription = follow::subscribe(connection, session_id, after_seq).await?;
    let read = async {
        while let Some(next) = subscription.next().await {
            let Ok(envelope) = next else { continue };
            let Ok(event) = serde_json::from_value::<Event>(envelope.event) else {
                continue;
            };
            if result.apply(&event, &mut pending) {
                return true;
            }
        }
        false
    };
    match tokio::time::timeout(READ_BACK_TIMEOUT, read).await {
        Ok(true) => Ok(result),
        _ => Err(CommandError::failed(format!(
            "cannot read the outcome of run {run_id} back from session {session_id}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::approval::ApprovalDecision;

    #[test]
    fn every_kind_of_denial_is_listed_and_the_cost_kept() {
        let mut result = RunResult {
            run_id: "run_1".to_owned(),
            ..RunResult::default()
        };
        let mut pending = HashMap::new();
        let resolved = |id: &str, decision| Event::ApprovalResolved {
            run_id: "run_1".to_owned(),
            approval_id: id.to_owned(),
            tool_call_id: "c".to_owned(),
            decision,
            decided_by: "client:t".to_owned(),
            reason: None,
            session_rule: None,
        };
        for (id, decision) in [
            ("apr_1", ApprovalDecision::Deny),
            ("apr_2", ApprovalDecision::DenyAlways),
            ("apr_3", ApprovalDecision::AllowOnce),
        ] {
            assert!(!result.apply(&resolved(id, decision), &mut pending));
        }
        assert_eq!(result.denials.len(), 2, "{:?}", result.denials);
        let finished = Event::RunFinished {
            run_id: "run_1".to_owned(),
            status: RunStatus::Completed,
            error: None,
            usage: Usage::default(),
            cost_usd: Some(0.25),
        };
        assert!(result.apply(&finished, &mut pending));
        assert_eq!(result.cost_usd, Some(0.25));
    }
}
