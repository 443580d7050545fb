//! Recovery on load: what a session's log says was in progress when the daemon stopped (an
//! active run, a pending approval) is closed properly, so the history stays valid for the
//! provider and nothing runs unapproved.

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
/// "interrupted" result and record that it ended.
pub(super) async fn repair_interrupted_run(
    log: &EventLog,
    shared: &SessionShared,
    run_id: &str,
) -> anyhow::Result<()> {
    let orphans = orphaned_tool_calls(&shared.lock().history);
    for (id, name) in orphans {
        let message = Message::Tool {
            tool_call_id: id,
            tool_name: name,
            content: INTERRUPTED.to_owned(),
            is_error: true,
        };
        log.append_message(&message).await?;
        shared.lock().history.push(message);
    }
    log.append(Event::RunFinished {
        run_id: run_id.to_owned(),
        status: RunStatus::Interrupted,
        error: Some("the daemon stopped while this run was active".to_owned()),
        usage: Default::default(),
    })
    .await?;
    Ok(())
}
