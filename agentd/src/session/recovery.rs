//! Recovery: what a session's log says was in progress when the daemon stopped (an active run,
//! a pending approval, queued follow-ups) is closed properly on load, and whatever way a run
//! ends its tool calls are paired, so the history stays valid for the provider, nothing runs
//! unapproved and nothing queued is dropped without a word.

use super::SessionShared;
use super::events::EventLog;
use crate::agent::INTERRUPTED;
use crate::conversation::{Message, orphaned_tool_calls};
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

/// A run that was active when the daemon stopped: pair its orphaned tool calls with an
/// "interrupted" result, report the follow-ups it never delivered, and record that it ended.
pub(super) async fn repair_interrupted_run(
    log: &EventLog,
    shared: &SessionShared,
    run_id: &str,
    queued_follow_ups: Vec<String>,
) -> anyhow::Result<()> {
    pair_orphaned_tool_calls(log, shared, INTERRUPTED).await?;
    report_undelivered(log, "interrupted", Vec::new(), queued_follow_ups).await?;
    log.append(Event::RunFinished {
        run_id: run_id.to_owned(),
        status: RunStatus::Interrupted,
        error: Some("the daemon stopped while this run was active".to_owned()),
        usage: Default::default(),
    })
    .await?;
    Ok(())
}

/// Give every tool call of the history's last assistant message that has no result the result
/// `content` (an error), persisted before it joins the history. Nothing to do in the usual
/// case; after a failed run, a failed write or a crash it keeps the history valid for every
/// provider (each tool call has exactly one result).
pub(crate) async fn pair_orphaned_tool_calls(
    log: &EventLog,
    shared: &SessionShared,
    content: &str,
) -> anyhow::Result<()> {
    let orphans = orphaned_tool_calls(&shared.lock().history);
    for (id, name) in orphans {
        let message = Message::Tool {
            tool_call_id: id,
            tool_name: name,
            content: content.to_owned(),
            is_error: true,
        };
        log.append_message(&message).await?;
        shared.lock().history.push(message);
    }
    Ok(())
}

/// Steers and follow-ups a run ended without delivering: each gets a persisted `warning`, so
/// the user knows to send it again (nothing queued is dropped silently).
pub(crate) async fn report_undelivered(
    log: &EventLog,
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
