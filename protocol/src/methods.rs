//! The one list of every method: its wire name, params type and result type.

use schemars::JsonSchema;
use serde::{Serialize, de::DeserializeOwned};

use crate::agents::*;
use crate::approval::*;
use crate::budget::*;
use crate::checkpoint::*;
use crate::commands::*;
use crate::daemon::*;
use crate::elicitation::*;
use crate::extension::*;
use crate::mcp::*;
use crate::memory::*;
use crate::project::*;
use crate::session::*;
use crate::skills::*;
use crate::task::*;

/// A JSON-RPC method of the agentd protocol.
pub trait Method {
    /// The wire name, `resource/verb`.
    const NAME: &'static str;
    /// What the client sends; its JSON Schema describes what the daemon reads.
    type Params: Serialize + DeserializeOwned + JsonSchema;
    /// What the daemon answers; its JSON Schema describes what the daemon writes.
    type Result: Serialize + DeserializeOwned + JsonSchema;
}

macro_rules! methods {
    ($( $(#[$doc:meta])* $ty:ident = $name:literal : $params:ty => $result:ty; )*) => {
        $(
            $(#[$doc])*
            pub struct $ty;
            impl Method for $ty {
                const NAME: &'static str = $name;
                type Params = $params;
                type Result = $result;
            }
        )*
        /// Every method name, in the order of this list.
        pub const ALL: &[&str] = &[$($name),*];
        /// The schema documents of every method (params and result), in the order of `ALL`.
        pub(crate) const SCHEMAS: &[fn() -> [crate::schema::SchemaDocument; 2]] =
            &[$(crate::schema::method_documents::<$ty>),*];
    };
}

methods! {
    /// Handshake; must be the first call on a connection.
    Initialize = "initialize": InitializeParams => InitializeResult;
    /// Version, pid, uptime, paths, counts and connected clients.
    DaemonStatus = "daemon/status": DaemonStatusParams => DaemonStatusResult;
    /// Graceful stop: stop accepting, finish in-flight requests, remove the socket, exit 0.
    DaemonShutdown = "daemon/shutdown": DaemonShutdownParams => DaemonShutdownResult;
    /// Read config.toml again now (the daemon also watches it and reloads on SIGHUP).
    DaemonReload = "daemon/reload": DaemonReloadParams => DaemonReloadResult;
    /// Lifecycle events of every session (created, deleted, run started/finished), as
    /// `daemon/event` notifications, until `daemon/unsubscribe`.
    DaemonSubscribe = "daemon/subscribe": DaemonSubscribeParams => DaemonSubscribeResult;
    /// End a `daemon/subscribe` subscription of this connection.
    DaemonUnsubscribe = "daemon/unsubscribe": DaemonUnsubscribeParams => DaemonUnsubscribeResult;
    /// New session in a workspace directory.
    SessionCreate = "session/create": SessionCreateParams => SessionCreateResult;
    /// Every session, newest first, paginated.
    SessionList = "session/list": SessionListParams => SessionListResult;
    /// One session, optionally with its history and queued messages.
    SessionGet = "session/get": SessionGetParams => SessionGetResult;
    /// Delete a session and its log (cancels its run first).
    SessionDelete = "session/delete": SessionDeleteParams => SessionDeleteResult;
    /// Start a run; acknowledges at once with the run id, the outcome arrives as events.
    SessionPrompt = "session/prompt": SessionPromptParams => SessionPromptResult;
    /// Deliver a message after the current tool batch, skipping the batch's unstarted calls.
    SessionSteer = "session/steer": SessionSteerParams => SessionSteerResult;
    /// Deliver a message when the run would otherwise end (starts a run when idle).
    SessionFollowUp = "session/followUp": SessionFollowUpParams => SessionFollowUpResult;
    /// Cancel the active run; it ends with `runFinished{status:"cancelled"}`.
    SessionCancel = "session/cancel": SessionCancelParams => SessionCancelResult;
    /// Summarise the older history now (refused while a run is active).
    SessionCompact = "session/compact": SessionCompactParams => SessionCompactResult;
    /// Replay persisted events after `afterSeq`, then live events, as `session/event`
    /// notifications, until `session/unsubscribe`.
    SessionSubscribe = "session/subscribe": SessionSubscribeParams => SessionSubscribeResult;
    /// End a `session/subscribe` subscription of this connection.
    SessionUnsubscribe = "session/unsubscribe": SessionUnsubscribeParams => SessionUnsubscribeResult;
    /// Pending approvals (of one session, or all), oldest first.
    ApprovalList = "approval/list": ApprovalListParams => ApprovalListResult;
    /// Answer a pending approval; the first answer wins, later ones get -32008.
    ApprovalRespond = "approval/respond": ApprovalRespondParams => ApprovalRespondResult;
    /// Trust a project root, pinned to the content of its settings and `.mcp.json` (or, with
    /// `dryRun`, review what that would apply).
    ProjectTrust = "project/trust": ProjectTrustParams => ProjectTrustResult;
    /// Stop trusting a project root: only its deny and ask rules apply again.
    ProjectUntrust = "project/untrust": ProjectUntrustParams => ProjectUntrustResult;
    /// Every trusted project root.
    ProjectList = "project/list": ProjectListParams => ProjectListResult;
    /// The curated memory stores sessions in a directory use, with entries and usage.
    MemoryGet = "memory/get": MemoryGetParams => MemoryGetResult;
    /// The skills a session in a directory is offered, and the ones skipped with why.
    SkillsList = "skills/list": SkillsListParams => SkillsListResult;
    /// The subagents a session in a directory can delegate to, and the files not used.
    AgentsList = "agents/list": AgentsListParams => AgentsListResult;
    /// The MCP servers the daemon runs, and with `cwd` those configured there, with problems.
    McpList = "mcp/list": McpListParams => McpListResult;
    /// Restart an MCP server now (also a failed one), resetting its restart count.
    McpRestart = "mcp/restart": McpRestartParams => McpRestartResult;
    /// Start an OAuth login to an HTTP MCP server: the URL to open, the daemon waiting for the
    /// browser's redirect on a loopback port.
    McpLogin = "mcp/login": McpLoginParams => McpLoginResult;
    /// Where a login is, waiting a bounded while for it to finish.
    McpLoginStatus = "mcp/loginStatus": McpLoginStatusParams => McpLoginStatusResult;
    /// Delete an HTTP MCP server's OAuth token; its connections need a login again.
    McpLogout = "mcp/logout": McpLogoutParams => McpLogoutResult;
    /// Tasks (of one session, or all), newest first; by default only pending and running ones.
    TaskList = "task/list": TaskListParams => TaskListResult;
    /// One task, with a hint of what to do next (e.g. how to resume an interrupted one).
    TaskGet = "task/get": TaskGetParams => TaskGetResult;
    /// A task's output from a byte offset: a shell's output, a subagent's final message.
    TaskOutput = "task/output": TaskOutputParams => TaskOutputResult;
    /// Deliver a message to a running subagent before its next model call.
    TaskSteer = "task/steer": TaskSteerParams => TaskSteerResult;
    /// Deliver a message to a subagent when its run would otherwise end.
    TaskFollowUp = "task/followUp": TaskFollowUpParams => TaskFollowUpResult;
    /// Stop a task: cancels a subagent's run, kills a shell's process group; it ends `cancelled`.
    TaskStop = "task/stop": TaskStopParams => TaskStopResult;
    /// Start a background subagent with no parent session.
    TaskStart = "task/start": TaskStartParams => TaskStartResult;
    /// Change a session's permission mode, model or title from its next run on.
    SessionUpdate = "session/update": SessionUpdateParams => SessionUpdateResult;
    /// Add tools, commands and event handlers to the sessions of a scope, for as long as this
    /// connection lives (needs `capabilities.extensions` in `initialize`).
    ExtensionRegister = "extension/register": ExtensionRegisterParams => ExtensionRegisterResult;
    /// The slash commands of a directory (and of a session's MCP servers), with the files
    /// that could not be used.
    CommandsList = "commands/list": CommandsListParams => CommandsListResult;
    /// Run a slash command: a built-in answers with text and no model call; a command file,
    /// a skill or an MCP prompt starts a run of its expanded prompt.
    SessionCommand = "session/command": SessionCommandParams => SessionCommandResult;
    /// Runs paused at a budget now (of one session, or all), oldest first. Added in 1.3.
    BudgetList = "budget/list": BudgetListParams => BudgetListResult;
    /// Answer a run paused at a budget: continue with a higher limit, or stop; the first
    /// answer wins, later ones get -32008. Added in 1.3.
    BudgetRespond = "budget/respond": BudgetRespondParams => BudgetRespondResult;
    /// Answer an MCP server's question (`elicitationRequested`): accept with the answers,
    /// decline or cancel; the first answer wins, later ones get -32008; answers that do not fit
    /// the requested schema are refused (-32602) and the question stays open. Added in 1.3.
    ElicitationRespond = "elicitation/respond": ElicitationRespondParams => ElicitationRespondResult;
    /// A new session whose history is another's up to a seq, with its settings and system
    /// prompt (refused inside a run). Added in 1.3.
    SessionFork = "session/fork": SessionForkParams => SessionForkResult;
    /// A session's runs as points to go back to: each with its prompt's first line, its
    /// checkpoint and how many files it changed. Added in 1.3.
    SessionCheckpoints = "session/checkpoints": SessionCheckpointsParams => SessionCheckpointsResult;
    /// What a run (or the whole session) changed in the workspace, as a unified diff from the
    /// checkpoints. Added in 1.3.
    SessionDiff = "session/diff": SessionDiffParams => SessionDiffResult;
    /// The workspace's files and/or the conversation back to a run's start or a seq: a
    /// preview, then the same call with `confirm` (refused while a run is active). Added in 1.3.
    SessionRewind = "session/rewind": SessionRewindParams => SessionRewindResult;
}

/// The unsubscribe method paired with `session/subscribe`.
pub const SESSION_UNSUBSCRIBE: &str = SessionUnsubscribe::NAME;
/// The unsubscribe method paired with `daemon/subscribe`.
pub const DAEMON_UNSUBSCRIBE: &str = DaemonUnsubscribe::NAME;
