//! What `/cost` and `/todos` read of a session's log: each run's tokens and cost
//! (`runFinished`) and the latest todo list (`todoUpdated`), replayed page by page from the
//! file, so memory stays bounded whatever the log's size.

use protocol::event::{Event, RunStatus, Usage};
use protocol::todo::TodoItem;

use super::super::{RpcResult, internal};
use crate::session::actor::Session;

/// Runs `/cost` lists one by one (the latest); older ones are only counted in the totals.
pub(super) const RUNS_LISTED: usize = 20;

/// One finished run.
pub(super) struct RunCost {
    pub(super) run_id: String,
    pub(super) status: RunStatus,
    pub(super) usage: Usage,
    pub(super) cost_usd: Option<f64>,
}

/// What the log says.
#[derive(Default)]
pub(super) struct LogSummary {
    /// The latest runs, oldest first, at most [`RUNS_LISTED`].
    pub(super) runs: Vec<RunCost>,
    /// Every finished run, listed or not.
    pub(super) runs_total: usize,
    /// The latest todo list (None: the model never wrote one).
    pub(super) todos: Option<Vec<TodoItem>>,
}

/// Replay `session`'s persisted events and sum them up.
pub(super) async fn summary(session: &Session) -> RpcResult<LogSummary> {
    let mut subscription = session
        .log
        .subscribe(Some(0))
        .await
        .map_err(|err| internal(format!("cannot read the session log: {err:#}")))?;
    let mut summary = LogSummary::default();
    loop {
        let page = session
            .log
            .replay_page(&mut subscription.replay)
            .await
            .map_err(|err| internal(format!("cannot read the session log: {err:#}")))?;
        if page.is_empty() {
            break;
        }
        for published in page {
            match &published.event {
                Event::RunFinished {
                    run_id,
                    status,
                    usage,
                    cost_usd,
                    ..
                } => {
                    summary.runs_total += 1;
                    if summary.runs.len() == RUNS_LISTED {
                        summary.runs.remove(0);
                    }
                    summary.runs.push(RunCost {
                        run_id: run_id.clone(),
                        status: *status,
                        usage: *usage,
                        cost_usd: *cost_usd,
                    });
                }
                Event::TodoUpdated { items, .. } => summary.todos = Some(items.clone()),
                _ => {}
            }
        }
    }
    Ok(summary)
}
