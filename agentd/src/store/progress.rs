//! What the run the daemon was in when it stopped had done, read back from the session file so
//! the run can be resumed (`session::resume`): the options it was started with, its steps, its
//! resumes so far, and its approvals (those still pending, whole, and the answers given to the
//! others).

use protocol::approval::{ApprovalDecision, PendingApproval};
use protocol::event::{Event, RunStartOptions};

/// An answer recorded for one of the run's approvals.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedAnswer {
    pub tool_call_id: String,
    pub decision: ApprovalDecision,
    pub decided_by: String,
    pub reason: Option<String>,
}

/// The unfinished run's progress (reset at each `runStarted`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunProgress {
    /// What its `runStarted` recorded beyond the prompt (its model, tool narrowing, step
    /// limit…), which it goes on with when it resumes.
    pub options: Option<RunStartOptions>,
    /// The highest step it started (`turnStarted`).
    pub steps: u32,
    /// How often it was resumed already (`runResumed`).
    pub resumes: u32,
    /// Its approvals asked and never answered, in the order they were asked.
    pub pending: Vec<PendingApproval>,
    /// The answers its approvals got.
    pub answered: Vec<RecordedAnswer>,
}

impl RunProgress {
    /// Take in one event of the run `unfinished` (the events of other runs are not looked at).
    pub(super) fn note(&mut self, unfinished: Option<&str>, event: &Event) {
        if event.run_id().is_none() || event.run_id() != unfinished {
            return;
        }
        match event {
            Event::RunStarted { options, .. } => self.options = options.clone(),
            Event::TurnStarted { step, .. } => self.steps = self.steps.max(*step),
            Event::RunResumed { .. } => self.resumes += 1,
            Event::ApprovalRequested { approval, .. } => {
                // Asked again after a resume, with the same id: one pending approval.
                self.pending
                    .retain(|pending| pending.approval_id != approval.approval_id);
                self.pending.push(approval.clone());
            }
            Event::ApprovalResolved {
                approval_id,
                tool_call_id,
                decision,
                decided_by,
                reason,
                ..
            } => {
                self.pending
                    .retain(|pending| pending.approval_id != *approval_id);
                self.answered.push(RecordedAnswer {
                    tool_call_id: tool_call_id.clone(),
                    decision: *decision,
                    decided_by: decided_by.clone(),
                    reason: reason.clone(),
                });
            }
            _ => {}
        }
    }
}
