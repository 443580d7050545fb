//! The approvals of `agentctl run`'s own run: a pure state machine that takes events, key
//! presses and failed answers and says what to do (print, answer, prompt, stop prompting).
//! `follow` performs the actions; no I/O here.

use std::collections::{HashMap, HashSet, VecDeque};

use protocol::approval::{ApprovalDecision, PendingApproval};
use protocol::error::ALREADY_DECIDED;
use protocol::event::Event;

use crate::approve_policy::{
    ApprovePolicy, Handling, KeyAction, decide, decision_words, key_action, question,
};
use crate::render::{one_line, truncate};

/// Longest summary or reason shown in one approval line.
const TEXT_MAX_CHARS: usize = 120;

/// Something `follow` must do for the desk, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum DeskAction {
    /// A line on stderr.
    Note(String),
    /// Send `approval/respond`.
    Respond {
        approval_id: String,
        decision: ApprovalDecision,
        reason: Option<String>,
    },
    /// Show `header` as a line and `question` as the prompt, and start reading keys.
    Prompt { header: String, question: String },
    /// Stop reading keys and erase the prompt.
    ClosePrompt,
}

/// The approvals of one run.
#[derive(Debug)]
pub struct ApprovalDesk {
    run_id: String,
    handling: Handling,
    /// The approval the prompt shows.
    prompting: Option<PendingApproval>,
    /// Approvals asked while another was prompted, oldest first (parallel tool calls).
    queued: VecDeque<PendingApproval>,
    /// What this client answered, by approval id, and whether that was already announced
    /// (a policy's line): the agreeing resolution announces a key's answer once it is final;
    /// one that differs was decided elsewhere first.
    answered: HashMap<String, (ApprovalDecision, bool)>,
    /// Approval ids seen, so a replayed request is not handled twice.
    seen: HashSet<String>,
}

impl ApprovalDesk {
    pub fn new(run_id: String, handling: Handling) -> ApprovalDesk {
        ApprovalDesk {
            run_id,
            handling,
            prompting: None,
            queued: VecDeque::new(),
            answered: HashMap::new(),
            seen: HashSet::new(),
        }
    }

    /// Whether the prompt is up (keys are wanted).
    pub fn is_prompting(&self) -> bool {
        self.prompting.is_some()
    }

    /// One event of the session (each once, in order).
    pub fn on_event(&mut self, event: &Event) -> Vec<DeskAction> {
        match event {
            Event::ApprovalRequested { run_id, approval } if *run_id == self.run_id => {
                if !self.seen.insert(approval.approval_id.clone()) {
                    return Vec::new();
                }
                self.requested(approval.clone())
            }
            Event::ApprovalResolved {
                run_id,
                approval_id,
                decision,
                decided_by,
                ..
            } if *run_id == self.run_id => self.resolved(approval_id, *decision, decided_by),
            Event::RunFinished { run_id, .. } if *run_id == self.run_id => {
                self.queued.clear();
                match self.prompting.take() {
                    Some(_) => vec![DeskAction::ClosePrompt],
                    None => Vec::new(),
                }
            }
            _ => Vec::new(),
        }
    }

    /// A key pressed while prompting.
    pub fn on_key(&mut self, key: u8) -> Vec<DeskAction> {
        let Some(approval) = &self.prompting else {
            return Vec::new();
        };
        let KeyAction::Decide(decision) = key_action(key, &approval.options) else {
            return Vec::new();
        };
        let approval_id = approval.approval_id.clone();
        self.prompting = None;
        self.answered.insert(approval_id.clone(), (decision, false));
        let mut actions = vec![
            DeskAction::ClosePrompt,
            DeskAction::Respond {
                approval_id,
                decision,
                reason: None,
            },
        ];
        actions.extend(self.prompt_next());
        actions
    }

    /// Our `approval/respond` failed with `code` and `message`.
    pub fn on_respond_error(
        &mut self,
        approval_id: &str,
        code: i32,
        message: &str,
    ) -> Vec<DeskAction> {
        self.answered.remove(approval_id);
        let note = if code == ALREADY_DECIDED {
            format!("approval {approval_id} was already decided by someone else ({message})")
        } else {
            format!(
                "agentctl: cannot answer approval {approval_id}: {message}; \
                 answer with `agentctl approve {approval_id}` or `agentctl deny {approval_id}`"
            )
        };
        vec![DeskAction::Note(note)]
    }

    /// The prompt could not take the terminal: leave this and later approvals pending.
    pub fn prompt_failed(&mut self, error: &str) -> Vec<DeskAction> {
        self.handling = Handling::Policy(ApprovePolicy::Wait);
        let mut actions = vec![DeskAction::Note(format!(
            "agentctl: cannot read keys from the terminal ({error}); approvals wait for \
             another client"
        ))];
        let waiting = self
            .prompting
            .take()
            .into_iter()
            .chain(self.queued.drain(..));
        actions.extend(waiting.map(|approval| DeskAction::Note(wait_line(&approval))));
        actions
    }

    /// Ctrl-C: stop prompting (the run is being cancelled, which resolves the approvals).
    pub fn interrupt(&mut self) -> Vec<DeskAction> {
        self.queued.clear();
        match self.prompting.take() {
            Some(_) => vec![DeskAction::ClosePrompt],
            None => Vec::new(),
        }
    }

    fn requested(&mut self, approval: PendingApproval) -> Vec<DeskAction> {
        let policy = match self.handling {
            Handling::Prompt => {
                self.queued.push_back(approval);
                return self.prompt_next();
            }
            Handling::Policy(policy) => policy,
        };
        let Some((decision, reason)) = decide(policy, &approval) else {
            return vec![DeskAction::Note(wait_line(&approval))];
        };
        let what = what(&approval);
        let note = match (decision.allows(), policy) {
            (true, _) => format!(
                "approval {}: {} {what} (--approve {})",
                approval.approval_id,
                decision_words(decision),
                policy_name(policy)
            ),
            (false, ApprovePolicy::Never) => format!(
                "approval {}: denied {what}: agentctl run is not interactive (rerun with \
                 --approve edits|all, or --approve wait to answer from another terminal)",
                approval.approval_id
            ),
            (false, _) => format!(
                "approval {}: denied {what}: --approve {} allows only write_file and edit_file",
                approval.approval_id,
                policy_name(policy)
            ),
        };
        self.answered
            .insert(approval.approval_id.clone(), (decision, true));
        vec![
            DeskAction::Note(note),
            DeskAction::Respond {
                approval_id: approval.approval_id,
                decision,
                reason,
            },
        ]
    }

    fn resolved(
        &mut self,
        approval_id: &str,
        decision: ApprovalDecision,
        decided_by: &str,
    ) -> Vec<DeskAction> {
        if let Some((ours, announced)) = self.answered.remove(approval_id)
            && ours == decision
        {
            if announced {
                return Vec::new();
            }
            return vec![DeskAction::Note(format!(
                "approval {approval_id}: {}",
                decision_words(decision)
            ))];
        }
        let note = DeskAction::Note(format!(
            "approval {approval_id}: {} by {decided_by}",
            decision_words(decision)
        ));
        if self
            .prompting
            .as_ref()
            .is_some_and(|approval| approval.approval_id == approval_id)
        {
            self.prompting = None;
            let mut actions = vec![DeskAction::ClosePrompt, note];
            actions.extend(self.prompt_next());
            return actions;
        }
        self.queued
            .retain(|approval| approval.approval_id != approval_id);
        vec![note]
    }

    /// Prompt for the oldest queued approval when none is prompted.
    fn prompt_next(&mut self) -> Vec<DeskAction> {
        if self.prompting.is_some() {
            return Vec::new();
        }
        let Some(approval) = self.queued.pop_front() else {
            return Vec::new();
        };
        let header = format!(
            "approval needed: {} — {}",
            what(&approval),
            truncate(&one_line(&approval.reason), TEXT_MAX_CHARS)
        );
        let question = question(&approval.options);
        self.prompting = Some(approval);
        vec![DeskAction::Prompt { header, question }]
    }
}

/// The tool and its one-line summary.
fn what(approval: &PendingApproval) -> String {
    let summary = truncate(&one_line(&approval.summary), TEXT_MAX_CHARS);
    if summary.is_empty() {
        approval.tool.clone()
    } else {
        format!("{} {summary}", approval.tool)
    }
}

/// The line for an approval left pending for another client.
fn wait_line(approval: &PendingApproval) -> String {
    let id = &approval.approval_id;
    format!(
        "approval {id} waits: {} ({}); answer with `agentctl approve {id}` or `agentctl deny {id}`",
        what(approval),
        truncate(&one_line(&approval.reason), TEXT_MAX_CHARS)
    )
}

fn policy_name(policy: ApprovePolicy) -> &'static str {
    match policy {
        ApprovePolicy::Never => "never",
        ApprovePolicy::Wait => "wait",
        ApprovePolicy::Edits => "edits",
        ApprovePolicy::All => "all",
    }
}

#[cfg(test)]
mod tests;
