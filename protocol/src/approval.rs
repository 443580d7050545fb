//! Params and results of the approval methods (`approval/list`, `approval/respond`) and the
//! permission modes a session runs in.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a session decides tool calls that have side effects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PermissionMode {
    /// Read-only tools run; writes, shell, network and MCP tools ask.
    #[default]
    Default,
    /// File edits inside the workspace run without asking; the rest as `default`.
    AcceptEdits,
    /// Read-only tools only; everything else is denied with a message to the model.
    Plan,
    /// Everything runs, except what the hard limits forbid.
    #[serde(alias = "bypassPermissions")]
    Bypass,
}

impl PermissionMode {
    pub const ALL: [PermissionMode; 4] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::Bypass,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::Bypass => "bypass",
        }
    }
}

/// Permission rules in Claude Code's syntax (`Bash(npm run test:*)`, `Read(./secrets/**)`,
/// `mcp__github__*`), for one session. Deny wins over ask over allow, across every layer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRules {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ask: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

impl PermissionRules {
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.ask.is_empty() && self.deny.is_empty()
    }
}

/// An answer to an approval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ApprovalDecision {
    /// Run this call.
    AllowOnce,
    /// Run this call and, for the rest of the session, calls with the same tool and specifier
    /// (command prefix or path).
    AllowSession,
    /// Run this call and add an allow rule to the user config.
    AllowAlways,
    /// Do not run it; the model is told the user denied it (with the reason) and goes on.
    Deny,
    /// Do not run it and cancel the run.
    DenyAndCancel,
    /// Do not run it, and add a deny rule to the user config (the rule `allowAlways` would
    /// have added, as a deny rule): such calls are refused from now on without asking.
    DenyAlways,
}

impl ApprovalDecision {
    pub fn allows(self) -> bool {
        matches!(
            self,
            ApprovalDecision::AllowOnce
                | ApprovalDecision::AllowSession
                | ApprovalDecision::AllowAlways
        )
    }
}

/// A tool call waiting for a person.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingApproval {
    pub approval_id: String,
    pub session_id: String,
    pub run_id: String,
    pub tool_call_id: String,
    pub tool: String,
    /// One line: the command, the path, the URL.
    pub summary: String,
    /// The tool's arguments as the model sent them.
    pub input: serde_json::Value,
    /// Why it needs approval (mode, rule).
    pub reason: String,
    /// The decisions a client may send; `allowAlways` is absent when no safe rule exists.
    pub options: Vec<ApprovalDecision>,
    pub requested_at: String,
    /// When it resolves to `deny` by itself.
    pub expires_at: String,
    /// Asked by a subagent: its task (the approval also reaches the parent session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Asked by a subagent: its agent type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// Asked by a subagent the `task` tool started: the parent session's run whose call
    /// started it, so the client answering that run answers its children too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// What `allowSession` would allow for the rest of the session (tool + specifier, as
    /// `approvalResolved.sessionRule` says it afterwards), so a client can show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_rule: Option<String>,
    /// The rule `allowAlways` would add to the user config; absent when it is not offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub always_rule: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalListParams {
    /// Only this session's approvals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalListResult {
    /// Oldest first.
    pub approvals: Vec<PendingApproval>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRespondParams {
    pub approval_id: String,
    pub decision: ApprovalDecision,
    /// Shown to the model with a denial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Set when a standing policy of the client answered, not a person (agentctl's
    /// `--approve never|edits|all`): its name, e.g. `--approve never`. The decision is then
    /// recorded as `decidedBy: "policy:<client>"` and the model is told a policy decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRespondResult {
    pub approval_id: String,
    pub decision: ApprovalDecision,
    /// For `allowAlways`: the rule appended to the user config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_added: Option<String>,
}
