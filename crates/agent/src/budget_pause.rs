//! A run paused at a budget: before its next model call, a reached budget (`budget::Spending`)
//! is registered with the `BudgetBroker`, persisted and announced (`budgetExceeded`), and the
//! run waits, as for a tool approval, for the first `budget/respond` of any client: `continue`
//! raises this run's limit, `stop` ends it with status `budget`. With nobody who answers
//! (and no `holdApprovals`) it ends at once; the approval timeout, a cancel, or the last
//! answerer of a child's pause leaving end the wait. The answer is recorded
//! (`budgetResolved`); until then `budget/list` lists it. A pause pending at a daemon restart
//! does not survive it: a resumed run checks its budgets again and asks again.

use std::sync::Mutex;
use std::time::SystemTime;

use anyhow::Result;
use tokio::sync::oneshot;

use super::{Run, RunOutcome};
use crate::budget::{Reached, Spending};
use crate::gate::expires_at;
use agentd_core::conversation::Usage;
use agentd_policy::approval::waitlist::Waitlist;
use protocol::budget::{BudgetDecision, BudgetRequest, PendingBudget};
use protocol::event::{Event, RunStatus};

/// How a pause was decided.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetResolution {
    pub decision: BudgetDecision,
    /// For `continue`: the run's limit from now on.
    pub new_limit: Option<f64>,
    /// `client:<name>`, `policy:<name>`, `timeout`, `cancel` or `mode`.
    pub decided_by: String,
}

/// Why an answer was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum BudgetRespondError {
    #[error(
        "budget request not found: {}; it is answered once, while its run waits; list the pending budget pauses to see which wait for an answer",
        protocol::error::echo(.0)
    )]
    NotFound(String),
    #[error(
        "budget request {} was already decided ({} by {decided_by})",
        protocol::error::echo(id),
        decision_name(*decision)
    )]
    AlreadyDecided {
        id: String,
        decision: BudgetDecision,
        decided_by: String,
    },
    #[error(
        "invalid budget request id {:?}: budget request ids are `bud_` followed by letters, digits, `_` or `-`",
        protocol::error::echo(.0)
    )]
    InvalidId(String),
    /// A `newLimit` that would not let the run go on.
    #[error("{0}")]
    InvalidLimit(String),
}

/// Every run paused at a budget, across sessions. A pause's `request` says what a new limit
/// must be above (`used`) and what `continue` without one sets (`suggestedLimit`).
#[derive(Default)]
pub struct BudgetBroker {
    state: Mutex<Waitlist<PendingBudget, BudgetResolution>>,
}

impl BudgetBroker {
    /// A client's answer to pause `id`; returns how it was decided (the limit `continue` set).
    pub fn respond(
        &self,
        id: &str,
        decision: BudgetDecision,
        new_limit: Option<f64>,
        decided_by: String,
    ) -> Result<BudgetResolution, BudgetRespondError> {
        if !protocol::budget::is_budget_request_id(id) {
            return Err(BudgetRespondError::InvalidId(id.to_owned()));
        }
        let mut state = self.lock();
        let Some(pause) = state.get(id) else {
            return Err(not_pending(&state, id));
        };
        let (used, suggested) = (pause.request.used, pause.request.suggested_limit);
        let new_limit = match (decision, new_limit) {
            (BudgetDecision::Stop, _) => None,
            (BudgetDecision::Continue, None) => Some(suggested),
            (BudgetDecision::Continue, Some(limit)) if limit.is_finite() && limit > used => {
                Some(limit)
            }
            (BudgetDecision::Continue, Some(limit)) => {
                return Err(BudgetRespondError::InvalidLimit(format!(
                    "newLimit {limit} does not let the run go on: give a limit above what it has used ({used}), or leave it out for {suggested}"
                )));
            }
        };
        let resolution = BudgetResolution {
            decision,
            new_limit,
            decided_by,
        };
        state.finish(id, resolution.clone());
        Ok(resolution)
    }

    /// The pauses pending now, oldest first, optionally of one session.
    pub fn list(&self, session_id: Option<&str>) -> Vec<PendingBudget> {
        self.lock()
            .oldest_first(|pause| session_id.is_none_or(|id| pause.session_id == id))
            .into_iter()
            .cloned()
            .collect()
    }

    /// Register a pause; the receiver resolves when it is decided.
    fn register(&self, pause: PendingBudget) -> oneshot::Receiver<BudgetResolution> {
        let id = pause.request.request_id.clone();
        self.lock().register(id, pause)
    }

    /// Decide pause `id` by the run itself (timeout, cancel, nobody left); false when an
    /// answer came first.
    fn decide(&self, id: &str, resolution: BudgetResolution) -> bool {
        self.lock().finish(id, resolution)
    }

    /// Remove pause `id` undecided (its run went away); whether it was pending.
    fn withdraw(&self, id: &str) -> bool {
        self.lock().withdraw(id)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waitlist<PendingBudget, BudgetResolution>> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn not_pending(state: &Waitlist<PendingBudget, BudgetResolution>, id: &str) -> BudgetRespondError {
    match state.earlier(id) {
        Some(earlier) => BudgetRespondError::AlreadyDecided {
            id: id.to_owned(),
            decision: earlier.decision,
            decided_by: earlier.decided_by.clone(),
        },
        None => BudgetRespondError::NotFound(id.to_owned()),
    }
}

fn decision_name(decision: BudgetDecision) -> &'static str {
    match decision {
        BudgetDecision::Continue => "continue",
        BudgetDecision::Stop => "stop",
    }
}

/// Withdraws a registered pause when dropped (the run task went away undecided).
struct Registered<'a> {
    broker: &'a BudgetBroker,
    id: &'a str,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        if self.broker.withdraw(self.id) {
            tracing::debug!(request = self.id, "withdrew an undecided budget pause");
        }
    }
}

impl Run {
    /// Before a model call: while a budget is reached, pause and ask. `None`: go on (every
    /// reached budget was raised); otherwise how the run ends.
    pub(crate) async fn keep_budget(
        &self,
        spending: &mut Spending,
        used: &Usage,
    ) -> Result<Option<RunOutcome>> {
        while let Some(reached) = spending.reached(used, self.budget.prices) {
            let asked = tokio::time::Instant::now();
            let resolution = self.ask_budget(&reached).await?;
            spending.paused_for(asked.elapsed());
            match (resolution.decision, resolution.new_limit) {
                (BudgetDecision::Continue, Some(limit)) if limit > reached.used => {
                    spending.raise(reached.kind, limit);
                }
                _ if resolution.decided_by == "cancel" => return Ok(Some(self.stopped(*used))),
                _ => {
                    return Ok(Some(RunOutcome {
                        status: RunStatus::Budget,
                        error: Some(stopped_because(&reached, &resolution.decided_by)),
                        usage: *used,
                    }));
                }
            }
        }
        Ok(None)
    }

    /// Announce the pause and wait for its answer (or decide it when nobody can answer);
    /// records `budgetResolved`.
    async fn ask_budget(&self, reached: &Reached) -> Result<BudgetResolution> {
        let request_id = format!("bud_{}", uuid::Uuid::new_v4().simple());
        let timeout = self.permissions.approval_timeout;
        let label = self.permissions.task_label.as_ref();
        let now = SystemTime::now();
        let request = BudgetRequest {
            request_id: request_id.clone(),
            budget: reached.kind,
            used: reached.used,
            limit: reached.limit.value,
            suggested_limit: reached.suggested_limit(),
            message: format!(
                "{}: continue with a higher limit ({} unless you give one), or stop",
                reached.describe(),
                reached.amount(reached.suggested_limit())
            ),
            expires_at: expires_at(now, timeout),
            task_id: label.map(|(id, _)| id.clone()),
            agent_type: label.map(|(_, agent)| agent.clone()),
            parent_run_id: self.permissions.parent_run_id.clone(),
        };
        let announce = Event::BudgetExceeded {
            run_id: self.run_id.clone(),
            request: request.clone(),
        };
        let resolution = match self.budget.broker.as_deref() {
            Some(broker) if self.log.has_answerers() || self.permissions.hold_approvals => {
                // Registered before it is announced, so the quickest answer finds it.
                let decided = broker.register(PendingBudget {
                    session_id: self.session_id.to_string(),
                    run_id: self.run_id.clone(),
                    requested_at: humantime::format_rfc3339_seconds(now).to_string(),
                    request,
                });
                let _registered = Registered {
                    broker,
                    id: &request_id,
                };
                self.log.append(announce).await?;
                self.wait_for_budget_answer(broker, &request_id, decided, timeout)
                    .await
            }
            _ => {
                self.log.append(announce).await?;
                by("mode")
            }
        };
        self.log
            .append(Event::BudgetResolved {
                run_id: self.run_id.clone(),
                request_id,
                decision: resolution.decision,
                decided_by: resolution.decided_by.clone(),
                new_limit: resolution.new_limit,
            })
            .await?;
        Ok(resolution)
    }

    /// The first answer, or a stop by the timeout, a cancel, or (a child's pause without
    /// `holdApprovals`) the last answerer leaving.
    async fn wait_for_budget_answer(
        &self,
        broker: &BudgetBroker,
        request_id: &str,
        decided: oneshot::Receiver<BudgetResolution>,
        timeout: std::time::Duration,
    ) -> BudgetResolution {
        let mut decided = std::pin::pin!(decided);
        let child_without_hold =
            self.permissions.task_label.is_some() && !self.permissions.hold_approvals;
        let nobody_left = async {
            if child_without_hold {
                self.log.answerers_left().await
            } else {
                std::future::pending().await
            }
        };
        let fallback = tokio::select! {
            answer = &mut decided => return answer.unwrap_or_else(|_| by("daemon")),
            () = nobody_left => by("mode"),
            () = tokio::time::sleep(timeout) => by("timeout"),
            () = self.cancel.cancelled() => by("cancel"),
        };
        if broker.decide(request_id, fallback.clone()) {
            fallback
        } else {
            // An answer came at the same moment: it wins.
            decided.await.unwrap_or_else(|_| by("daemon"))
        }
    }
}

/// A stop decided by `who` (not a client).
fn by(who: &str) -> BudgetResolution {
    BudgetResolution {
        decision: BudgetDecision::Stop,
        new_limit: None,
        decided_by: who.to_owned(),
    }
}

/// The run's error when it ends at a budget: which budget, who stopped it, how to raise it.
fn stopped_because(reached: &Reached, decided_by: &str) -> String {
    let who = match decided_by {
        "mode" => "no client that answers was attached to let it go on".to_owned(),
        "timeout" => "nobody answered in time".to_owned(),
        other => format!("stopped by {other}"),
    };
    format!(
        "stopped: {}; {who}: raise {} (or answer budgetExceeded with continue from a client that follows the session), then send a follow-up to continue",
        reached.describe(),
        reached.limit.setting
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::budget::BudgetKind;

    /// A pause of session `session` that has used `used` and suggests `suggested`.
    fn pause(id: &str, session: &str, used: f64, suggested: f64) -> PendingBudget {
        PendingBudget {
            session_id: session.into(),
            run_id: "run_1".into(),
            requested_at: "t".into(),
            request: BudgetRequest {
                request_id: id.into(),
                budget: BudgetKind::Tokens,
                used,
                limit: used,
                suggested_limit: suggested,
                message: "m".into(),
                expires_at: "t".into(),
                task_id: None,
                agent_type: None,
                parent_run_id: None,
            },
        }
    }

    #[test]
    fn the_first_answer_wins_and_a_limit_must_let_the_run_go_on() {
        let broker = BudgetBroker::default();
        let mut decided = broker.register(pause("bud_1", "ses_1", 120.0, 220.0));
        let low = broker
            .respond(
                "bud_1",
                BudgetDecision::Continue,
                Some(100.0),
                "client:a".into(),
            )
            .unwrap_err();
        assert!(matches!(low, BudgetRespondError::InvalidLimit(_)), "{low}");
        let answer = broker
            .respond("bud_1", BudgetDecision::Continue, None, "client:a".into())
            .unwrap();
        assert_eq!(answer.new_limit, Some(220.0));
        assert_eq!(decided.try_recv().unwrap(), answer);
        let late = broker
            .respond("bud_1", BudgetDecision::Stop, None, "client:b".into())
            .unwrap_err();
        assert!(
            late.to_string()
                .contains("already decided (continue by client:a)"),
            "{late}"
        );
        assert!(!broker.decide("bud_1", by("timeout")));
        assert!(matches!(
            broker.respond("apr_1", BudgetDecision::Stop, None, "client:a".into()),
            Err(BudgetRespondError::InvalidId(_))
        ));
        assert!(matches!(
            broker.respond("bud_2", BudgetDecision::Stop, None, "client:a".into()),
            Err(BudgetRespondError::NotFound(_))
        ));
    }

    #[test]
    fn a_withdrawn_pause_is_no_longer_answerable() {
        let broker = BudgetBroker::default();
        let _decided = broker.register(pause("bud_1", "ses_1", 1.0, 2.0));
        assert!(broker.withdraw("bud_1"));
        assert!(!broker.withdraw("bud_1"));
        assert!(matches!(
            broker.respond("bud_1", BudgetDecision::Stop, None, "client:a".into()),
            Err(BudgetRespondError::NotFound(_))
        ));
    }

    #[test]
    fn lists_the_pending_pauses_oldest_first_per_session_until_decided() {
        let broker = BudgetBroker::default();
        let _a = broker.register(pause("bud_1", "ses_1", 1.0, 2.0));
        let _b = broker.register(pause("bud_2", "ses_2", 1.0, 2.0));
        let _c = broker.register(pause("bud_3", "ses_1", 1.0, 2.0));
        let ids = |list: Vec<PendingBudget>| {
            list.into_iter()
                .map(|pause| pause.request.request_id)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(broker.list(None)), ["bud_1", "bud_2", "bud_3"]);
        assert_eq!(ids(broker.list(Some("ses_1"))), ["bud_1", "bud_3"]);
        broker
            .respond("bud_1", BudgetDecision::Stop, None, "client:a".into())
            .unwrap();
        assert!(broker.decide("bud_2", by("timeout")));
        assert!(broker.withdraw("bud_3"));
        assert!(broker.list(None).is_empty());
    }
}
