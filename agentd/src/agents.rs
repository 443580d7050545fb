//! Subagent definitions: Markdown with a frontmatter (`crate::frontmatter`), from
//! `.agents/agents/*.md` and `.claude/agents/*.md` (the project, from the cwd up to the git
//! root) and `$XDG_CONFIG_HOME/agentd/agents/*.md` (the user's); the project wins. Built-ins:
//! `general-purpose` (the default) and `explore` (read-only tools). A file that cannot be used
//! is a problem `agents/list` shows, never fatal.
//!
//! SKELETON: the API the task work builds on; bodies are filled in by the definitions work.

use std::path::{Path, PathBuf};

/// The default agent type.
pub const GENERAL_PURPOSE: &str = "general-purpose";
/// The read-only built-in.
pub const EXPLORE: &str = "explore";

/// Tools a subagent never gets, whatever its definition lists (no recursion, no writes to
/// shared state): `task`, every `task_*` tool, `memory`, `todo_write`.
pub fn never_for_subagents(tool: &str) -> bool {
    tool == "task" || tool.starts_with("task_") || tool == "memory" || tool == "todo_write"
}

/// Where a definition came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentSource {
    BuiltIn,
    Project(PathBuf),
    User(PathBuf),
}

/// One subagent definition.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentDefinition {
    pub name: String,
    pub description: String,
    /// The whole system prompt of the child.
    pub body: String,
    /// Only these tools (None: the parent's, minus the excluded ones).
    pub tools: Option<Vec<String>>,
    pub disallowed_tools: Vec<String>,
    /// Skills whose catalogue the child's prompt carries.
    pub skills: Vec<String>,
    /// None or `inherit`: the parent's model.
    pub model: Option<String>,
    pub max_turns: Option<u32>,
    pub max_budget_usd: Option<f64>,
    /// A permission mode name (None: the parent's).
    pub permission_mode: Option<String>,
    /// Runs in the background unless the call says otherwise.
    pub background: bool,
    /// Only read-only tools (may run in parallel with other read-only agents).
    pub read_only: bool,
    pub source: AgentSource,
}

/// A definition file that could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentProblem {
    pub path: PathBuf,
    pub reason: String,
}

/// The agents of a cwd: built-ins, then the project's and the user's, by name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentCatalogue {
    pub agents: Vec<AgentDefinition>,
    pub problems: Vec<AgentProblem>,
}

impl AgentCatalogue {
    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.agents.iter().find(|agent| agent.name == name)
    }

    /// The names, for an "unknown agent type" error.
    pub fn names(&self) -> Vec<&str> {
        self.agents
            .iter()
            .map(|agent| agent.name.as_str())
            .collect()
    }
}

/// The agents for a session in `cwd` (`user_dir`: `$XDG_CONFIG_HOME/agentd/agents`).
/// Blocking: reads files.
pub fn discover(cwd: &Path, user_dir: Option<&Path>) -> AgentCatalogue {
    let _ = (cwd, user_dir);
    AgentCatalogue::default()
}
