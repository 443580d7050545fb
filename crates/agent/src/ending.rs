//! How a run always ends, whatever happens inside it: an error or a panic becomes
//! `runFinished{status:"failed", error}` after the run's pending approvals were resolved and
//! every tool call of the last assistant message got a result, so the session returns to idle,
//! no approval stays listed, and the history stays valid for the provider. The pairing of
//! orphan tool calls and the report of undelivered messages are shared with the session's
//! recovery on load.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use tokio::sync::oneshot;

use super::sink::{RunLog, SessionShared};
use super::{NOT_RUN_RUN_FAILED, Run, RunOutcome, RunStart};
use agentd_core::conversation::{Message, Usage, orphaned_tool_calls};
use agentd_policy::approval::{ApprovalBroker, Resolution};
use protocol::approval::ApprovalDecision;
use protocol::event::{Event, RunStatus};

/// What ending a run needs, held apart from the `Run` so it outlives a run that panicked.
pub(super) struct RunEnding {
    session_id: Arc<str>,
    run_id: String,
    log: Arc<dyn RunLog>,
    shared: Arc<SessionShared>,
    broker: Arc<ApprovalBroker>,
    budget: super::budget::RunBudget,
}

/// Whether the results given to orphan tool calls are also announced as events.
#[derive(Clone, Copy, Debug)]
pub enum Pairing<'a> {
    /// Only persisted and added to the history (on load, or before a run starts: there is no
    /// run to announce them in).
    Quiet,
    /// Each result is also announced as `toolCompleted` of this run (as the run ends); an
    /// announcement that cannot be written is logged and the pairing goes on.
    Announced {
        session_id: &'a str,
        run_id: &'a str,
    },
}

/// Give every tool call of the history's last assistant message that has no result the result
/// `content` (an error), persisted before it joins the history. Nothing to do in the usual
/// case; after a failed run, a failed write or a crash it keeps the history valid for every
/// provider (each tool call has exactly one result). Stops at the first result that cannot be
/// persisted; what is still missing is paired later (before the next run, or on load).
pub async fn pair_orphaned_tool_calls(
    log: &dyn RunLog,
    shared: &SessionShared,
    content: &str,
    pairing: Pairing<'_>,
) -> anyhow::Result<()> {
    let orphans = orphaned_tool_calls(&shared.lock().history);
    for (tool_call_id, tool_name) in orphans {
        let message = Message::Tool {
            tool_call_id: tool_call_id.clone(),
            tool_name: tool_name.clone(),
            content: content.to_owned(),
            is_error: true,
            images: Vec::new(),
        };
        log.append_message(&message).await?;
        shared.lock().history.push(message);
        if let Pairing::Announced { session_id, run_id } = pairing {
            let event = Event::ToolCompleted {
                run_id: run_id.to_owned(),
                tool_call_id,
                tool: tool_name,
                output: content.to_owned(),
                is_error: true,
                duration_ms: 0,
            };
            if let Err(err) = log.append(event).await {
                tracing::error!(session = %session_id, %err, "cannot persist toolCompleted");
            }
        }
    }
    Ok(())
}

/// Steers and follow-ups a run ended without delivering: each gets a persisted `warning`, so
/// the user knows to send it again (nothing queued is dropped silently).
pub async fn report_undelivered(
    log: &dyn RunLog,
    ended: &str,
    steers: Vec<String>,
    follow_ups: Vec<String>,
) -> anyhow::Result<()> {
    let queued = steers
        .into_iter()
        .map(|text| ("steering message", text))
        .chain(follow_ups.into_iter().map(|text| ("follow-up", text)));
    for (what, text) in queued {
        log.append(Event::Warning {
            message: format!(
                "{what} not sent: the run ended ({ended}) before delivering it; send it again if you still want it: {text:?}"
            ),
        })
        .await?;
    }
    Ok(())
}

impl Run {
    /// Run to the end under `catch_unwind`: a panic anywhere in the run (the hook has logged it
    /// with a backtrace) ends it as `failed` like an error does, never leaves the session
    /// `running`. `begun` fires once the user's message is persisted, or the run ended before.
    pub async fn execute_guarded(self, start: RunStart, begun: oneshot::Sender<()>) -> RunOutcome {
        let ending = self.ending();
        match AssertUnwindSafe(self.execute(start, begun))
            .catch_unwind()
            .await
        {
            Ok(outcome) => outcome,
            Err(payload) => {
                let message = agentd_core::logging::panic_message(&*payload);
                tracing::error!(session = %ending.session_id, run = %ending.run_id, "the run panicked: {message}");
                ending.close_after_failure().await;
                let outcome = RunOutcome {
                    status: RunStatus::Failed,
                    error: Some(format!(
                        "internal error: the run stopped on a bug in agentd ({message}); the daemon logged it, please report it; prompt again to continue"
                    )),
                    usage: Usage::default(),
                };
                ending.finish(&outcome).await;
                outcome
            }
        }
    }

    pub(super) fn ending(&self) -> RunEnding {
        RunEnding {
            session_id: self.session_id.clone(),
            run_id: self.run_id.clone(),
            log: self.log.clone(),
            shared: self.shared.clone(),
            broker: self.permissions.broker.clone(),
            budget: self.budget.clone(),
        }
    }
}

impl RunEnding {
    /// What a failed run leaves open: its pending approvals, its unfinished tool calls.
    pub(super) async fn close_after_failure(&self) {
        self.resolve_pending_approvals().await;
        self.pair_orphan_tool_calls(NOT_RUN_RUN_FAILED).await;
    }

    /// Deny the approvals this run still waits for (nothing will run them) and record it, so
    /// no client keeps showing or listing them.
    async fn resolve_pending_approvals(&self) {
        let pending = self.broker.list(Some(&*self.session_id));
        for approval in pending.into_iter().filter(|a| a.run_id == self.run_id) {
            let resolution = Resolution {
                decision: ApprovalDecision::Deny,
                decided_by: "cancel".to_owned(),
                reason: Some("the run failed while this approval was pending".to_owned()),
            };
            if self
                .broker
                .decide(&approval.approval_id, resolution.clone())
                .is_err()
            {
                continue; // decided meanwhile: its answer was recorded by the run or the client
            }
            let event = Event::ApprovalResolved {
                run_id: self.run_id.clone(),
                approval_id: approval.approval_id,
                tool_call_id: approval.tool_call_id,
                decision: resolution.decision,
                decided_by: resolution.decided_by,
                reason: resolution.reason,
                session_rule: None,
            };
            if let Err(err) = self.log.append(event).await {
                tracing::error!(session = %self.session_id, %err, "cannot persist approvalResolved");
            }
        }
    }

    /// Give every tool call of the last assistant message that has no result yet the error
    /// result `content` (persisted, then announced as `toolCompleted`). Best effort: a write
    /// that fails is logged; loading the session later pairs what is still missing.
    async fn pair_orphan_tool_calls(&self, content: &str) {
        let pairing = Pairing::Announced {
            session_id: &self.session_id,
            run_id: &self.run_id,
        };
        if let Err(err) = pair_orphaned_tool_calls(&*self.log, &self.shared, content, pairing).await
        {
            tracing::error!(session = %self.session_id, %err, "cannot persist the result of an unfinished tool call");
        }
    }

    /// The run takes no more steers or follow-ups (those still queued are reported, not
    /// dropped); every tool call gets a result, however the run ended; then `runFinished` is
    /// persisted and published — published even when it cannot be written (marked not
    /// persisted), so clients see the run end either way.
    pub(super) async fn finish(&self, outcome: &RunOutcome) {
        let (steers, follow_ups) = {
            let mut state = self.shared.lock();
            state.run_id = None;
            (
                state.steers.drain(..).collect(),
                state.follow_ups.drain(..).collect(),
            )
        };
        let ended = serde_json::to_value(outcome.status)
            .ok()
            .and_then(|status| status.as_str().map(str::to_owned))
            .unwrap_or_default();
        self.pair_orphan_tool_calls(&format!(
            "no result: the run ended ({ended}) before this tool call's result was recorded"
        ))
        .await;
        if let Err(err) = report_undelivered(&*self.log, &ended, steers, follow_ups).await {
            tracing::error!(session = %self.session_id, %err, "cannot report undelivered messages");
        }
        let finished = Event::RunFinished {
            run_id: self.run_id.clone(),
            status: outcome.status,
            error: outcome.error.clone(),
            usage: agentd_core::conversation::wire::usage(&outcome.usage),
            cost_usd: self.budget.cost(&outcome.usage),
        };
        if let Err(err) = self.log.append(finished).await {
            tracing::error!(session = %self.session_id, "cannot persist runFinished: {err:#}");
        }
    }
}
