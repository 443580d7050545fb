//! `agentctl steer`, `agentctl followup`, `agentctl cancel` and `agentctl compact`: steer a
//! session's run, or compact its history.

use protocol::methods::{SessionCancel, SessionCompact, SessionFollowUp, SessionSteer};
use protocol::session::{QueueMessageParams, SessionRef};

use crate::Context;
use crate::commands::message_text;
use crate::output::{CommandError, print_json};

/// `agentctl steer SESSION TEXT`: fails (CONFLICT) when no run is active.
pub async fn steer(ctx: &Context, session_id: String, text: &str) -> Result<(), CommandError> {
    let text = message_text(text, "steering message")?;
    let connection = ctx.connect().await?;
    let session_id = crate::ids::session(&connection, &session_id).await?;
    let params = QueueMessageParams {
        session_id: session_id.clone(),
        text,
    };
    let result = match connection.request::<SessionSteer>(&params).await {
        Ok(result) => result,
        // The daemon words it as methods; say it as agentctl commands.
        Err(crate::client::ClientError::Rpc { code, .. }) if code == protocol::error::CONFLICT => {
            return Err(CommandError::failed(format!(
                "no run is active in session {session_id} to steer; start one with `agentctl run --session {session_id} TEXT`, or queue it with `agentctl followup {session_id} TEXT`"
            )));
        }
        Err(err) => return Err(err.into()),
    };
    if ctx.json {
        print_json(&result);
    } else {
        crate::say!(
            "steer queued for run {}; it reaches the model after the current tool batch",
            result.run_id
        );
    }
    Ok(())
}

/// `agentctl followup SESSION TEXT`: queued into the active run, or starts a run when idle.
pub async fn follow_up(ctx: &Context, session_id: String, text: &str) -> Result<(), CommandError> {
    let text = message_text(text, "follow-up message")?;
    let connection = ctx.connect().await?;
    let session_id = crate::ids::session(&connection, &session_id).await?;
    let params = QueueMessageParams {
        session_id: session_id.clone(),
        text,
    };
    let result = connection.request::<SessionFollowUp>(&params).await?;
    if ctx.json {
        print_json(&result);
    } else if result.queued {
        crate::say!(
            "follow-up queued for run {}; it is delivered when the run would end",
            result.run_id
        );
    } else {
        crate::say!(
            "follow-up started run {} (watch it with `agentctl attach {session_id}`)",
            result.run_id
        );
    }
    Ok(())
}

/// `agentctl cancel SESSION`: idempotent; succeeds when no run is active.
pub async fn cancel(ctx: &Context, session_id: String) -> Result<(), CommandError> {
    let connection = ctx.connect().await?;
    let session_id = crate::ids::session(&connection, &session_id).await?;
    let params = SessionRef {
        session_id: session_id.clone(),
    };
    let result = connection.request::<SessionCancel>(&params).await?;
    if ctx.json {
        print_json(&result);
    } else {
        match (result.cancelled, &result.run_id) {
            (true, Some(run_id)) => crate::say!("cancelling run {run_id}"),
            (true, None) => crate::say!("cancelling the active run of {session_id}"),
            (false, _) => crate::say!("no active run in session {session_id}"),
        }
    }
    Ok(())
}

/// `agentctl compact SESSION`: the older history is summarised; refused while a run is active.
pub async fn compact(ctx: &Context, session_id: String) -> Result<(), CommandError> {
    let connection = ctx.connect().await?;
    let session_id = crate::ids::session(&connection, &session_id).await?;
    let params = SessionRef {
        session_id: session_id.clone(),
    };
    let result = connection.request::<SessionCompact>(&params).await?;
    if ctx.json {
        print_json(&result);
    } else {
        match (result.compacted, result.tokens_before, result.tokens_after) {
            (true, Some(before), Some(after)) => {
                crate::say!("compacted {session_id}: {before} → about {after} prompt tokens")
            }
            (true, _, _) => crate::say!("compacted {session_id}"),
            (false, _, _) => crate::say!(
                "nothing to compact in {session_id}: the history is no longer than the last two user turns"
            ),
        }
    }
    Ok(())
}
