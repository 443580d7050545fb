//! The approval broker: tool calls that need a person wait here until any client answers
//! (`approval/respond`), a timeout passes, or the run is cancelled. The first answer wins; later
//! answers get a clear "already decided" error.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use tokio::sync::oneshot;

use protocol::approval::{ApprovalDecision, PendingApproval};

/// Decided approvals remembered so a late answer is told "already decided", not "not found".
const REMEMBERED_DECISIONS: usize = 1024;

/// How an approval was decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolution {
    pub decision: ApprovalDecision,
    /// `client:<name>`, `timeout`, `cancel`, `restart` or `mode`.
    pub decided_by: String,
    pub reason: Option<String>,
}

/// Why an answer was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RespondError {
    #[error("approval not found: {0}; list pending approvals with `agentctl approvals list`")]
    NotFound(String),
    #[error("approval {id} was already decided ({decision:?} by {decided_by})")]
    AlreadyDecided {
        id: String,
        decision: ApprovalDecision,
        decided_by: String,
    },
    #[error("{0}")]
    NotOffered(String),
}

struct Waiting {
    approval: PendingApproval,
    /// The allow rule `allowAlways` would add, when one is safe to add.
    always_rule: Option<String>,
    /// Registration order, for listing oldest first.
    order: u64,
    answer: oneshot::Sender<Resolution>,
}

#[derive(Default)]
struct BrokerState {
    pending: HashMap<String, Waiting>,
    decided: VecDeque<(String, Resolution)>,
    next_order: u64,
    /// Rules `allowAlways` appended to the user config since the daemon started. The config is
    /// read once at startup, so without these a new session would ask again until a restart.
    always_rules: Vec<String>,
}

/// Every pending approval of the daemon.
#[derive(Default)]
pub struct ApprovalBroker {
    state: Mutex<BrokerState>,
}

impl ApprovalBroker {
    /// Register an approval; the receiver resolves when it is decided.
    pub fn register(
        &self,
        approval: PendingApproval,
        always_rule: Option<String>,
    ) -> oneshot::Receiver<Resolution> {
        let (answer, decided) = oneshot::channel();
        let mut state = self.lock();
        let order = state.next_order;
        state.next_order += 1;
        state.pending.insert(
            approval.approval_id.clone(),
            Waiting {
                approval,
                always_rule,
                order,
                answer,
            },
        );
        decided
    }

    /// Decide approval `id`. The first decision wins.
    pub fn decide(&self, id: &str, resolution: Resolution) -> Result<(), RespondError> {
        let mut state = self.lock();
        let Some(waiting) = state.pending.remove(id) else {
            return Err(
                match state.decided.iter().find(|(decided, _)| decided == id) {
                    Some((_, earlier)) => RespondError::AlreadyDecided {
                        id: id.to_owned(),
                        decision: earlier.decision,
                        decided_by: earlier.decided_by.clone(),
                    },
                    None => RespondError::NotFound(id.to_owned()),
                },
            );
        };
        if state.decided.len() >= REMEMBERED_DECISIONS {
            state.decided.pop_front();
        }
        state.decided.push_back((id.to_owned(), resolution.clone()));
        // The waiter may have gone (its run ended); the decision is still recorded.
        let _ = waiting.answer.send(resolution);
        Ok(())
    }

    /// Remove approval `id` if it is still pending, without deciding it: its run no longer
    /// waits (the request could not be persisted, or the run ended). Returns whether it was
    /// pending.
    pub fn withdraw(&self, id: &str) -> bool {
        self.lock().pending.remove(id).is_some()
    }

    /// The pending approval `id` and its `allowAlways` rule, if it is still pending.
    pub fn get(&self, id: &str) -> Option<(PendingApproval, Option<String>)> {
        self.lock()
            .pending
            .get(id)
            .map(|w| (w.approval.clone(), w.always_rule.clone()))
    }

    /// Whether `id` is still pending.
    pub fn is_pending(&self, id: &str) -> bool {
        self.lock().pending.contains_key(id)
    }

    /// Remember a rule `allowAlways` added to the user config, for the runs started from now on.
    pub fn remember_always_rule(&self, rule: String) {
        let mut state = self.lock();
        if !state.always_rules.contains(&rule) {
            state.always_rules.push(rule);
        }
    }

    /// Rules added by `allowAlways` since startup, oldest first (see [`Self::remember_always_rule`]).
    pub fn always_rules(&self) -> Vec<String> {
        self.lock().always_rules.clone()
    }

    /// Pending approvals, oldest first, optionally of one session.
    pub fn list(&self, session_id: Option<&str>) -> Vec<PendingApproval> {
        let state = self.lock();
        let mut waiting: Vec<&Waiting> = state
            .pending
            .values()
            .filter(|w| session_id.is_none_or(|id| w.approval.session_id == id))
            .collect();
        waiting.sort_by_key(|w| w.order);
        waiting.iter().map(|w| w.approval.clone()).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BrokerState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approval(id: &str, session: &str) -> PendingApproval {
        PendingApproval {
            approval_id: id.into(),
            session_id: session.into(),
            run_id: "run".into(),
            tool_call_id: "call".into(),
            tool: "run_shell".into(),
            summary: "ls".into(),
            input: serde_json::json!({"command": "ls"}),
            reason: "shell commands ask in default mode".into(),
            options: vec![ApprovalDecision::AllowOnce, ApprovalDecision::Deny],
            requested_at: "t".into(),
            expires_at: "t".into(),
        }
    }

    fn by(who: &str, decision: ApprovalDecision) -> Resolution {
        Resolution {
            decision,
            decided_by: who.into(),
            reason: None,
        }
    }

    #[tokio::test]
    async fn the_first_answer_wins_and_later_ones_are_told_who_decided() {
        let broker = ApprovalBroker::default();
        let decided = broker.register(approval("apr_1", "ses_1"), None);
        broker
            .decide("apr_1", by("client:a", ApprovalDecision::AllowOnce))
            .unwrap();
        let late = broker
            .decide("apr_1", by("client:b", ApprovalDecision::Deny))
            .unwrap_err();
        assert_eq!(
            late,
            RespondError::AlreadyDecided {
                id: "apr_1".into(),
                decision: ApprovalDecision::AllowOnce,
                decided_by: "client:a".into()
            }
        );
        assert_eq!(decided.await.unwrap().decided_by, "client:a");
        assert!(matches!(
            broker.decide("apr_x", by("client:a", ApprovalDecision::Deny)),
            Err(RespondError::NotFound(_))
        ));
    }

    #[test]
    fn a_withdrawn_approval_is_no_longer_listed_or_answerable() {
        let broker = ApprovalBroker::default();
        let _a = broker.register(approval("apr_1", "ses_1"), None);
        assert!(broker.withdraw("apr_1"));
        assert!(!broker.withdraw("apr_1"));
        assert!(broker.list(None).is_empty());
        assert!(matches!(
            broker.decide("apr_1", by("client:a", ApprovalDecision::AllowOnce)),
            Err(RespondError::NotFound(_))
        ));
    }

    #[test]
    fn lists_pending_oldest_first_per_session() {
        let broker = ApprovalBroker::default();
        let _a = broker.register(approval("apr_1", "ses_1"), None);
        let _b = broker.register(approval("apr_2", "ses_2"), None);
        let _c = broker.register(approval("apr_3", "ses_1"), None);
        let ids = |list: Vec<PendingApproval>| {
            list.into_iter().map(|a| a.approval_id).collect::<Vec<_>>()
        };
        assert_eq!(ids(broker.list(None)), ["apr_1", "apr_2", "apr_3"]);
        assert_eq!(ids(broker.list(Some("ses_1"))), ["apr_1", "apr_3"]);
    }
}
