//! A run resumed after a daemon restart (a graceful stop or a crash), under its own run id.
//! What its last batch had done decides how it goes on: when one of the batch's approvals was
//! still pending, the gate waits for every approval before any call runs, so none of the
//! batch's calls ran; they are decided again (the pending approval asked again with its id and
//! what was left of its timeout, the answered ones as answered) and run. Otherwise every call
//! of the batch without a result may have run: each gets [`INTERRUPTED_BY_RESTART`] and is
//! never run again. The model then reads [`RESUME_NOTE`] and the run goes on from its next
//! model call.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Result;

use super::Run;
use agentd_core::conversation::{Message, ToolCall, orphaned_tool_calls};
use agentd_policy::approval::Resolution;
use protocol::approval::PendingApproval;
use protocol::event::{Event, UserMessageKind};

/// The result of a tool call that had started (or may have) when the daemon stopped.
pub const INTERRUPTED_BY_RESTART: &str =
    "interrupted by a daemon restart: its effect is unknown; check before repeating it";

/// What the model reads when its run goes on after a restart.
pub const RESUME_NOTE: &str = "(agentd) The daemon restarted while you were working; your run continues here. A tool call whose result says \"interrupted by a daemon restart\" may or may not have taken effect: check its effect before repeating it.";

/// A run resumes at most this often: a run that crashes the daemon must not spend forever.
pub const MAX_RESUMES: u32 = 2;

/// What was said of an approval of the last batch before the restart.
#[derive(Clone, Debug)]
pub enum PriorAnswer {
    /// Still pending: asked again with the same id, waiting at most `remaining`.
    Pending {
        approval: Box<PendingApproval>,
        remaining: Duration,
    },
    /// Answered: the call is decided as it was.
    Answered(Resolution),
}

/// How a run that was active when the daemon stopped goes on.
#[derive(Debug)]
pub struct Resumption {
    /// This resume's number (1 or 2).
    pub attempt: u32,
    /// The steps (model calls) the run had started.
    pub steps: u32,
    /// The last batch's calls that had not run: decided again, then run.
    pub unrun: Vec<ToolCall>,
    /// What the approvals of `unrun` had said, by tool call id.
    pub prior: HashMap<String, PriorAnswer>,
    /// The calls that may have run (id, tool): they get [`INTERRUPTED_BY_RESTART`].
    pub interrupted: Vec<(String, String)>,
}

/// An approval of the run, as its log recorded it.
#[derive(Clone, Debug)]
pub enum RecordedApproval {
    /// Asked and never answered; `remaining` is what is left of its timeout.
    Pending {
        approval: Box<PendingApproval>,
        remaining: Duration,
    },
    /// Answered, for the call `tool_call_id`.
    Answered {
        tool_call_id: String,
        resolution: Resolution,
    },
}

impl Resumption {
    /// How a run whose session history is `history` goes on after its `attempt`-th restart,
    /// having started `steps` model calls, with its approvals as recorded. None: it cannot go
    /// on (its prompt never reached the history).
    pub fn plan(
        history: &[Message],
        attempt: u32,
        steps: u32,
        approvals: Vec<RecordedApproval>,
    ) -> Option<Resumption> {
        if steps == 0 {
            return None;
        }
        let orphans = orphaned_tool_calls(history);
        let last_calls: &[ToolCall] = history
            .iter()
            .rev()
            .find_map(|message| match message {
                Message::Assistant { tool_calls, .. } => Some(tool_calls.as_slice()),
                _ => None,
            })
            .unwrap_or_default();
        let is_orphan = |id: &str| orphans.iter().any(|(orphan, _)| orphan == id);
        let waited = approvals.iter().any(|approval| {
            matches!(approval, RecordedApproval::Pending { approval, .. } if is_orphan(&approval.tool_call_id))
        });
        let mut plan = Resumption {
            attempt,
            steps,
            unrun: Vec::new(),
            prior: HashMap::new(),
            interrupted: Vec::new(),
        };
        if !waited {
            plan.interrupted = orphans;
            return Some(plan);
        }
        plan.unrun = last_calls
            .iter()
            .filter(|call| is_orphan(&call.id))
            .cloned()
            .collect();
        for approval in approvals {
            let (id, prior) = match approval {
                RecordedApproval::Pending {
                    approval,
                    remaining,
                } => (
                    approval.tool_call_id.clone(),
                    PriorAnswer::Pending {
                        approval,
                        remaining,
                    },
                ),
                RecordedApproval::Answered {
                    tool_call_id,
                    resolution,
                } => (tool_call_id, PriorAnswer::Answered(resolution)),
            };
            if is_orphan(&id) {
                plan.prior.insert(id, prior);
            }
        }
        Some(plan)
    }
}

impl Run {
    /// Go on after a restart: `runResumed`, the results of the interrupted calls, the unrun
    /// calls decided and run, and the note; returns the history the model sees next.
    pub(super) async fn resume(
        &self,
        plan: Resumption,
        warnings: Vec<String>,
    ) -> Result<Vec<Message>> {
        let interrupted_ids: Vec<String> =
            plan.interrupted.iter().map(|(id, _)| id.clone()).collect();
        self.log
            .append(Event::RunResumed {
                run_id: self.run_id.clone(),
                attempt: plan.attempt,
                interrupted_tool_calls: interrupted_ids,
            })
            .await?;
        self.warn(&warnings).await?;
        for (tool_call_id, tool_name) in plan.interrupted {
            let message = Message::Tool {
                tool_call_id: tool_call_id.clone(),
                tool_name: tool_name.clone(),
                content: INTERRUPTED_BY_RESTART.to_owned(),
                is_error: true,
                images: Vec::new(),
            };
            let completed = Event::ToolCompleted {
                run_id: self.run_id.clone(),
                tool_call_id,
                tool: tool_name,
                output: INTERRUPTED_BY_RESTART.to_owned(),
                is_error: true,
                duration_ms: 0,
            };
            self.push_message_then(&mut Vec::new(), message, vec![completed])
                .await?;
        }
        let mut history = self.shared.lock().history.clone();
        if !plan.unrun.is_empty() {
            if let Ok(mut prior) = self.permissions.prior.lock() {
                *prior = plan.prior;
            }
            let (results, _halted) = self.run_tools(&plan.unrun).await?;
            for result in results {
                let message = Message::Tool {
                    tool_call_id: result.call.id,
                    tool_name: result.call.name,
                    content: result.output.content,
                    is_error: result.output.is_error,
                    images: result.output.images,
                };
                self.push_message(&mut history, message).await?;
            }
        }
        self.push_user(
            &mut history,
            RESUME_NOTE.to_owned(),
            UserMessageKind::FollowUp,
            Vec::new(),
        )
        .await?;
        Ok(history)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::approval::ApprovalDecision;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.to_owned(),
            name: "run_shell".to_owned(),
            arguments: "{}".to_owned(),
        }
    }

    fn pending(tool_call_id: &str) -> RecordedApproval {
        RecordedApproval::Pending {
            approval: Box::new(PendingApproval {
                approval_id: format!("apr_{tool_call_id}"),
                session_id: "ses_1".to_owned(),
                run_id: "run_1".to_owned(),
                tool_call_id: tool_call_id.to_owned(),
                tool: "run_shell".to_owned(),
                summary: String::new(),
                input: serde_json::json!({}),
                reason: String::new(),
                options: Vec::new(),
                requested_at: String::new(),
                expires_at: String::new(),
                task_id: None,
                agent_type: None,
                parent_run_id: None,
                session_rule: None,
                always_rule: None,
            }),
            remaining: Duration::from_secs(30),
        }
    }

    fn history(calls: &[&str], results: &[&str]) -> Vec<Message> {
        let mut history = vec![
            Message::user("go".to_owned()),
            Message::Assistant {
                content: String::new(),
                tool_calls: calls.iter().map(|id| call(id)).collect(),
            },
        ];
        for id in results {
            history.push(Message::Tool {
                tool_call_id: (*id).to_owned(),
                tool_name: "run_shell".to_owned(),
                content: "ok".to_owned(),
                is_error: false,
                images: Vec::new(),
            });
        }
        history
    }

    #[test]
    fn a_batch_that_was_running_is_interrupted_never_run_again() {
        let plan = Resumption::plan(&history(&["a", "b", "c"], &["a"]), 1, 2, Vec::new()).unwrap();
        assert!(plan.unrun.is_empty());
        let ids: Vec<&str> = plan.interrupted.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["b", "c"]);
    }

    #[test]
    fn a_batch_waiting_for_an_approval_is_decided_again_with_its_answers() {
        let answered = RecordedApproval::Answered {
            tool_call_id: "a".to_owned(),
            resolution: Resolution {
                decision: ApprovalDecision::AllowOnce,
                decided_by: "client:x".to_owned(),
                reason: None,
            },
        };
        let plan = Resumption::plan(
            &history(&["a", "b", "c"], &[]),
            1,
            1,
            vec![answered, pending("b")],
        )
        .unwrap();
        assert!(plan.interrupted.is_empty());
        let ids: Vec<&str> = plan.unrun.iter().map(|call| call.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert!(matches!(
            plan.prior.get("a"),
            Some(PriorAnswer::Answered(_))
        ));
        assert!(matches!(
            plan.prior.get("b"),
            Some(PriorAnswer::Pending { .. })
        ));
        assert!(!plan.prior.contains_key("c"));
    }

    #[test]
    fn an_approval_of_an_earlier_batch_does_not_hold_the_last_one() {
        // The pending approval names a call that already has a result: the batch ran.
        let plan =
            Resumption::plan(&history(&["a", "b"], &["a"]), 1, 3, vec![pending("a")]).unwrap();
        assert!(plan.unrun.is_empty());
        assert_eq!(plan.interrupted.len(), 1);
    }

    #[test]
    fn a_run_whose_prompt_never_reached_the_history_does_not_resume() {
        assert!(Resumption::plan(&history(&[], &[]), 1, 0, Vec::new()).is_none());
    }
}
