//! Recovery: what a session's log says was in progress when the daemon stopped (an active run,
//! a pending approval, queued follow-ups) is closed properly on load, so the history stays
//! valid for the provider, nothing runs unapproved and nothing queued is dropped without a
//! word. Pairing orphan tool calls and reporting undelivered messages are the run's own
//! (`agent::pair_orphaned_tool_calls`, `agent::report_undelivered`); recovery calls them.

use super::SessionShared;
use super::events::EventLog;
use agentd_agent::{INTERRUPTED, Pairing, pair_orphaned_tool_calls, report_undelivered};
use protocol::event::{Event, RunStatus};

/// An approval pending when the daemon stopped: nothing ran; it is recorded as expired.
pub(super) async fn expire_approval(
    log: &EventLog,
    run_id: String,
    approval_id: String,
    tool_call_id: String,
) -> anyhow::Result<()> {
    log.append(Event::ApprovalResolved {
        run_id,
        approval_id,
        tool_call_id,
        decision: protocol::approval::ApprovalDecision::Deny,
        decided_by: "restart".to_owned(),
        reason: Some("expired: the daemon stopped while this approval was pending".to_owned()),
        session_rule: None,
    })
    .await?;
    Ok(())
}

/// A run that was active when the daemon stopped and does not go on (`why`): pair its
/// orphaned tool calls with an "interrupted" result, report the steers and follow-ups it never
/// delivered, and record that it ended.
pub(crate) async fn repair_interrupted_run(
    log: &EventLog,
    shared: &SessionShared,
    run_id: &str,
    queued_steers: Vec<String>,
    queued_follow_ups: Vec<String>,
    why: String,
) -> anyhow::Result<()> {
    pair_orphaned_tool_calls(log, shared, INTERRUPTED, Pairing::Quiet).await?;
    report_undelivered(log, "interrupted", queued_steers, queued_follow_ups).await?;
    log.append(Event::RunFinished {
        run_id: run_id.to_owned(),
        status: RunStatus::Interrupted,
        error: Some(why),
        usage: Default::default(),
        cost_usd: None,
    })
    .await?;
    Ok(())
}
