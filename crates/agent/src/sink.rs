//! Where a run writes: the `RunLog` trait it persists and publishes its events through, and
//! the state it shares with its session (`SessionShared`). Both are defined here, on the run's
//! side, so `agent` never depends on `session`; the session's `EventLog` implements `RunLog`.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};
use std::time::SystemTime;

use futures::future::BoxFuture;

use agentd_core::conversation::{ContextChange, Message, Usage};
use protocol::event::Event;

/// The log a run writes through (persist first, publish second); implemented by
/// `session::events::EventLog`.
pub trait RunLog: Send + Sync {
    /// Persist `event`, then publish it; returns its seq. Cancel-safe: once queued, the write
    /// happens whether or not the caller still waits.
    fn append(&self, event: Event) -> BoxFuture<'_, anyhow::Result<u64>>;

    /// Persist a conversation message (no event; the caller publishes one). Cancel-safe.
    fn append_message<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, anyhow::Result<()>>;

    /// Persist a conversation message, then `events` (its announcement, and what follows at
    /// once), in one write, each only if all before it were written; returns the last
    /// event's seq. An error that is (or wraps) [`MessageNotWritten`] left nothing in the
    /// file. Cancel-safe.
    fn append_message_then<'a>(
        &'a self,
        message: &'a Message,
        events: Vec<Event>,
    ) -> BoxFuture<'a, anyhow::Result<u64>>;

    /// Persist a deliberate change to what the model is sent (a clearing, a compaction), as
    /// its own entry of the session file. Cancel-safe.
    fn append_context<'a>(&'a self, change: &'a ContextChange)
    -> BoxFuture<'a, anyhow::Result<()>>;

    /// Publish a best-effort event (a delta) without persisting it.
    fn publish_transient(&self, event: Event);

    /// Whether anyone could answer an approval of this session right now: a subscriber whose
    /// client declared that it answers approvals (viewers and status bars do not count).
    fn has_answerers(&self) -> bool;

    /// Resolves once nobody could answer an approval of this session any more (at once when
    /// nobody can now).
    fn answerers_left(&self) -> BoxFuture<'_, ()>;
}

/// The context of an `append_message_then` error when the message itself was not written.
#[derive(Debug, Clone, Copy)]
pub struct MessageNotWritten;

impl std::fmt::Display for MessageNotWritten {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the message was not saved")
    }
}

/// State shared by a session's actor, its active run and readers (`session/get`). Locked only
/// for short, non-async critical sections.
/// The most held messages a session keeps; the oldest is dropped beyond it.
pub const MAX_HELD_MESSAGES: usize = 64;

#[derive(Debug, Default)]
pub struct SessionShared {
    state: Mutex<SessionState>,
    /// The MCP tools a tool search loaded for the session (`search_tools`), restored from its
    /// log when it is loaded; shared with each run's `search_tools`.
    pub loaded_tools: std::sync::Arc<agentd_work::tools::tool_search::LoadedTools>,
}

#[derive(Debug, Default)]
pub struct SessionState {
    pub history: Vec<Message>,
    /// Delivered after the current tool batch.
    pub steers: VecDeque<String>,
    /// Delivered when the run would otherwise end.
    pub follow_ups: VecDeque<String>,
    /// Daemon messages that must not start a run (a background task's notification with
    /// `[tasks] notify_idle_parent = false`): they open the next run, before its own message.
    /// In memory only (the task record keeps the result), at most `MAX_HELD_MESSAGES`.
    pub held: VecDeque<String>,
    pub usage: Usage,
    /// What the session's priced calls cost so far (US dollars); None: none was priced.
    pub cost_usd: Option<f64>,
    /// The active run's id, while it still takes steers and follow-ups.
    pub run_id: Option<String>,
    /// "Allow for session" answers of this daemon's lifetime.
    pub(crate) session_allows: Vec<agentd_policy::permission::RuleKey>,
    /// "Allow for session" rules remembered from the log (answers before a restart).
    pub remembered_allow_rules: Vec<String>,
    pub updated_at: Option<SystemTime>,
    /// What of the history the model is sent: clearings, the latest compaction, the last
    /// prompt's tokens.
    pub context: agentd_knowledge::context::ContextState,
    /// The tools of the session's previous model call (None: none since it was loaded), to
    /// record `toolsChanged` when the next call's differ.
    pub offered_tools: Option<std::sync::Arc<[agentd_core::conversation::ToolSpec]>>,
}

impl SessionState {
    /// Counts one model call's tokens, and its cost when `prices` are known (the session's
    /// totals: `usageUpdated.total` and `totalCostUsd`).
    pub(crate) fn add_usage(
        &mut self,
        usage: &agentd_core::conversation::Usage,
        prices: Option<agentd_llm::Prices>,
    ) {
        self.usage.add(usage);
        if let Some(prices) = prices {
            self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + prices.cost(usage));
        }
    }
}

impl SessionShared {
    pub fn lock(&self) -> MutexGuard<'_, SessionState> {
        // A panic while holding this lock cannot leave the state half-updated in a way that
        // matters more than losing the session; keep going with the data as it is.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
