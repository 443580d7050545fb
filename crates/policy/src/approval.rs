//! The approval broker: tool calls that need a person wait here until any client answers
//! (`approval/respond`), a timeout passes, or the run is cancelled. The first answer wins; later
//! answers get a clear "already decided" error. An "always" answer (`allowAlways`,
//! `denyAlways`) is claimed first, then its rule is written to the user config, then the
//! approval is resolved: a racing answer never sees a rule written for a call it denied, and
//! the claim carries its kind, so a rule lands as the kind it was answered.

pub mod waitlist;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use protocol::approval::{ApprovalDecision, PendingApproval};
use waitlist::Waitlist;

/// How an approval was decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolution {
    pub decision: ApprovalDecision,
    /// `client:<name>`, `timeout`, `cancel`, `restart` or `mode`.
    pub decided_by: String,
    pub reason: Option<String>,
}

/// Why an answer was refused. Messages name no client's commands: what to do next is
/// [`RespondError::suggested_method`], sent as `error.data`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RespondError {
    #[error("approval not found: {}; list the pending approvals to see which wait for an answer", protocol::error::echo(.0))]
    NotFound(String),
    #[error(
        "approval {} was already decided ({decision:?} by {decided_by})",
        protocol::error::echo(id)
    )]
    AlreadyDecided {
        id: String,
        decision: ApprovalDecision,
        decided_by: String,
    },
    #[error("{0}")]
    NotOffered(String),
    #[error(
        "invalid approval id {:?}: approval ids are `apr_` followed by letters, digits, `_` or `-`; list the pending approvals to see which wait for an answer",
        protocol::error::echo(.0)
    )]
    InvalidId(String),
    /// The rule of an `allowAlways` answer could not be written; the approval is pending again
    /// (or decided by the answer that raced the claim).
    #[error("{0}")]
    ConfigEdit(String),
}

impl RespondError {
    /// The method whose result helps the user recover from this error, if one does.
    pub fn suggested_method(&self) -> Option<&'static str> {
        use protocol::Method;
        match self {
            RespondError::NotFound(_) | RespondError::InvalidId(_) => {
                Some(protocol::methods::ApprovalList::NAME)
            }
            RespondError::AlreadyDecided { .. }
            | RespondError::NotOffered(_)
            | RespondError::ConfigEdit(_) => None,
        }
    }
}

/// An `allowAlways` or `denyAlways` answer that has claimed its approval: the rule to write
/// and which kind of rule it is. The kind travels with the claim, so releasing it never has to
/// read it back from an approval that may be gone (withdrawn while the rule was written).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Claim {
    rule: String,
    decision: ApprovalDecision,
}

impl Claim {
    fn is_deny(&self) -> bool {
        !self.decision.allows()
    }
}

struct Waiting {
    approval: PendingApproval,
    /// The allow rule `allowAlways` would add, when one is safe to add.
    always_rule: Option<String>,
    /// An `allowAlways` answer whose rule is being written: it has won, other answers are
    /// told "already decided", and it resolves once the rule is in the config.
    claimed: Option<Resolution>,
    /// The first answer that came while claimed (a timeout, a cancel, a client): it decides
    /// the approval if writing the rule fails, so nobody waits on a claim that fell through.
    raced: Option<Resolution>,
}

#[derive(Default)]
struct BrokerState {
    pending: Waitlist<Waiting, Resolution>,
    /// Rules `allowAlways` appended to the user config since the daemon started. The config is
    /// read once at startup, so without these a new session would ask again until a restart.
    always_rules: Vec<String>,
    /// Rules `denyAlways` appended to the user config since the daemon started (likewise).
    never_rules: Vec<String>,
}

/// Every pending approval of the daemon.
#[derive(Default)]
pub struct ApprovalBroker {
    state: Mutex<BrokerState>,
    /// The user config `allowAlways` rules are written to; `None` refuses `allowAlways`.
    config_path: Option<PathBuf>,
}

impl ApprovalBroker {
    /// A broker whose `allowAlways` answers add their rule to the config file at `config_path`.
    pub fn with_config(config_path: PathBuf) -> ApprovalBroker {
        ApprovalBroker {
            state: Mutex::default(),
            config_path: Some(config_path),
        }
    }

    /// A client's answer to approval `id`; returns the rule an `allowAlways` answer added.
    /// `allowAlways` claims the approval (later answers are "already decided"), writes the
    /// rule, then resolves; if the write fails, the approval is pending again (or decided by
    /// the answer that raced the claim) and the error says why. The claim, the write and the
    /// resolution run to the end on a blocking thread even if the caller goes away, so a
    /// dropped request never leaves an approval claimed forever.
    pub async fn respond(
        self: &Arc<Self>,
        id: &str,
        resolution: Resolution,
    ) -> Result<Option<String>, RespondError> {
        if !protocol::id::is_approval_id(id) {
            return Err(RespondError::InvalidId(id.to_owned()));
        }
        if !matches!(
            resolution.decision,
            ApprovalDecision::AllowAlways | ApprovalDecision::DenyAlways
        ) {
            self.decide(id, resolution)?;
            return Ok(None);
        }
        let claim = self.claim(id, &resolution)?;
        let Some(config_path) = self.config_path.clone() else {
            self.release_claim(id, false, &claim);
            return Err(RespondError::ConfigEdit(
                "this daemon has no config file to add the rule to; use allowSession".to_owned(),
            ));
        };
        let broker = self.clone();
        let id_owned = id.to_owned();
        let claim_owned = claim.clone();
        let written = tokio::task::spawn_blocking(move || {
            let rule = &claim_owned.rule;
            let written = if claim_owned.is_deny() {
                agentd_core::config_edit::append_deny_rule_blocking(&config_path, rule)
            } else {
                agentd_core::config_edit::append_allow_rule_blocking(&config_path, rule)
            };
            let written = written.map_err(|err| {
                    format!(
                        "cannot add the rule to {}: {err:#}; this answer did not decide the approval: answer again (allowSession, allowOnce and deny need no config edit)",
                        config_path.display()
                    )
                });
            broker.release_claim(&id_owned, written.is_ok(), &claim_owned);
            written
        })
        .await;
        match written {
            Ok(Ok(())) => Ok(Some(claim.rule)),
            Ok(Err(err)) => Err(RespondError::ConfigEdit(err)),
            Err(err) => {
                // The edit panicked before releasing its claim: release it here (releasing
                // twice is harmless), so the approval does not stay claimed.
                self.release_claim(id, false, &claim);
                Err(RespondError::ConfigEdit(format!(
                    "the config edit failed: {err}; answer again"
                )))
            }
        }
    }

    /// Claim pending approval `id` for an `allowAlways` or `denyAlways` answer; returns the
    /// rule to write and its kind.
    fn claim(&self, id: &str, resolution: &Resolution) -> Result<Claim, RespondError> {
        let mut state = self.lock();
        let Some(waiting) = state.pending.get_mut(id) else {
            return Err(not_pending(&state, id));
        };
        if let Some(claim) = &waiting.claimed {
            return Err(already_decided(id, claim));
        }
        let Some(rule) = waiting.always_rule.clone() else {
            let message = if resolution.decision == ApprovalDecision::DenyAlways {
                "denyAlways is not offered for this call (too broad to remember); use deny"
            } else {
                "allowAlways is not offered for this call (too broad to remember); use allowSession or allowOnce"
            };
            return Err(RespondError::NotOffered(message.to_owned()));
        };
        waiting.claimed = Some(resolution.clone());
        Ok(Claim {
            rule,
            decision: resolution.decision,
        })
    }

    /// End `claim` on `id`: resolve it by the claim when the rule was written (and remember
    /// the rule, as the kind the claim carries, for new runs); otherwise by the answer that
    /// raced it, or back to pending. The approval may be gone (withdrawn meanwhile): the rule
    /// was still written, and is remembered as what it is.
    fn release_claim(&self, id: &str, written: bool, claim: &Claim) {
        let mut state = self.lock();
        let rules = if claim.is_deny() {
            &mut state.never_rules
        } else {
            &mut state.always_rules
        };
        if written && !rules.contains(&claim.rule) {
            // New runs read the user rules from the config loaded at startup: hand them the
            // rule too, so "always" holds before the next restart.
            rules.push(claim.rule.clone());
        }
        let Some(waiting) = state.pending.get_mut(id) else {
            return;
        };
        let claimed = waiting.claimed.take();
        let resolution = if written {
            claimed
        } else {
            waiting.raced.take()
        };
        if let Some(resolution) = resolution {
            state.pending.finish(id, resolution);
        }
    }

    /// Register an approval; the receiver resolves when it is decided.
    pub fn register(
        &self,
        approval: PendingApproval,
        always_rule: Option<String>,
    ) -> oneshot::Receiver<Resolution> {
        let id = approval.approval_id.clone();
        self.lock().pending.register(
            id,
            Waiting {
                approval,
                always_rule,
                claimed: None,
                raced: None,
            },
        )
    }

    /// Decide approval `id`. The first decision wins (a claim by `allowAlways` counts as one).
    pub fn decide(&self, id: &str, resolution: Resolution) -> Result<(), RespondError> {
        let mut state = self.lock();
        let Some(waiting) = state.pending.get_mut(id) else {
            return Err(not_pending(&state, id));
        };
        if let Some(claim) = &waiting.claimed {
            let err = already_decided(id, claim);
            waiting.raced.get_or_insert(resolution);
            return Err(err);
        }
        state.pending.finish(id, resolution);
        Ok(())
    }

    /// Remove approval `id` if it is still pending, without deciding it: its run no longer
    /// waits (the request could not be persisted, or the run ended). Returns whether it was
    /// pending.
    pub fn withdraw(&self, id: &str) -> bool {
        self.lock().pending.withdraw(id)
    }

    /// Whether `id` is still pending.
    pub fn is_pending(&self, id: &str) -> bool {
        self.lock().pending.is_pending(id)
    }

    /// Rules added by `allowAlways` since startup, oldest first (see [`Self::respond`]).
    pub fn always_rules(&self) -> Vec<String> {
        self.lock().always_rules.clone()
    }

    /// Rules added by `denyAlways` since startup, oldest first.
    pub fn never_rules(&self) -> Vec<String> {
        self.lock().never_rules.clone()
    }

    /// Pending approvals, oldest first, optionally of one session.
    pub fn list(&self, session_id: Option<&str>) -> Vec<PendingApproval> {
        let state = self.lock();
        state
            .pending
            .oldest_first(|w| {
                w.claimed.is_none() && session_id.is_none_or(|id| w.approval.session_id == id)
            })
            .into_iter()
            .map(|w| w.approval.clone())
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BrokerState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Why an answer to `id`, which is not pending, is refused.
fn not_pending(state: &BrokerState, id: &str) -> RespondError {
    match state.pending.earlier(id) {
        Some(earlier) => already_decided(id, earlier),
        None => RespondError::NotFound(id.to_owned()),
    }
}

fn already_decided(id: &str, earlier: &Resolution) -> RespondError {
    RespondError::AlreadyDecided {
        id: id.to_owned(),
        decision: earlier.decision,
        decided_by: earlier.decided_by.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approval(id: &str, session: &str) -> PendingApproval {
        PendingApproval {
            session_rule: None,
            always_rule: None,
            task_id: None,
            agent_type: None,
            parent_run_id: None,
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

    #[tokio::test]
    async fn an_answer_racing_a_claim_is_already_decided_and_decides_if_the_claim_falls_through() {
        let broker = ApprovalBroker::default();
        let decided = broker.register(approval("apr_1", "ses_1"), Some("run_shell(ls:*)".into()));
        let claim = broker
            .claim("apr_1", &by("client:a", ApprovalDecision::AllowAlways))
            .unwrap();
        assert_eq!(claim.rule, "run_shell(ls:*)");
        assert!(
            broker.list(None).is_empty(),
            "a claimed approval is not listed"
        );
        let raced = broker
            .decide("apr_1", by("timeout", ApprovalDecision::Deny))
            .unwrap_err();
        assert!(matches!(
            raced,
            RespondError::AlreadyDecided {
                decision: ApprovalDecision::AllowAlways,
                ..
            }
        ));
        broker.release_claim("apr_1", false, &claim);
        assert_eq!(decided.await.unwrap().decided_by, "timeout");
        assert!(broker.always_rules().is_empty());
    }

    #[test]
    fn a_deny_always_claim_released_after_its_approval_was_withdrawn_stays_a_deny_rule() {
        let broker = ApprovalBroker::default();
        let _decided = broker.register(approval("apr_1", "ses_1"), Some("run_shell(rm:*)".into()));
        let claim = broker
            .claim("apr_1", &by("client:a", ApprovalDecision::DenyAlways))
            .unwrap();
        // The run ended while the rule was being written: its approval is withdrawn.
        assert!(broker.withdraw("apr_1"));
        broker.release_claim("apr_1", true, &claim);
        assert_eq!(broker.never_rules(), ["run_shell(rm:*)"]);
        assert!(
            broker.always_rules().is_empty(),
            "a deny rule became an allow rule: {:?}",
            broker.always_rules()
        );
    }

    #[test]
    fn an_allow_always_claim_released_after_its_approval_was_withdrawn_stays_an_allow_rule() {
        let broker = ApprovalBroker::default();
        let _decided = broker.register(approval("apr_1", "ses_1"), Some("run_shell(ls:*)".into()));
        let claim = broker
            .claim("apr_1", &by("client:a", ApprovalDecision::AllowAlways))
            .unwrap();
        assert!(broker.withdraw("apr_1"));
        broker.release_claim("apr_1", true, &claim);
        assert_eq!(broker.always_rules(), ["run_shell(ls:*)"]);
        assert!(broker.never_rules().is_empty());
    }

    #[tokio::test]
    async fn a_rule_that_cannot_be_written_leaves_the_approval_pending() {
        let dir = tempfile::tempdir().unwrap();
        let not_a_dir = dir.path().join("file");
        std::fs::write(&not_a_dir, "x").unwrap();
        let broker = Arc::new(ApprovalBroker::with_config(not_a_dir.join("config.toml")));
        let decided = broker.register(approval("apr_1", "ses_1"), Some("run_shell(ls:*)".into()));
        let err = broker
            .respond("apr_1", by("client:a", ApprovalDecision::AllowAlways))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, RespondError::ConfigEdit(message) if message.contains("did not decide")),
            "{err}"
        );
        assert!(broker.is_pending("apr_1"));
        broker
            .respond("apr_1", by("client:b", ApprovalDecision::Deny))
            .await
            .unwrap();
        assert_eq!(decided.await.unwrap().decided_by, "client:b");
    }

    #[tokio::test]
    async fn allow_always_writes_the_rule_before_it_resolves() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config.toml");
        let broker = Arc::new(ApprovalBroker::with_config(config.clone()));
        let decided = broker.register(approval("apr_1", "ses_1"), Some("run_shell(ls:*)".into()));
        let added = broker
            .respond("apr_1", by("client:a", ApprovalDecision::AllowAlways))
            .await
            .unwrap();
        assert_eq!(added.as_deref(), Some("run_shell(ls:*)"));
        assert_eq!(
            decided.await.unwrap().decision,
            ApprovalDecision::AllowAlways
        );
        assert!(
            std::fs::read_to_string(&config)
                .unwrap()
                .contains("run_shell(ls:*)")
        );
        assert_eq!(broker.always_rules(), ["run_shell(ls:*)"]);
        let bad = broker
            .respond("../x", by("client:a", ApprovalDecision::Deny))
            .await
            .unwrap_err();
        assert!(matches!(bad, RespondError::InvalidId(_)));
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
