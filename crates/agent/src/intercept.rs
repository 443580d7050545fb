//! The run's interception seam: the points of a session's life where something outside agentd's
//! source may look at what happens and change it (a prompt before the model sees it, a tool
//! call before the gate judges it, its result before the model reads it, the end of a run, a
//! compaction, an approval waiting). Hooks (commands from settings) and extensions (clients of
//! the socket) each implement [`Interceptor`]; a session's [`Interceptors`] asks all of them at
//! once and merges what they say ([`Outcome::merge`]): the strictest permission wins
//! (deny > ask > allow), the first block and the first halt win, contexts and warnings add up,
//! the last rewrite wins.
//!
//! What an interceptor says never lifts a hard limit or a deny of the rules: the gate combines
//! its permission with the policy's decision (`gate`), and an `Allow` only skips a prompt the
//! rules would have asked. An interceptor bounds its own time (a hook's timeout, an extension's
//! deadline) and turns its own failures into `warnings`: `at` never fails and never hangs
//! longer than the slowest interceptor. With no interceptor, `at` costs nothing.

use std::sync::Arc;

use futures::future::BoxFuture;

use agentd_core::conversation::{Message, ToolCall};
use agentd_work::tools::ToolOutput;

use crate::sink::RunLog;

/// Who is asked, and where they may record what they did (`hookStarted`/`hookCompleted`).
#[derive(Clone, Copy)]
pub struct At<'a> {
    /// The run the point belongs to; None outside a run (a session starting or ending).
    pub run_id: Option<&'a str>,
    /// The session's log: an interceptor's own events are persisted, then published.
    pub log: &'a dyn RunLog,
}

/// Whether a compaction was asked for (`session/compact`, `/compact`) or started at the
/// context limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactTrigger {
    Manual,
    Auto,
}

/// One point of a session's life.
#[derive(Debug)]
pub enum Point<'a> {
    /// A session was created (`source` "startup") or loaded from its file ("resume").
    SessionStart { source: &'a str },
    /// A session is going away: deleted ("delete"), replaced by `/clear` ("clear"), the daemon
    /// stops ("shutdown").
    SessionEnd { reason: &'a str },
    /// A subagent's child session starts (asked of the parent's interceptors).
    SubagentStart { agent_type: &'a str },
    /// The user's prompt, before it joins the history. `block` refuses it (nothing is kept),
    /// `replace_text` transforms it, `context` adds to it.
    UserPrompt { text: &'a str },
    /// A tool call the model made, before the gate judges it. `block` denies it with the
    /// reason as its result, `updated_input` replaces its arguments (judged and run as
    /// replaced), `permission` joins the rules' decision.
    ToolCall { call: &'a ToolCall },
    /// The gate would ask a person about `call`. `permission` Allow or Deny decides it
    /// without asking; Ask (or nothing) lets the approval go out.
    PermissionRequest { call: &'a ToolCall, reason: &'a str },
    /// A tool call's result, before the model reads it (`output.is_error`: it failed).
    /// `replace_text` rewrites what the model reads; `context` and `block`'s reason are added
    /// to it.
    ToolResult {
        call: &'a ToolCall,
        output: &'a ToolOutput,
    },
    /// The run would end (`agent_type`: a subagent's run, asked as SubagentStop). `block`
    /// keeps it going with the reason as the next user message, once per chain
    /// (`stop_hook_active` is true while a block already kept it going).
    Stop {
        stop_hook_active: bool,
        last_message: &'a str,
        agent_type: Option<&'a str>,
    },
    /// A compaction is about to summarise the history (`focus`: what `/compact` asked for).
    PreCompact {
        trigger: CompactTrigger,
        focus: Option<&'a str>,
    },
    /// A compaction finished (or failed: `summary` None).
    PostCompact {
        trigger: CompactTrigger,
        summary: Option<&'a str>,
    },
    /// Something waits for the user (an approval; a background task finished). Outcomes are
    /// ignored but for warnings.
    Notification { message: &'a str },
    /// The messages of one model request, before they are sent. `messages` replaces them for
    /// this request only; the history is not touched.
    Request { messages: &'a [Message] },
    /// The raw body of one provider request, just before it is sent; asked only when an
    /// interceptor [`Interceptor::wants_provider_request`] (the body is built and parsed for
    /// it). `request_body` replaces it for this request.
    ProviderRequest { body: &'a serde_json::Value },
}

impl Point<'_> {
    /// The event's name as Claude Code's hooks know it.
    pub fn hook_event_name(&self) -> &'static str {
        match self {
            Point::SessionStart { .. } => "SessionStart",
            Point::SessionEnd { .. } => "SessionEnd",
            Point::SubagentStart { .. } => "SubagentStart",
            Point::UserPrompt { .. } => "UserPromptSubmit",
            Point::ToolCall { .. } => "PreToolUse",
            Point::PermissionRequest { .. } => "PermissionRequest",
            Point::ToolResult { output, .. } if output.is_error => "PostToolUseFailure",
            Point::ToolResult { .. } => "PostToolUse",
            Point::Stop {
                agent_type: Some(_),
                ..
            } => "SubagentStop",
            Point::Stop { .. } => "Stop",
            Point::PreCompact { .. } => "PreCompact",
            Point::PostCompact { .. } => "PostCompact",
            Point::Notification { .. } => "Notification",
            Point::Request { .. } => "Request",
            Point::ProviderRequest { .. } => "ProviderRequest",
        }
    }
}

/// An interceptor's say on a tool call's permission.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Permission {
    /// Skip a prompt the rules would have asked (never lifts a deny or a hard limit).
    Allow,
    /// Ask a person even where the rules allow.
    Ask(String),
    /// Refuse the call, with the reason the model reads.
    Deny(String),
}

impl Permission {
    fn strength(&self) -> u8 {
        match self {
            Permission::Allow => 0,
            Permission::Ask(_) => 1,
            Permission::Deny(_) => 2,
        }
    }
}

/// What interceptors said at one point. Each point reads the fields its doc names and ignores
/// the rest.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Refuse what the point is about, with the reason the model (or the user) reads.
    pub block: Option<String>,
    pub permission: Option<Permission>,
    /// A tool call's replacement arguments (a JSON object).
    pub updated_input: Option<serde_json::Value>,
    /// Text added for the model: to the prompt, or to a tool's result.
    pub context: Vec<String>,
    /// A prompt's or a tool result's replacement text.
    pub replace_text: Option<String>,
    /// Stop the run after this point, with the reason shown to the user (`continue: false`).
    pub halt: Option<String>,
    /// Shown to the user as `warning` events: messages for the user, and what failed.
    pub warnings: Vec<String>,
    /// A request's replacement messages (`Point::Request` only).
    pub messages: Option<Vec<Message>>,
    /// A provider request's replacement body (`Point::ProviderRequest` only).
    pub request_body: Option<serde_json::Value>,
}

impl Outcome {
    /// Folds `other` (said by a later interceptor) into `self`.
    pub fn merge(&mut self, other: Outcome) {
        if self.block.is_none() {
            self.block = other.block;
        }
        if let Some(permission) = other.permission {
            let stronger = self
                .permission
                .as_ref()
                .is_none_or(|current| permission.strength() > current.strength());
            if stronger {
                self.permission = Some(permission);
            }
        }
        if other.updated_input.is_some() {
            self.updated_input = other.updated_input;
        }
        self.context.extend(other.context);
        if other.replace_text.is_some() {
            self.replace_text = other.replace_text;
        }
        if self.halt.is_none() {
            self.halt = other.halt;
        }
        self.warnings.extend(other.warnings);
        if other.messages.is_some() {
            self.messages = other.messages;
        }
        if other.request_body.is_some() {
            self.request_body = other.request_body;
        }
    }
}

/// Something outside agentd's source that a session asks at each [`Point`].
pub trait Interceptor: Send + Sync {
    /// Says what it wants at `point`. Bounded in time by the interceptor itself; failures are
    /// `warnings`, never an error.
    fn intercept<'a>(&'a self, at: At<'a>, point: &'a Point<'a>) -> BoxFuture<'a, Outcome>;

    /// Whether it wants [`Point::ProviderRequest`] for the next request: the run builds and
    /// parses the body only when one does.
    fn wants_provider_request(&self) -> bool {
        false
    }

    /// A watch over the answer about to stream (None: it does not watch). The run feeds it
    /// every piece of text without waiting; its future resolves to a reason when the answer
    /// must be cut off (the text so far is dropped, the run ends), or to None when it has
    /// nothing more to say. Bounded in time by the interceptor, like `intercept`.
    fn watch_stream<'a>(&'a self, at: At<'a>) -> Option<StreamWatch<'a>> {
        let _ = at;
        None
    }
}

/// Pieces of a streaming answer would wait here for a watcher; more are joined with the last
/// one waiting, so the stream never waits for a watcher and nothing of the text is lost.
pub const STREAM_FEED_QUEUE: usize = 16;

/// One interceptor's watch over a streaming answer ([`Interceptor::watch_stream`]).
pub struct StreamWatch<'a> {
    /// Where the run puts each piece of text.
    pub feed: StreamFeed,
    /// Resolves to why the answer is cut off, or None: no cut from this watcher.
    pub cut: BoxFuture<'a, Option<String>>,
}

/// The sending side of a watch: never blocks; when the watcher lags, pieces are joined.
pub struct StreamFeed {
    sender: tokio::sync::mpsc::Sender<String>,
    /// Text not yet taken by the queue (it was full), sent with the next piece.
    unsent: String,
}

impl StreamFeed {
    /// A feed and the watcher's end of it.
    pub fn channel() -> (StreamFeed, tokio::sync::mpsc::Receiver<String>) {
        let (sender, receiver) = tokio::sync::mpsc::channel(STREAM_FEED_QUEUE);
        let feed = StreamFeed {
            sender,
            unsent: String::new(),
        };
        (feed, receiver)
    }

    /// Hands `piece` (and what is waiting before it) to the watcher, without waiting.
    pub fn push(&mut self, piece: &str) {
        self.unsent.push_str(piece);
        if self.unsent.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.unsent);
        if let Err(tokio::sync::mpsc::error::TrySendError::Full(text)) = self.sender.try_send(text)
        {
            self.unsent = text;
        }
    }
}

/// Every watch of one streaming answer ([`Interceptors::watch_stream`]).
pub struct StreamWatches<'a> {
    feeds: Vec<StreamFeed>,
    cut: BoxFuture<'a, String>,
}

impl<'a> StreamWatches<'a> {
    /// Hands a piece of the answer to every watcher.
    pub fn push(&mut self, piece: &str) {
        for feed in &mut self.feeds {
            feed.push(piece);
        }
    }

    /// The feeds, for the stream's callback, and the future of the first cut (it never
    /// resolves when no watcher cuts).
    pub fn split(self) -> (Vec<StreamFeed>, BoxFuture<'a, String>) {
        (self.feeds, self.cut)
    }
}

/// A session's interceptors, asked together. Cheap to clone; empty by default.
#[derive(Clone, Default)]
pub struct Interceptors {
    list: Arc<[Arc<dyn Interceptor>]>,
}

impl std::fmt::Debug for Interceptors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interceptors")
            .field("len", &self.list.len())
            .finish()
    }
}

impl Interceptors {
    pub fn new(list: Vec<Arc<dyn Interceptor>>) -> Self {
        Self { list: list.into() }
    }

    /// These and `more` (a subagent's own hooks after its parent's).
    pub fn with(&self, more: impl IntoIterator<Item = Arc<dyn Interceptor>>) -> Self {
        Self::new(self.list.iter().cloned().chain(more).collect())
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Whether one of them wants [`Point::ProviderRequest`] for the next request.
    pub fn wants_provider_request(&self) -> bool {
        self.list.iter().any(|one| one.wants_provider_request())
    }

    /// The watches of the answer about to stream (None: nobody watches). Their cut resolves
    /// with the first reason any of them gives.
    pub fn watch_stream<'a>(&'a self, at: At<'a>) -> Option<StreamWatches<'a>> {
        let watches: Vec<StreamWatch<'a>> = self
            .list
            .iter()
            .filter_map(|one| one.watch_stream(at))
            .collect();
        if watches.is_empty() {
            return None;
        }
        let mut feeds = Vec::with_capacity(watches.len());
        let mut cuts = futures::stream::FuturesUnordered::new();
        for watch in watches {
            feeds.push(watch.feed);
            cuts.push(watch.cut);
        }
        let cut = Box::pin(async move {
            use futures::StreamExt as _;
            while let Some(said) = cuts.next().await {
                if let Some(reason) = said {
                    return reason;
                }
            }
            futures::future::pending().await
        });
        Some(StreamWatches { feeds, cut })
    }

    /// Asks every interceptor at `point`, all at once, and merges what they said in their
    /// order.
    pub async fn at(&self, at: At<'_>, point: &Point<'_>) -> Outcome {
        match &*self.list {
            [] => Outcome::default(),
            [one] => one.intercept(at, point).await,
            many => {
                let said =
                    futures::future::join_all(many.iter().map(|one| one.intercept(at, point)))
                        .await;
                let mut outcome = Outcome::default();
                for one in said {
                    outcome.merge(one);
                }
                outcome
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn says(permission: Option<Permission>, block: Option<&str>) -> Outcome {
        Outcome {
            permission,
            block: block.map(str::to_owned),
            ..Outcome::default()
        }
    }

    #[test]
    fn the_strictest_permission_wins_in_any_order() {
        let orders = [
            [
                Some(Permission::Allow),
                Some(Permission::Deny("no".into())),
                Some(Permission::Ask("why".into())),
            ],
            [
                Some(Permission::Deny("no".into())),
                Some(Permission::Allow),
                None,
            ],
        ];
        for order in orders {
            let mut merged = Outcome::default();
            for permission in order {
                merged.merge(says(permission, None));
            }
            assert_eq!(merged.permission, Some(Permission::Deny("no".into())));
        }
        let mut merged = says(Some(Permission::Allow), None);
        merged.merge(says(Some(Permission::Ask("check".into())), None));
        merged.merge(says(Some(Permission::Allow), None));
        assert_eq!(merged.permission, Some(Permission::Ask("check".into())));
    }

    #[test]
    fn the_first_block_wins_and_contexts_add_up() {
        let mut merged = says(None, Some("first"));
        merged.context.push("a".into());
        let mut later = says(None, Some("second"));
        later.context.push("b".into());
        later.replace_text = Some("new".into());
        merged.merge(later);
        assert_eq!(merged.block.as_deref(), Some("first"));
        assert_eq!(merged.context, ["a", "b"]);
        assert_eq!(merged.replace_text.as_deref(), Some("new"));
    }

    #[test]
    fn a_failed_tool_result_is_asked_as_post_tool_use_failure() {
        let call = ToolCall {
            id: "c1".into(),
            name: "run_shell".into(),
            arguments: "{}".into(),
        };
        let failed = ToolOutput::error("boom");
        let point = Point::ToolResult {
            call: &call,
            output: &failed,
        };
        assert_eq!(point.hook_event_name(), "PostToolUseFailure");
        let stop = Point::Stop {
            stop_hook_active: false,
            last_message: "",
            agent_type: Some("explore"),
        };
        assert_eq!(stop.hook_event_name(), "SubagentStop");
    }
}
