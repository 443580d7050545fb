//! How a run always ends, whatever happens inside it: an error or a panic becomes
//! `runFinished{status:"failed", error}` after the run's pending approvals were resolved and
//! every tool call of the last assistant message got a result, so the session returns to idle,
//! no approval stays listed, and the history stays valid for the provider.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use tokio::sync::oneshot;

use super::{NOT_RUN_RUN_FAILED, Run, RunOutcome, RunStart};
use crate::approval::{ApprovalBroker, Resolution};
use crate::conversation::{Message, Usage, orphaned_tool_calls};
use crate::session::SessionShared;
use crate::session::events::EventLog;
use protocol::approval::ApprovalDecision;
use protocol::event::{Event, RunStatus};

/// What ending a run needs, held apart from the `Run` so it outlives a run that panicked.
pub(super) struct RunEnding {
    session_id: Arc<str>,
    run_id: String,
    log: Arc<EventLog>,
    shared: Arc<SessionShared>,
    broker: Arc<ApprovalBroker>,
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
                let message = crate::logging::panic_message(&*payload);
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
        let orphans = orphaned_tool_calls(&self.shared.lock().history);
        for (tool_call_id, tool_name) in orphans {
            let message = Message::Tool {
                tool_call_id: tool_call_id.clone(),
                tool_name: tool_name.clone(),
                content: content.to_owned(),
                is_error: true,
            };
            if let Err(err) = self.log.append_message(&message).await {
                tracing::error!(session = %self.session_id, %err, "cannot persist the result of an unfinished tool call");
                return;
            }
            self.shared.lock().history.push(message);
            let event = Event::ToolCompleted {
                run_id: self.run_id.clone(),
                tool_call_id,
                tool: tool_name,
                output: content.to_owned(),
                is_error: true,
                duration_ms: 0,
            };
            if let Err(err) = self.log.append(event).await {
                tracing::error!(session = %self.session_id, %err, "cannot persist toolCompleted");
            }
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
        if let Err(err) =
            crate::session::recovery::report_undelivered(&self.log, &ended, steers, follow_ups)
                .await
        {
            tracing::error!(session = %self.session_id, %err, "cannot report undelivered messages");
        }
        let finished = Event::RunFinished {
            run_id: self.run_id.clone(),
            status: outcome.status,
            error: outcome.error.clone(),
            usage: crate::wire::usage(&outcome.usage),
        };
        if let Err(err) = self.log.append(finished).await {
            tracing::error!(session = %self.session_id, "cannot persist runFinished: {err:#}");
        }
    }
}
