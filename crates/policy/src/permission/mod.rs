//! Permissions: the policy engine deciding whether a tool call runs, asks the user, or is
//! refused. Pure logic: no tokio, no I/O but path resolution (symlinks) and reading settings
//! files. The approval broker and the agent loop call into it; they own asking and waiting.
//!
//! [`Policy::evaluate`] decides in this order, the first step that decides wins:
//! 1. hard limits, never lifted by rules, modes or hooks: file tools stay inside the workspace
//!    (paths resolved through `..` and symlinks, [`agentd_core::workspace::resolve_in_workspace`]);
//!    protected paths ([`agentd_core::workspace::protected_component`]: `.git` (hooks and config
//!    included), `.agents`, `.claude` and `.mcp.json` at any depth, `skills/` at the root,
//!    existing or not) are not written by `write_file` / `edit_file` (which check both again on
//!    the path they really open); shell commands on the destructive list
//!    ([`destructive_reason`]) are refused;
//! 2. deny rules of every layer → [`Decision::Deny`];
//! 3. plan mode: tools that are not read-only → [`Decision::Deny`], telling the model it plans;
//! 4. a write of a notes file (`AGENTS.md`, `CLAUDE.md`, [`agentd_core::workspace::notes_file`]) →
//!    [`Decision::Ask`] naming it, in every mode and whatever allow rule or session answer
//!    covers it; its approval offers only "allow once" ([`asks_every_time`]);
//! 5. ask rules of every layer → [`Decision::Ask`];
//! 6. allow rules and "allow for session" keys → [`Decision::Allow`]; a shell command is allowed
//!    only if every part ([`split_shell_command`]) is allowed (or an exact rule names the whole
//!    line), while a deny or ask rule matching any part applies;
//! 7. the mode's default (see [`PermissionMode`]).
//!
//! The gate decides a `grep`, `glob` or `list_dir` call on the path it names; the deny rules
//! for reading ([`ReadWithholdRules`]) then decide each path the tool finds below it.
//!
//! Rules come in Claude Code's syntax ([`Rule`]); layers (user config.toml < project
//! `.agents/settings.*` < session) are merged with [`RuleSet::merge`], so a deny or ask of any
//! layer stays in force.

mod destructive;
mod notes;
mod operands;
mod policy;
mod read_rules;
mod redirect;
mod rule;
mod script_runs;
mod settings;
mod shell;
mod subject;
mod wrapper;

use std::fmt;
use std::path::Path;
use std::str::FromStr;

pub(crate) use destructive::destructive_reason;
pub use notes::asks_every_time;
pub use policy::{Policy, RuleKey, always_allow_rule, session_key};
pub use read_rules::{ReadRules, ReadWithholdRules};
pub(crate) use rule::RuleEntry;
pub use rule::{Rule, RuleError, RuleLayer, RuleList, RuleSet, RuleSource};
pub use settings::{
    ProjectSettings, ProjectSettingsTexts, SettingsError, TomlPermissions, WithheldSettings,
    load_project_settings, parse_settings_text, read_project_settings,
};
pub(crate) use shell::split_shell_command;

/// How much runs without asking. Hard limits and deny rules apply in every mode.
///
/// | tool kind                                  | default | acceptEdits | plan  | bypass |
/// |--------------------------------------------|---------|-------------|-------|--------|
/// | read-only (read, list, glob, grep, todos…) | allow   | allow       | allow | allow  |
/// | file edits (write_file, edit_file)         | ask     | allow       | deny  | allow  |
/// | shell (run_shell)                          | ask     | ask         | deny  | allow  |
/// | network (fetch_url; read-only)             | ask     | ask         | ask   | allow  |
/// | MCP tool with readOnlyHint                 | allow   | allow       | allow | allow  |
/// | MCP tool, other writing tools              | ask     | ask         | deny  | allow  |
/// | daemon stores (memory)                     | allow   | allow       | deny  | allow  |
///
/// Allow rules lift an "ask" (not a plan-mode deny); ask rules turn an "allow" into an ask, in
/// bypass mode too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PermissionMode {
    #[default]
    Default,
    AcceptEdits,
    Plan,
    Bypass,
}

/// A tool call to decide on.
#[derive(Clone, Copy, Debug)]
pub struct ToolRequest<'a> {
    /// Our tool name (`run_shell`, `read_file`, `mcp__github__create_issue`).
    pub tool: &'a str,
    pub input: &'a serde_json::Value,
    /// `tools::Tool::read_only`; for MCP tools the server's `readOnlyHint`.
    pub read_only: bool,
    /// The session's canonical workspace root.
    pub workspace: &'a Path,
}

/// What to do with a tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run it. The reason names the rule or mode that allowed it, if any (for logs and UIs).
    Allow { reason: Option<String> },
    /// Ask the user first; the reason is shown to them.
    Ask { reason: String },
    /// Refuse; the reason is shown to the user and returned to the model as the tool result.
    Deny { reason: String },
}

/// What a tool does, for the mode table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolKind {
    /// Observes local state only, or is daemon bookkeeping (`todo_write`, `load_skill`, tasks).
    ReadOnly,
    /// `write_file`, `edit_file`: changes files inside the workspace.
    FileEdit,
    Shell,
    /// `fetch_url`: read-only but reaches the network.
    Network,
    /// An MCP tool (`read_only`: the server's `readOnlyHint`) or an extension's tool
    /// (`read_only`: its `readOnly`).
    Mcp {
        read_only: bool,
    },
    /// Any other tool that changes something.
    Write,
    /// Changes only the daemon's own stores, never the workspace or the outside world
    /// (`memory`): runs without asking, but plan mode refuses it like every write.
    DaemonStore,
}

/// Tools that only keep the daemon's own bookkeeping (or spawn subagents, whose calls are
/// checked on their own), so they run like read-only tools.
pub(crate) const INTERNAL_TOOLS: &[&str] = &[
    "todo_write",
    "load_skill",
    "search_tools",
    "task",
    "task_list",
    "task_get",
    "task_output",
    "task_stop",
];

/// Tools that write only the daemon's own stores ([`ToolKind::DaemonStore`]).
pub(crate) const DAEMON_STORE_TOOLS: &[&str] = &["memory"];

impl PermissionMode {
    /// How much a mode lets happen without asking: plan < default < acceptEdits < bypass.
    fn latitude(self) -> u8 {
        match self {
            PermissionMode::Plan => 0,
            PermissionMode::Default => 1,
            PermissionMode::AcceptEdits => 2,
            PermissionMode::Bypass => 3,
        }
    }

    /// Whether this mode lets more happen without asking than `other` (an untrusted project
    /// may choose a stricter mode than the user's, never a looser one).
    pub fn loosens(self, other: PermissionMode) -> bool {
        self.latitude() > other.latitude()
    }

    /// The canonical spelling (`default`, `acceptEdits`, `plan`, `bypass`).
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::Bypass => "bypass",
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PermissionMode {
    type Err = String;

    /// Accepts `default`, `acceptEdits`, `plan`, `bypass` and Claude Code's `bypassPermissions`.
    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim() {
            "default" => Ok(PermissionMode::Default),
            "acceptEdits" => Ok(PermissionMode::AcceptEdits),
            "plan" => Ok(PermissionMode::Plan),
            "bypass" | "bypassPermissions" => Ok(PermissionMode::Bypass),
            other => Err(format!(
                "unknown permission mode {other:?}; expected default, acceptEdits, plan or bypass"
            )),
        }
    }
}

/// The mode as the wire names it (`protocol::approval::PermissionMode`), and back.
impl From<protocol::approval::PermissionMode> for PermissionMode {
    fn from(mode: protocol::approval::PermissionMode) -> Self {
        match mode {
            protocol::approval::PermissionMode::Default => PermissionMode::Default,
            protocol::approval::PermissionMode::AcceptEdits => PermissionMode::AcceptEdits,
            protocol::approval::PermissionMode::Plan => PermissionMode::Plan,
            protocol::approval::PermissionMode::Bypass => PermissionMode::Bypass,
        }
    }
}

impl From<PermissionMode> for protocol::approval::PermissionMode {
    fn from(mode: PermissionMode) -> Self {
        match mode {
            PermissionMode::Default => protocol::approval::PermissionMode::Default,
            PermissionMode::AcceptEdits => protocol::approval::PermissionMode::AcceptEdits,
            PermissionMode::Plan => protocol::approval::PermissionMode::Plan,
            PermissionMode::Bypass => protocol::approval::PermissionMode::Bypass,
        }
    }
}

impl ToolKind {
    /// The kind of `tool`, given its `read_only` declaration.
    pub fn of(tool: &str, read_only: bool) -> ToolKind {
        match tool {
            "run_shell" => ToolKind::Shell,
            "fetch_url" => ToolKind::Network,
            "write_file" | "edit_file" => ToolKind::FileEdit,
            // An extension's tool is judged like an MCP tool: `read_only` is its declaration.
            _ if tool.starts_with("mcp__") || tool.starts_with("ext__") => {
                ToolKind::Mcp { read_only }
            }
            _ if read_only || INTERNAL_TOOLS.contains(&tool) => ToolKind::ReadOnly,
            _ if DAEMON_STORE_TOOLS.contains(&tool) => ToolKind::DaemonStore,
            _ => ToolKind::Write,
        }
    }

    /// Whether the tool may run at all in plan mode.
    pub(crate) fn allowed_in_plan(self) -> bool {
        matches!(
            self,
            ToolKind::ReadOnly | ToolKind::Network | ToolKind::Mcp { read_only: true }
        )
    }
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod shell_tests;

#[cfg(test)]
#[path = "rule_tests.rs"]
mod rule_tests;

#[cfg(test)]
#[path = "policy_tests.rs"]
mod policy_tests;

#[cfg(test)]
#[path = "policy_protected_tests.rs"]
mod policy_protected_tests;

#[cfg(test)]
#[path = "policy_mcp_tests.rs"]
mod policy_mcp_tests;

#[cfg(test)]
#[path = "settings_tests.rs"]
mod settings_tests;

#[cfg(test)]
#[path = "read_rules_tests.rs"]
mod read_rules_tests;

#[cfg(test)]
#[path = "redirect_tests.rs"]
mod redirect_tests;

#[cfg(test)]
#[path = "shell_corpus_tests.rs"]
mod shell_corpus_tests;

#[cfg(test)]
#[path = "destructive_corpus_tests.rs"]
mod destructive_corpus_tests;
