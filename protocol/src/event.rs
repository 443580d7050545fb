//! Session events and their notification envelope (`session/event`, `daemon/event`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Notification method carrying one session's events to its subscribers.
pub const SESSION_EVENT: &str = "session/event";
/// Notification method carrying lifecycle events of all sessions to `daemon/subscribe`rs.
pub const DAEMON_EVENT: &str = "daemon/event";

/// Params of a `session/event` / `daemon/event` notification: the subscription's id beside the
/// envelope's fields, all directly in `params`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventNotificationParams<E = Event> {
    /// The id `session/subscribe` / `daemon/subscribe` answered.
    pub subscription_id: String,
    #[serde(flatten)]
    pub envelope: SessionEventEnvelope<E>,
}

/// One event of a session with its seq: the part of a `session/event` / `daemon/event`
/// notification's params besides `subscriptionId`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionEventEnvelope<E = Event> {
    pub session_id: String,
    /// Monotonic per session, persisted. `messageDelta` and `lagged` are not persisted and
    /// carry the seq of the last persisted event.
    pub seq: u64,
    pub event: E,
    /// True when the daemon could not write this event to the session log (disk full, I/O
    /// error) and sends it anyway: a terminal `runFinished`, or the `warning` that stands for
    /// events missing from a replay. Such an event has its own seq but is not replayed as is.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_persisted: bool,
}

/// Token usage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_input_tokens: u64,
    pub cache_creation_input_tokens: u64,
    /// Some of these counts are the daemon's estimate (about 4 bytes a token), because the
    /// provider reported no usage (e.g. a llama.cpp server). Absent when all were reported.
    /// Added in 1.3.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

/// A tool call as the model made it; `arguments` is the raw JSON text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallInfo {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RunStatus {
    Completed,
    Cancelled,
    Failed,
    MaxSteps,
    /// The daemon stopped or crashed while the run was active.
    Interrupted,
    /// A budget was reached and nobody let it go on: no client that answers followed, or one
    /// answered `stop`, or the pause timed out (`error` names the budget). Added in 1.3.
    Budget,
}

/// Who queued a follow-up other than a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FollowUpOrigin {
    /// The end of a background task, delivered to the session that started it.
    TaskNotification,
}

/// Where a user message came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum UserMessageKind {
    Prompt,
    Steer,
    FollowUp,
}

/// How a run was asked to go beyond its prompt, recorded in its `runStarted` so that a run
/// resumed after a restart goes on with the same settings. Each field is absent when not
/// asked for; `runStarted` omits the whole object when none was. Added in 1.3.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunStartOptions {
    /// A model for this run only (a slash command's `model`), as asked (`provider:model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The only tools the run is offered (a slash command's `allowed-tools`, as tool names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    /// The prompt's own step limit (`session/prompt {maxSteps}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// The prompt's `holdApprovals`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hold_approvals: bool,
    /// A subagent's run: the parent's run that started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
}

impl RunStartOptions {
    /// Whether nothing was asked for (then `runStarted` carries no `options`).
    pub fn is_default(&self) -> bool {
        *self == RunStartOptions::default()
    }
}

/// One event of a session. Everything but `messageDelta` and `lagged` is persisted to the
/// session log before it is published.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
#[expect(
    clippy::large_enum_variant,
    reason = "approvalRequested carries the whole pending approval; boxing it would change every match of every client"
)]
pub enum Event {
    /// A session was created: the first event of its log (also sent on the daemon stream).
    /// A fork's comes after the events it holds of its source, with `forkedFrom`.
    #[serde(rename_all = "camelCase")]
    SessionCreated {
        cwd: String,
        model: String,
        /// Added in 1.3: the session was forked from this one at this seq (`session/fork`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        forked_from: Option<crate::session::ForkPoint>,
    },
    /// A session was deleted: the last event of its log (also sent on the daemon stream).
    SessionDeleted {},
    /// `session/update` changed the session (from its next run on); only the changed fields.
    #[serde(rename_all = "camelCase")]
    SessionUpdated {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        permission_mode: Option<crate::approval::PermissionMode>,
        /// The configured provider of `model`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// The new title; `""` removed it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    RunStarted {
        run_id: String,
        prompt: String,
        /// The `clientRequestId` of the prompt that started the run, kept so a retried prompt
        /// finds its run after a daemon restart.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        client_request_id: Option<String>,
        /// What the run was asked to go with beyond its prompt (absent: nothing), kept so a
        /// run resumed after a restart keeps it. Added in 1.3.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        options: Option<RunStartOptions>,
    },
    /// A run that was active when the daemon stopped (a restart or a crash) goes on under the
    /// same run id, from its next model call. `attempt` counts the resumes of this run (a run is
    /// resumed at most twice); `interruptedToolCalls` are the calls that had started and got the
    /// result "interrupted by a daemon restart" (never run again). Added in 1.3.
    #[serde(rename_all = "camelCase")]
    RunResumed {
        run_id: String,
        attempt: u32,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        interrupted_tool_calls: Vec<String>,
    },
    /// The daemon is stopping while this run is active: the run stops here, unfinished, and
    /// resumes (`runResumed`) when the daemon starts again. Added in 1.3.
    #[serde(rename_all = "camelCase")]
    RunSuspended { run_id: String, reason: String },
    /// A model call begins (step counts from 1).
    #[serde(rename_all = "camelCase")]
    TurnStarted { run_id: String, step: u32 },
    /// Streamed assistant text; best-effort, never persisted.
    #[serde(rename_all = "camelCase")]
    MessageDelta { run_id: String, text: String },
    /// A piece of the model's reasoning as it streams (providers that send it: `thinking`
    /// blocks, `reasoning_content`); never persisted nor sent back to the model. Added in 1.1.
    #[serde(rename_all = "camelCase")]
    ThinkingDelta { run_id: String, text: String },
    /// A complete message: the user's (prompt, steer, follow-up) or the assistant's.
    #[serde(rename_all = "camelCase")]
    MessageCompleted {
        run_id: String,
        role: MessageRole,
        content: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<UserMessageKind>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCallInfo>,
    },
    #[serde(rename_all = "camelCase")]
    ToolStarted {
        run_id: String,
        tool_call_id: String,
        tool: String,
        /// One line for UIs, e.g. the command or the path.
        summary: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolProgress {
        run_id: String,
        tool_call_id: String,
        message: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCompleted {
        run_id: String,
        tool_call_id: String,
        tool: String,
        /// The result the model reads (capped).
        output: String,
        is_error: bool,
        duration_ms: u64,
    },
    /// A tool call waits for a person: answer with `approval/respond`. Persisted before it is
    /// announced, replayed to late subscribers.
    #[serde(rename_all = "camelCase")]
    ApprovalRequested {
        run_id: String,
        approval: crate::approval::PendingApproval,
    },
    /// An approval was decided. `decidedBy` is `client:<name>` for a person's answer,
    /// `timeout`, `restart` (the daemon stopped while it was pending: denied, expired),
    /// `cancel` (the run was cancelled) or `mode` (decided by the permission mode).
    #[serde(rename_all = "camelCase")]
    ApprovalResolved {
        run_id: String,
        approval_id: String,
        tool_call_id: String,
        decision: crate::approval::ApprovalDecision,
        decided_by: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// For `allowSession`: what the session now allows without asking (tool + specifier).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_rule: Option<String>,
    },
    /// The run reached a budget and waits, before its next model call, for `budget/respond`
    /// (continue with a higher limit, or stop). Persisted before it is announced. Added in 1.3.
    #[serde(rename_all = "camelCase")]
    BudgetExceeded {
        run_id: String,
        request: crate::budget::BudgetRequest,
    },
    /// A budget pause was answered. `decidedBy` is `client:<name>`, `policy:<name>`,
    /// `timeout`, `cancel` or `mode` (nobody who answers followed). Added in 1.3.
    #[serde(rename_all = "camelCase")]
    BudgetResolved {
        run_id: String,
        request_id: String,
        decision: crate::budget::BudgetDecision,
        decided_by: String,
        /// For `continue`: the run's limit from now on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        new_limit: Option<f64>,
    },
    /// An MCP server asks the user something during a tool call (`elicitation/create`): answer
    /// with `elicitation/respond` (accept with the answers, decline, cancel); the first answer
    /// wins. Persisted before it is announced. With nobody who answers it is declined at once.
    /// Added in 1.3.
    #[serde(rename_all = "camelCase")]
    ElicitationRequested {
        run_id: String,
        request: crate::elicitation::ElicitationRequest,
    },
    /// A server's question was answered, as the server was told. `decidedBy` is
    /// `client:<name>`, `mode` (nobody who answers followed: declined), `timeout`, `cancel`
    /// (the run was cancelled) or `restart` (the daemon stopped while it was pending).
    /// Added in 1.3.
    #[serde(rename_all = "camelCase")]
    ElicitationResolved {
        run_id: String,
        elicitation_id: String,
        action: crate::elicitation::ElicitationAction,
        decided_by: String,
        /// For `accept`: the answers the server was sent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<serde_json::Map<String, serde_json::Value>>,
        /// Why it was declined or cancelled without a person's answer (also sent to the
        /// server, in the result's `_meta.reason`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A follow-up (or a prompt sent with `queueIfBusy`) was queued for the active run. It is
    /// delivered as a `messageCompleted` of kind `followUp`, or reported by a `warning` when
    /// the run ends without delivering it.
    #[serde(rename_all = "camelCase")]
    FollowUpQueued {
        run_id: String,
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        client_request_id: Option<String>,
        /// Who queued it when it is not the user's words: `taskNotification` (a background
        /// task ended; the text is a `<task-notification>` block). Absent: a client.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        origin: Option<FollowUpOrigin>,
    },
    /// A steering message was queued for the active run. It is delivered as a
    /// `steerDelivered` (after the current tool batch), or reported by a `warning` when the run
    /// ends without delivering it, also when a crash ended the run.
    #[serde(rename_all = "camelCase")]
    SteerQueued { run_id: String, text: String },
    /// A steering message was delivered to the model.
    #[serde(rename_all = "camelCase")]
    SteerDelivered { run_id: String, text: String },
    /// The model replaced the session's todo list (`todo_write`): the whole list, in order.
    #[serde(rename_all = "camelCase")]
    TodoUpdated {
        run_id: String,
        items: Vec<crate::todo::TodoItem>,
    },
    /// The tools offered to the model differ from the session's previous model call (an MCP
    /// server became ready or was lost, or changed its tool list): the request's tools, part
    /// of its cached prefix, change from this step on. Tool names, sorted.
    #[serde(rename_all = "camelCase")]
    ToolsChanged {
        run_id: String,
        added: Vec<String>,
        removed: Vec<String>,
        /// Offered before and now, with another description or input schema.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        changed: Vec<String>,
        /// The session's first model call since it was loaded, compared with the built-ins:
        /// the tools the session starts with (its MCP servers' and extensions'), which a
        /// client need not announce as a change.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        initial: bool,
        /// MCP tools loaded since the previous model call by a tool search (`search_tools`,
        /// or a first call of the tool), sorted: the session keeps them offered from now on,
        /// across restarts. Each is in `added` too while its server offers it. Added in 1.3.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        loaded: Vec<String>,
    },
    #[serde(rename_all = "camelCase")]
    UsageUpdated {
        run_id: String,
        /// This model call.
        usage: Usage,
        /// The session so far.
        total: Usage,
        /// The model's context window in tokens, as the daemon manages the context (its
        /// `inputTokens` + `outputTokens` is what this call filled of it). Added in 1.1.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_window: Option<u64>,
        /// What the session's priced calls have cost so far, in US dollars (calls of models
        /// without `[providers.NAME.prices]` count nothing); absent when none was priced.
        /// Added in 1.1.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total_cost_usd: Option<f64>,
    },
    #[serde(rename_all = "camelCase")]
    Warning { message: String },
    /// The daemon recorded the state of the workspace's files (a checkpoint of its private
    /// store; only when it differs from the session's previous one). Added in 1.3.
    #[serde(rename_all = "camelCase")]
    Checkpointed {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<String>,
        checkpoint: String,
        reason: crate::checkpoint::CheckpointReason,
        /// Paths left out (too large, a repository of their own), at most 20.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        skipped: Vec<String>,
    },
    /// `session/rewind` restored the workspace's files to `checkpoint`. Added in 1.3.
    #[serde(rename_all = "camelCase")]
    Rewound {
        checkpoint: String,
        restored: u32,
        deleted: u32,
        /// `session/rewind {toSeq: undoSeq}` undoes it.
        undo_seq: u64,
    },
    /// The daemon began summarising the older history (the hard context limit was reached,
    /// the provider said the prompt is too long, or `session/compact`). Followed by
    /// `compactionCompleted`, or by a `warning` when the summary failed (the history is kept).
    #[serde(rename_all = "camelCase")]
    CompactionStarted {
        /// The run that needed it; absent for `session/compact`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<String>,
    },
    /// The older history was replaced by a summary in what the model is sent from now on (the
    /// session log and `session/get` still hold every message).
    #[serde(rename_all = "camelCase")]
    CompactionCompleted {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<String>,
        /// Prompt tokens of the last request before the compaction.
        tokens_before: u64,
        /// Estimated prompt tokens of the compacted context (scaled by its size in bytes).
        tokens_after: u64,
    },
    #[serde(rename_all = "camelCase")]
    Error {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<String>,
        message: String,
        /// True when the daemon retries on its own (LLM retries).
        will_retry: bool,
    },
    #[serde(rename_all = "camelCase")]
    RunFinished {
        run_id: String,
        status: RunStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Tokens used by this run.
        usage: Usage,
        /// What those tokens cost in US dollars, when prices are configured for the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// An MCP server's status changed. Sent on `daemon/subscribe` (not persisted there: its
    /// `sessionId` is `""` and its `seq` 0) and on every session that uses the server
    /// (persisted in its log).
    #[serde(rename_all = "camelCase")]
    McpServerStatus {
        /// The server's name (its key in the configuration).
        server: String,
        /// `starting`, `ready`, `failed`, `restarting` or `stopped`.
        status: crate::mcp::McpServerState,
        /// The project root it runs for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        project_root: Option<String>,
        /// The count of its tools (`ready`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tools: Option<u64>,
        /// Why it failed or is restarting.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The last lines it wrote on stderr (`failed`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stderr_tail: Option<String>,
        /// Which restart this is, from 1 (`restarting`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u32>,
    },
    /// A task started by this session (or, on `daemon/subscribe`, any task) was created:
    /// status `pending`, or `running` at once. On the parent session's stream (persisted) and
    /// on the daemon stream (not persisted there).
    #[serde(rename_all = "camelCase")]
    TaskStarted { task: Box<crate::task::TaskInfo> },
    /// A task's record changed (it started running, its usage grew), same streams.
    #[serde(rename_all = "camelCase")]
    TaskUpdated { task: Box<crate::task::TaskInfo> },
    /// A task ended: `completed`, `failed` or `cancelled`, same streams.
    #[serde(rename_all = "camelCase")]
    TaskFinished { task: Box<crate::task::TaskInfo> },
    /// A background subagent task that was running when the daemon stopped (a restart or a
    /// crash) goes on: its record went `interrupted` at the start and is `running` again, its
    /// child session's run resumes (`runResumed` in the child's log). Same streams. Added in 1.3.
    #[serde(rename_all = "camelCase")]
    TaskResumed { task: Box<crate::task::TaskInfo> },
    /// A hook (a command from the user's config, a trusted project's settings or a subagent's
    /// definition) started at `event` (Claude Code's name: `PreToolUse`, `Stop`, …).
    #[serde(rename_all = "camelCase")]
    HookStarted {
        /// The run it belongs to; absent at a session's start or end.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<String>,
        event: String,
        /// The command line, on one line, cut at 200 characters.
        command: String,
    },
    /// A hook ended. `outcome`: `success`, `blocked` (it blocked or denied what it was asked
    /// about), `error` (it failed or printed junk: a warning, the action went on) or
    /// `timeout` (killed with everything it started).
    #[serde(rename_all = "camelCase")]
    HookCompleted {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_id: Option<String>,
        event: String,
        command: String,
        duration_ms: u64,
        outcome: String,
        /// Why it blocked, or what went wrong.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// This subscriber fell behind and missed events; the daemon replays persisted events
    /// after `seq` next (deltas are lost).
    Lagged {},
    /// The session was idle and is unloaded from memory; its next request loads it again.
    /// Daemon stream only, not persisted (it carries the session's last seq).
    SessionUnloaded {},
    /// config.toml was read again (`trigger`: `watch`, `signal` or `request`) and a new
    /// configuration is in use for new runs and new MCP starts (also sent when the file went
    /// back to the configuration in use after an invalid edit). Daemon stream only, not
    /// persisted. Added in 1.3.
    #[serde(rename_all = "camelCase")]
    ConfigReloaded {
        path: String,
        trigger: String,
        /// Settings that changed but apply only when the daemon restarts.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        needs_restart: Vec<String>,
    },
    /// config.toml was read again and does not load; the previous configuration stays in
    /// use. Daemon stream only, not persisted. Added in 1.3.
    #[serde(rename_all = "camelCase")]
    ConfigInvalid {
        path: String,
        trigger: String,
        /// file:line:col and the reason.
        error: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum MessageRole {
    User,
    Assistant,
}

impl Event {
    /// Whether the event is written to the session log (and replayed).
    pub fn is_persisted(&self) -> bool {
        !matches!(
            self,
            Event::MessageDelta { .. }
                | Event::ThinkingDelta { .. }
                | Event::Lagged {}
                | Event::SessionUnloaded {}
                | Event::ConfigReloaded { .. }
                | Event::ConfigInvalid { .. }
        )
    }

    /// The run the event belongs to, if any.
    pub fn run_id(&self) -> Option<&str> {
        match self {
            Event::RunStarted { run_id, .. }
            | Event::RunResumed { run_id, .. }
            | Event::RunSuspended { run_id, .. }
            | Event::TurnStarted { run_id, .. }
            | Event::MessageDelta { run_id, .. }
            | Event::ThinkingDelta { run_id, .. }
            | Event::MessageCompleted { run_id, .. }
            | Event::ToolStarted { run_id, .. }
            | Event::ToolProgress { run_id, .. }
            | Event::ToolCompleted { run_id, .. }
            | Event::SteerDelivered { run_id, .. }
            | Event::SteerQueued { run_id, .. }
            | Event::FollowUpQueued { run_id, .. }
            | Event::ApprovalRequested { run_id, .. }
            | Event::ApprovalResolved { run_id, .. }
            | Event::BudgetExceeded { run_id, .. }
            | Event::BudgetResolved { run_id, .. }
            | Event::ElicitationRequested { run_id, .. }
            | Event::ElicitationResolved { run_id, .. }
            | Event::UsageUpdated { run_id, .. }
            | Event::TodoUpdated { run_id, .. }
            | Event::ToolsChanged { run_id, .. }
            | Event::RunFinished { run_id, .. } => Some(run_id),
            Event::Error { run_id, .. }
            | Event::HookStarted { run_id, .. }
            | Event::HookCompleted { run_id, .. }
            | Event::CompactionStarted { run_id }
            | Event::Checkpointed { run_id, .. }
            | Event::CompactionCompleted { run_id, .. } => run_id.as_deref(),
            Event::SessionCreated { .. }
            | Event::SessionDeleted {}
            | Event::SessionUpdated { .. }
            | Event::Warning { .. }
            | Event::Rewound { .. }
            | Event::McpServerStatus { .. }
            | Event::TaskStarted { .. }
            | Event::TaskUpdated { .. }
            | Event::TaskFinished { .. }
            | Event::TaskResumed { .. }
            | Event::Lagged {}
            | Event::SessionUnloaded {}
            | Event::ConfigReloaded { .. }
            | Event::ConfigInvalid { .. } => None,
        }
    }
}
