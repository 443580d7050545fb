//! The permission gate of a run: before a tool batch executes, every call is decided by the
//! session's policy (hard limits, rules, mode); calls that need a person wait for an approval
//! that any attached client can answer, bounded by the approval timeout. An approval is
//! registered with the broker, persisted, then announced; it is withdrawn when it cannot be
//! persisted or its waiter goes away undecided. A pending one names the rules `allowSession`
//! and `allowAlways` would add; a decision by `policy:<client>` reaches the model as that
//! client's policy, not the user's. A session nobody who answers follows decides by mode and
//! never waits, unless the run was prompted with `holdApprovals`.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Result;

use super::Run;
use crate::intercept::Permission;
use crate::resume::PriorAnswer;
use agentd_core::conversation::ToolCall;
use agentd_policy::approval::{ApprovalBroker, Resolution};
use agentd_policy::permission::{
    Decision, PermissionMode, Policy, RuleKey, RuleSet, ToolRequest, always_allow_rule,
    asks_every_time, session_key,
};
use agentd_work::tools::{FetchDecision, FetchRules, ToolOutput};
use protocol::approval::{ApprovalDecision, PendingApproval};
use protocol::event::Event;

/// What a run needs to decide tool calls; fixed for the run, except "allow for session" keys,
/// which live in the session's shared state.
#[derive(Clone)]
pub struct RunPermissions {
    pub mode: PermissionMode,
    /// User, project and session rules, merged (session allows remembered before a restart
    /// included).
    pub rules: RuleSet,
    pub home: Option<std::path::PathBuf>,
    pub approval_timeout: Duration,
    pub broker: Arc<ApprovalBroker>,
    /// Where MCP servers' questions wait for an answer (`elicitation/respond`).
    pub elicitations: Arc<crate::elicitation::ElicitationBroker>,
    /// A subagent's task id and agent type, which label its approvals.
    pub task_label: Option<(String, String)>,
    /// Approvals wait for an answer even while nobody who answers follows the session
    /// (`session/prompt {holdApprovals}`): the client that started the run answers later.
    pub hold_approvals: bool,
    /// A subagent's run: the parent's run that started it, which labels its approvals.
    pub parent_run_id: Option<String>,
    /// A resumed run's answers from before the restart, by tool call id (`resume`): a call
    /// found here is not decided again but as it was, or waits for its approval still pending.
    pub prior: Arc<std::sync::Mutex<std::collections::HashMap<String, PriorAnswer>>>,
}

/// How long an approval waits and whether it waits with nobody to answer it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Waiting {
    pub(crate) timeout: Duration,
    pub(crate) hold: bool,
}

/// The gate's verdict on one call.
pub(crate) enum Verdict {
    /// Execute it.
    Run,
    /// Do not execute it; this is its result.
    Done(ToolOutput),
}

/// fetch_url's view of a batch's policy: which hosts allow rules name, and what a new fetch of
/// a redirect target would be decided.
#[derive(Debug)]
struct PolicyFetchRules {
    policy: Policy,
    workspace: std::path::PathBuf,
}

impl FetchRules for PolicyFetchRules {
    fn names_host(&self, host: &str) -> bool {
        self.policy.names_fetch_host(host)
    }

    fn decide(&self, url: &str) -> FetchDecision {
        let input = serde_json::json!({ "url": url });
        let decision = self.policy.evaluate(&ToolRequest {
            tool: "fetch_url",
            input: &input,
            read_only: true,
            workspace: &self.workspace,
        });
        match decision {
            Decision::Allow { .. } => FetchDecision::Allow,
            Decision::Ask { reason } => FetchDecision::Ask(reason),
            Decision::Deny { reason } => FetchDecision::Deny(reason),
        }
    }
}

/// One call after lookup, ready for the policy.
struct Checked {
    input: serde_json::Value,
    read_only: bool,
}

impl Run {
    /// Decide every call of a batch, in the model's order, asking where needed. `said` is
    /// what interceptors said of each call (in order; missing at the end: nothing): a deny refuses it, an ask asks where the rules
    /// allow, an allow skips a prompt the rules would have asked (never a deny, a hard limit,
    /// or a file that is asked about every time).
    pub(super) async fn authorize(
        &self,
        calls: &[ToolCall],
        said: &[Option<Permission>],
    ) -> Result<Vec<Verdict>> {
        let checked: Vec<Option<Checked>> = calls.iter().map(|call| self.check(call)).collect();
        let policy = self.policy();
        let workspace = self.tool_context.workspace.clone();
        let names: Vec<String> = calls.iter().map(|call| call.name.clone()).collect();
        // Evaluating resolves paths (symlinks): keep it off the async workers.
        let (checked, decisions) = tokio::task::spawn_blocking(move || {
            let decisions: Vec<Option<Decision>> = checked
                .iter()
                .zip(&names)
                .map(|(checked, name)| {
                    checked.as_ref().map(|checked| {
                        policy.evaluate(&ToolRequest {
                            tool: name,
                            input: &checked.input,
                            read_only: checked.read_only,
                            workspace: &workspace,
                        })
                    })
                })
                .collect();
            (checked, decisions)
        })
        .await?;

        let mut verdicts = Vec::with_capacity(calls.len());
        // Nothing said of the calls past `said`'s end (it is empty when nobody was asked).
        let said = said.iter().map(Some).chain(std::iter::repeat(None));
        for (((call, checked), decision), said) in
            calls.iter().zip(checked).zip(decisions).zip(said)
        {
            let said = said.and_then(Option::as_ref);
            if self.cancel.is_cancelled() {
                verdicts.push(Verdict::Done(ToolOutput::error(
                    agentd_work::tools::CANCELLED,
                )));
                continue;
            }
            if let Some(Permission::Deny(reason)) = said {
                verdicts.push(Verdict::Done(ToolOutput::error(format!(
                    "blocked by a hook: {reason}"
                ))));
                continue;
            }
            let (Some(checked), Some(decision)) = (checked, decision) else {
                // Unknown tool or bad arguments: the executor reports it to the model.
                verdicts.push(Verdict::Run);
                continue;
            };
            // Asked before a restart: decided as it was, or still waiting for its answer.
            let prior = self
                .permissions
                .prior
                .lock()
                .ok()
                .and_then(|mut prior| prior.remove(&call.id));
            if let Some(prior) = prior {
                verdicts.push(self.answer_prior(call, &checked, prior).await?);
                continue;
            }
            let verdict = match (decision, said) {
                (Decision::Deny { reason }, _) => {
                    Verdict::Done(ToolOutput::error(format!("permission denied: {reason}")))
                }
                (Decision::Allow { .. }, Some(Permission::Ask(reason))) => {
                    self.ask_unless_intercepted(call, &checked, reason.clone())
                        .await?
                }
                (Decision::Allow { .. }, _) => Verdict::Run,
                (Decision::Ask { .. }, Some(Permission::Allow))
                    if !asks_every_time(&self.request(call, &checked)) =>
                {
                    Verdict::Run
                }
                (Decision::Ask { reason }, _) => {
                    self.ask_unless_intercepted(call, &checked, reason).await?
                }
            };
            verdicts.push(verdict);
        }
        Ok(verdicts)
    }

    fn request<'a>(&'a self, call: &'a ToolCall, checked: &'a Checked) -> ToolRequest<'a> {
        ToolRequest {
            tool: &call.name,
            input: &checked.input,
            read_only: checked.read_only,
            workspace: &self.tool_context.workspace,
        }
    }

    /// Before a person is asked, the interceptors may decide (`Point::PermissionRequest`):
    /// allow or deny; anything else lets the approval go out.
    async fn ask_unless_intercepted(
        &self,
        call: &ToolCall,
        checked: &Checked,
        reason: String,
    ) -> Result<Verdict> {
        if !self.interceptors.is_empty() {
            let point = crate::intercept::Point::PermissionRequest {
                call,
                reason: &reason,
            };
            let outcome = self.interceptors.at(self.at(), &point).await;
            self.warn(&outcome.warnings).await?;
            let every_time = asks_every_time(&self.request(call, checked));
            match outcome.permission {
                Some(Permission::Allow) if !every_time => return Ok(Verdict::Run),
                Some(Permission::Deny(why)) => {
                    return Ok(Verdict::Done(ToolOutput::error(format!(
                        "denied by a hook: {why}"
                    ))));
                }
                _ => {}
            }
            if let Some(why) = outcome.block {
                return Ok(Verdict::Done(ToolOutput::error(format!(
                    "denied by a hook: {why}"
                ))));
            }
        }
        self.ask(call, checked, reason).await
    }

    /// The policy for this batch: the run's rules and mode plus the session's remembered
    /// approvals.
    fn policy(&self) -> Policy {
        let permissions = &self.permissions;
        let mut policy = Policy::new(permissions.mode, permissions.rules.clone())
            .with_home(permissions.home.clone());
        for key in self.shared.lock().session_allows.iter().cloned() {
            policy.allow_for_session(key);
        }
        policy
    }

    /// The session's rules as fetch_url sees them, for the batch about to execute (answers
    /// given while it was authorised included).
    pub(super) fn fetch_rules(&self) -> Arc<dyn FetchRules> {
        Arc::new(PolicyFetchRules {
            policy: self.policy(),
            workspace: self.tool_context.workspace.clone(),
        })
    }

    fn check(&self, call: &ToolCall) -> Option<Checked> {
        let tool = self.tools.current().registry.get(&call.name)?;
        let input: serde_json::Value = if call.arguments.trim().is_empty() {
            serde_json::json!({})
        } else {
            serde_json::from_str(&call.arguments).ok()?
        };
        tool.validate(&input).ok()?;
        Some(Checked {
            read_only: tool.read_only(),
            input,
        })
    }

    /// Ask a person about one call and turn the answer into a verdict.
    async fn ask(&self, call: &ToolCall, checked: &Checked, reason: String) -> Result<Verdict> {
        let request = self.request(call, checked);
        let key = session_key(&request);
        // A notes file is asked about each time: nothing an answer remembers may skip it.
        let every_time = asks_every_time(&request);
        let always_rule = always_allow_rule(&request).filter(|_| !every_time);
        let summary = self
            .tools
            .current()
            .registry
            .get(&call.name)
            .map(|tool| tool.summary(&checked.input))
            .unwrap_or_default();
        let now = SystemTime::now();
        let mut options = vec![ApprovalDecision::AllowOnce];
        if !every_time {
            options.push(ApprovalDecision::AllowSession);
        }
        if always_rule.is_some() {
            options.push(ApprovalDecision::AllowAlways);
        }
        options.extend([ApprovalDecision::Deny, ApprovalDecision::DenyAndCancel]);
        // Last: added after the others, so clients that list them in order keep theirs.
        if always_rule.is_some() {
            options.push(ApprovalDecision::DenyAlways);
        }
        let approval = PendingApproval {
            approval_id: format!("apr_{}", uuid::Uuid::new_v4().simple()),
            session_id: self.session_id.to_string(),
            run_id: self.run_id.clone(),
            tool_call_id: call.id.clone(),
            tool: call.name.clone(),
            summary,
            input: checked.input.clone(),
            reason,
            options,
            requested_at: humantime::format_rfc3339_seconds(now).to_string(),
            expires_at: expires_at(now, self.permissions.approval_timeout),
            task_id: self
                .permissions
                .task_label
                .as_ref()
                .map(|(id, _)| id.clone()),
            agent_type: self
                .permissions
                .task_label
                .as_ref()
                .map(|(_, agent)| agent.clone()),
            parent_run_id: self.permissions.parent_run_id.clone(),
            session_rule: (!every_time).then(|| key.to_string()),
            always_rule: always_rule.clone(),
        };
        let waiting = Waiting {
            timeout: self.permissions.approval_timeout,
            hold: self.permissions.hold_approvals,
        };
        self.answer(call, approval, key, every_time, waiting).await
    }

    /// A call asked about before a restart: an answer given then decides it; an approval
    /// still pending is asked again with its id and waits for what was left of its timeout,
    /// whoever follows (the client that was asked is reconnecting).
    async fn answer_prior(
        &self,
        call: &ToolCall,
        checked: &Checked,
        prior: PriorAnswer,
    ) -> Result<Verdict> {
        let request = self.request(call, checked);
        let key = session_key(&request);
        match prior {
            PriorAnswer::Answered(resolution) => Ok(self.apply(resolution, key)),
            PriorAnswer::Pending {
                approval,
                remaining,
            } => {
                let every_time = asks_every_time(&request);
                let waiting = Waiting {
                    timeout: remaining,
                    hold: true,
                };
                let mut approval = *approval;
                approval.expires_at = expires_at(SystemTime::now(), remaining);
                self.answer(call, approval, key, every_time, waiting).await
            }
        }
    }

    /// Wait for the answer to `approval`, record it, and turn it into a verdict.
    async fn answer(
        &self,
        call: &ToolCall,
        approval: PendingApproval,
        key: RuleKey,
        every_time: bool,
        waiting: Waiting,
    ) -> Result<Verdict> {
        let always_rule = approval.always_rule.clone();
        let mut resolution = self
            .wait_for_answer(approval.clone(), always_rule, waiting)
            .await?;
        if every_time
            && matches!(
                resolution.decision,
                ApprovalDecision::AllowSession | ApprovalDecision::AllowAlways
            )
        {
            // Not offered: an answer that would remember the call allows it this once.
            resolution.decision = ApprovalDecision::AllowOnce;
        }
        let session_rule = (resolution.decision == ApprovalDecision::AllowSession
            || resolution.decision == ApprovalDecision::AllowAlways)
            .then(|| key.to_string());
        self.log
            .append(Event::ApprovalResolved {
                run_id: self.run_id.clone(),
                approval_id: approval.approval_id.clone(),
                tool_call_id: call.id.clone(),
                decision: resolution.decision,
                decided_by: resolution.decided_by.clone(),
                reason: resolution.reason.clone(),
                session_rule,
            })
            .await?;
        Ok(self.apply(resolution, key))
    }

    /// Announce the approval and wait for the first answer, the timeout, or a cancel.
    pub(crate) async fn wait_for_answer(
        &self,
        approval: PendingApproval,
        always_rule: Option<String>,
        waiting: Waiting,
    ) -> Result<Resolution> {
        let approval_id = approval.approval_id.clone();
        let broker = &self.permissions.broker;
        if !self.log.has_answerers() && !waiting.hold {
            // Nobody could answer: decide by mode (it asked, so: deny), never hang.
            self.log
                .append(Event::ApprovalRequested {
                    run_id: self.run_id.clone(),
                    approval,
                })
                .await?;
            return Ok(Resolution {
                decision: ApprovalDecision::Deny,
                decided_by: "mode".to_owned(),
                reason: Some(format!(
                    "no client is attached to approve it and the session's mode ({}) requires approval",
                    self.permissions.mode
                )),
            });
        }
        // Registered before it is announced, so the quickest answer finds it; withdrawn
        // whatever way this returns undecided (the request could not be persisted, the run
        // task is dropped), so the broker never lists an approval nobody waits for.
        let decided = broker.register(approval.clone(), always_rule);
        let _registered = Registered {
            broker,
            approval_id: &approval_id,
        };
        let notice = format!("agentd needs your permission to use {}", approval.tool);
        self.log
            .append(Event::ApprovalRequested {
                run_id: self.run_id.clone(),
                approval,
            })
            .await?;
        let mut decided = std::pin::pin!(decided);
        // The interceptors hear that an approval waits while it waits; an answer does not
        // wait for them.
        let mut notify = std::pin::pin!(self.notify(notice));
        let mut notified = self.interceptors.is_empty();
        // A child's approval waits only while someone could answer it (on the child or its
        // parent): once the last one leaves, it is decided by mode, as it would have been had
        // nobody been there when it was asked. A headless run never waits on a child.
        let child_without_hold = self.permissions.task_label.is_some() && !waiting.hold;
        let nobody_left = async {
            if child_without_hold {
                self.log.answerers_left().await
            } else {
                std::future::pending().await
            }
        };
        let mut nobody_left = std::pin::pin!(nobody_left);
        let mut timeout = std::pin::pin!(tokio::time::sleep(waiting.timeout));
        let fallback = loop {
            break tokio::select! {
            answer = &mut decided => return Ok(answer.unwrap_or_else(|_| broker_gone())),
            notice = &mut notify, if !notified => {
                notified = true;
                notice?;
                continue;
            }
            () = &mut nobody_left => Resolution {
                decision: ApprovalDecision::Deny,
                decided_by: "mode".to_owned(),
                reason: Some(format!(
                    "no client that answers approvals is attached any more and the session's mode ({}) requires approval",
                    self.permissions.mode
                )),
            },
            _ = &mut timeout => Resolution {
                decision: ApprovalDecision::Deny,
                decided_by: "timeout".to_owned(),
                reason: Some(format!(
                    "no answer within {} s",
                    self.permissions.approval_timeout.as_secs()
                )),
            },
            _ = self.cancel.cancelled() => self.stopped_resolution(),
            };
        };
        match broker.decide(&approval_id, fallback.clone()) {
            Ok(()) => Ok(fallback),
            // Someone answered at the same moment: their answer wins.
            Err(_) => Ok(decided.await.unwrap_or_else(|_| broker_gone())),
        }
    }

    /// Tells the interceptors that something waits for the user (`Point::Notification`).
    pub(crate) async fn notify(&self, message: String) -> Result<()> {
        if self.interceptors.is_empty() {
            return Ok(());
        }
        let point = crate::intercept::Point::Notification { message: &message };
        let outcome = self.interceptors.at(self.at(), &point).await;
        self.warn(&outcome.warnings).await
    }

    /// How a cancel decides a pending approval: a daemon shutdown is recorded as `restart`
    /// (the daemon stopped while it was pending), as after a crash; otherwise `cancel`.
    fn stopped_resolution(&self) -> Resolution {
        let shutdown = self
            .stop_reason
            .lock()
            .map(|reason| matches!(*reason, Some(super::StopReason::Shutdown)))
            .unwrap_or(false);
        if shutdown {
            Resolution {
                decision: ApprovalDecision::Deny,
                decided_by: "restart".to_owned(),
                reason: Some(
                    "expired: the daemon stopped while this approval was pending".to_owned(),
                ),
            }
        } else {
            Resolution {
                decision: ApprovalDecision::Deny,
                decided_by: "cancel".to_owned(),
                reason: Some("the run was cancelled".to_owned()),
            }
        }
    }

    fn apply(&self, resolution: Resolution, key: RuleKey) -> Verdict {
        let because = resolution
            .reason
            .as_deref()
            .map(|reason| format!(": {reason}"))
            .unwrap_or_default();
        match resolution.decision {
            ApprovalDecision::AllowOnce => Verdict::Run,
            ApprovalDecision::AllowSession | ApprovalDecision::AllowAlways => {
                let mut state = self.shared.lock();
                if !state.session_allows.contains(&key) {
                    state.session_allows.push(key);
                }
                Verdict::Run
            }
            ApprovalDecision::Deny | ApprovalDecision::DenyAlways => {
                if matches!(resolution.decided_by.as_str(), "cancel" | "restart") {
                    return Verdict::Done(ToolOutput::error(agentd_work::tools::CANCELLED));
                }
                // The model must know a person said no (and why), not only which client did.
                let by = if resolution.decided_by.starts_with("client:") {
                    format!("by the user ({})", resolution.decided_by)
                } else if resolution.decided_by.starts_with("policy:") {
                    format!(
                        "by the client's approval policy ({}), not by the user",
                        resolution.decided_by
                    )
                } else {
                    format!("({})", resolution.decided_by)
                };
                Verdict::Done(ToolOutput::error(format!(
                    "denied {by}{because}; do not retry the same call, ask the user or take another approach"
                )))
            }
            ApprovalDecision::DenyAndCancel => {
                self.request_cancel();
                Verdict::Done(ToolOutput::error(format!(
                    "denied by the user, who cancelled the run{because}"
                )))
            }
        }
    }
}

/// Withdraws a registered approval when dropped; a decided one is no longer pending, so this
/// only removes an approval that no answer ended.
struct Registered<'a> {
    broker: &'a ApprovalBroker,
    approval_id: &'a str,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        if self.broker.withdraw(self.approval_id) {
            tracing::debug!(
                approval = self.approval_id,
                "withdrew an undecided approval"
            );
        }
    }
}

fn broker_gone() -> Resolution {
    Resolution {
        decision: ApprovalDecision::Deny,
        decided_by: "daemon".to_owned(),
        reason: Some("the approval was dropped".to_owned()),
    }
}

/// When an approval (or a budget pause) asked at `now` expires, as RFC 3339. Checked: a
/// timeout too large for the clock or for a four-digit year (the config refuses such values)
/// reads as the latest date RFC 3339 can say instead of panicking.
pub(crate) fn expires_at(now: SystemTime, timeout: Duration) -> String {
    use std::fmt::Write;
    let mut text = String::new();
    let formatted = now
        .checked_add(timeout)
        .map(|at| write!(text, "{}", humantime::format_rfc3339_seconds(at)));
    match formatted {
        Some(Ok(())) => text,
        _ => LATEST_RFC3339.to_owned(),
    }
}

/// The latest time RFC 3339 can write (humantime refuses years past 9999).
const LATEST_RFC3339: &str = "9999-12-31T23:59:59Z";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_of_huge_timeouts_is_the_latest_date_not_a_panic() {
        let now = std::time::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert_eq!(
            expires_at(now, Duration::from_secs(600)),
            "2027-01-15T08:10:00Z"
        );
        for secs in [i64::MAX as u64, u64::MAX, 300_000_000_000] {
            assert_eq!(
                expires_at(now, Duration::from_secs(secs)),
                LATEST_RFC3339,
                "{secs}"
            );
        }
    }
}
