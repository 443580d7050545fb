//! The log a subagent's run writes through: its own session's log, with its approvals also
//! announced in the parent session's log (`approvalRequested` / `approvalResolved`, labelled
//! with the task id and agent type), so whoever answers the parent's approvals answers the
//! child's. The child counts the parent's answerers as its own.

use std::sync::Arc;

use futures::future::BoxFuture;
use protocol::event::Event;

use super::events::EventLog;
use agentd_agent::sink::RunLog;
use agentd_core::conversation::{ContextChange, Message};

/// The log a run of the session `header` writes through: a child's `ChildRunLog` (its
/// parent loaded), else the session's own log.
pub async fn run_log_for(
    header: &crate::store::SessionHeader,
    deps: &super::SessionDeps,
    own: &Arc<EventLog>,
) -> Arc<dyn RunLog> {
    let manager = deps.manager.get().and_then(std::sync::Weak::upgrade);
    if let (Some(parent_id), Some(manager)) = (&header.parent_session_id, manager) {
        match load_parent(manager, parent_id).await {
            Ok(parent) => {
                return Arc::new(ChildRunLog {
                    own: own.clone(),
                    parent: parent.log.clone(),
                });
            }
            Err(err) => tracing::debug!("the parent {parent_id} of a subagent is gone: {err}"),
        }
    }
    own.clone()
}

/// The parent session of a child, loaded. Boxed: loading a session starts its actor, whose
/// runs call this (the future type would otherwise contain itself).
pub fn load_parent(
    manager: Arc<super::SessionManager>,
    parent_id: &str,
) -> BoxFuture<'static, Result<Arc<super::Session>, super::SessionError>> {
    let parent_id = parent_id.to_owned();
    Box::pin(async move { manager.get(&parent_id).await })
}

/// A child's log and its parent's.
pub struct ChildRunLog {
    pub own: Arc<EventLog>,
    pub parent: Arc<EventLog>,
}

impl RunLog for ChildRunLog {
    fn append(&self, event: Event) -> BoxFuture<'_, anyhow::Result<u64>> {
        Box::pin(async move {
            let mirrored = matches!(
                event,
                Event::ApprovalRequested { .. }
                    | Event::ApprovalResolved { .. }
                    | Event::BudgetExceeded { .. }
                    | Event::BudgetResolved { .. }
                    | Event::ElicitationRequested { .. }
                    | Event::ElicitationResolved { .. }
            )
            .then(|| event.clone());
            let seq = self.own.append(event).await?;
            if let Some(event) = mirrored
                && let Err(err) = self.parent.append(event).await
            {
                tracing::warn!("a subagent's approval did not reach its parent's log: {err:#}");
            }
            Ok(seq)
        })
    }

    fn append_message<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(self.own.append_message(message))
    }

    fn append_message_then<'a>(
        &'a self,
        message: &'a Message,
        events: Vec<Event>,
    ) -> BoxFuture<'a, anyhow::Result<u64>> {
        // Never an approval: the child's own (not mirrored).
        Box::pin(self.own.append_message_then(message, events))
    }

    fn append_context<'a>(
        &'a self,
        change: &'a ContextChange,
    ) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(self.own.append_context(change))
    }

    fn publish_transient(&self, event: Event) {
        self.own.publish_transient(event);
    }

    fn has_answerers(&self) -> bool {
        self.own.has_answerers() || self.parent.has_answerers()
    }

    fn answerers_left(&self) -> BoxFuture<'_, ()> {
        let [own, daemon] = self.own.answerer_counts();
        let [parent, _] = self.parent.answerer_counts();
        Box::pin(agentd_core::answerers::Answerers::all_left(vec![
            own, daemon, parent,
        ]))
    }
}
