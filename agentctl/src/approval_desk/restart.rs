//! The desk across a lost connection and a daemon restart. While disconnected nothing is
//! prompted (no answer could be sent); once subscribed again, what was asked waits until the
//! replay reaches the session's last seq (a question decided meanwhile is not asked), then is
//! asked again, once. A pending approval outlives a restart with its id and is announced again
//! (`approvalRequested`): one still to be asked is not asked twice, one already answered gets
//! the same answer again (it may have been lost with the connection), one whose answer failed
//! is asked anew, one left for another client (`--approve wait`) still waits, unsaid. A budget
//! pause does not outlive a restart: the resumed run (`runResumed`) checks its budgets again
//! and asks with a new request, so the old one is dropped.

use protocol::approval::PendingApproval;

use super::{ApprovalDesk, Ask, DeskAction};
use crate::approve_policy::{ApprovePolicy, Handling};

impl ApprovalDesk {
    /// The connection to the daemon was lost: stop prompting; what was asked stays queued
    /// until `reconnected`.
    pub fn connection_lost(&mut self) -> Vec<DeskAction> {
        self.typing_reason = None;
        self.held_until = Some(u64::MAX);
        match self.prompting.take() {
            Some(ask) => {
                self.queued.push_front(ask);
                vec![DeskAction::ClosePrompt]
            }
            None => Vec::new(),
        }
    }

    /// Subscribed again after a lost connection: prompt once the replay reaches `replay_end`
    /// (the session's last seq now). Call `caught_up` with the last seq handled next: the
    /// replay may hold nothing new.
    pub fn reconnected(&mut self, replay_end: u64) {
        self.reconnected = true;
        self.held_until = Some(replay_end);
    }

    /// `approval` was announced again (the resumed run asks again after a restart).
    pub(super) fn asked_again(&mut self, approval: &PendingApproval) -> Vec<DeskAction> {
        let id = approval.approval_id.as_str();
        let asking = self
            .prompting
            .iter()
            .chain(&self.queued)
            .any(|ask| ask.id() == id);
        if asking || self.decided.contains(id) {
            return Vec::new();
        }
        if let Some(answer) = self.answered.get(id) {
            return vec![DeskAction::Respond {
                approval_id: id.to_owned(),
                decision: answer.decision,
                reason: answer.reason.clone(),
                policy: answer.policy.clone(),
            }];
        }
        // Left for another client (`--approve wait`): its line was said; it still waits.
        if self.handling == Handling::Policy(ApprovePolicy::Wait) {
            return Vec::new();
        }
        // Its answer failed: as if asked for the first time.
        self.requested(approval.clone())
    }

    /// Run `run_id` goes on after a restart: its budget pause from before is gone.
    pub(super) fn run_resumed(&mut self, run_id: &str) -> Vec<DeskAction> {
        let old_pause = |ask: &Ask| matches!(ask, Ask::Budget { .. }) && ask.run_id() == run_id;
        self.queued.retain(|ask| !old_pause(ask));
        if !self.prompting.as_ref().is_some_and(old_pause) {
            return Vec::new();
        }
        self.prompting = None;
        self.typing_reason = None;
        let mut actions = vec![DeskAction::ClosePrompt];
        actions.extend(self.prompt_next());
        actions
    }
}
