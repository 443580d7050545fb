//! Subagent definitions: Markdown with a frontmatter (`agentd_core::frontmatter`), from
//! `.agents/agents/*.md` and `.claude/agents/*.md` (the project, from the cwd up to the git
//! root) and `$XDG_CONFIG_HOME/agentd/agents/*.md` (the user's); the nearer project file wins,
//! the project wins over the user. Built-ins: `general-purpose` (the default) and `explore`
//! (read-only tools); a file with a built-in's name replaces it. A file that cannot be used is a
//! problem `agents/list` shows, never fatal. Everything here that reads files blocks: call it on
//! the blocking pool.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::tools::ToolRegistry;

/// The default agent type: the one the task tool names when the model names none.
pub const GENERAL_PURPOSE: &str = crate::tools::DEFAULT_AGENT_TYPE;
/// The read-only built-in.
pub(crate) const EXPLORE: &str = "explore";
/// The agent directories looked for in each project directory, in this order.
pub(crate) const PROJECT_AGENT_DIRS: &[&str] = &[".agents/agents", ".claude/agents"];

/// Tools a subagent never gets, whatever its definition lists (no recursion, no writes to
/// shared state): `task`, every `task_*` tool, `memory`, `todo_write`.
pub(crate) fn never_for_subagents(tool: &str) -> bool {
    tool == "task" || tool.starts_with("task_") || tool == "memory" || tool == "todo_write"
}

/// Caps on discovery. Limits are data: each says why it exists.
#[derive(Clone, Debug)]
pub(crate) struct AgentLimits {
    /// Bytes of one definition read at most; a bigger file is a problem (its body is a whole
    /// system prompt, sent with every request of the child).
    pub(crate) max_file_bytes: usize,
    /// Agents in one catalogue; more are problems, so a repository cannot fill the parent's
    /// system prompt.
    pub(crate) max_agents: usize,
    /// Definition files read by one discovery (usable or not), so a directory full of broken
    /// files cannot make every session start slow.
    pub(crate) max_files_read: usize,
    /// Entries of one agents directory looked at, so a huge directory cannot stall discovery.
    pub(crate) max_dir_entries: usize,
    /// Characters of a description kept; longer ones are cut (the catalogue is in every
    /// request of the parent).
    pub(crate) max_description_chars: usize,
}

impl Default for AgentLimits {
    fn default() -> Self {
        Self {
            max_file_bytes: 256 * 1024,
            max_agents: 100,
            max_files_read: 300,
            max_dir_entries: 1000,
            max_description_chars: 1024,
        }
    }
}

/// Where a definition came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentSource {
    BuiltIn,
    Project(PathBuf),
    User(PathBuf),
}

impl AgentSource {
    /// The definition file (None for a built-in).
    pub fn path(&self) -> Option<&Path> {
        match self {
            AgentSource::BuiltIn => None,
            AgentSource::Project(path) | AgentSource::User(path) => Some(path),
        }
    }
}

/// One subagent definition.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentDefinition {
    pub name: String,
    pub description: String,
    /// The whole system prompt of the child.
    pub(crate) body: String,
    /// Only these tools (None: the parent's, minus the excluded ones). Claude Code's names
    /// (`Read`, `Bash`, …) are mapped to ours.
    pub tools: Option<Vec<String>>,
    pub(crate) disallowed_tools: Vec<String>,
    /// Skills whose catalogue the child's prompt carries.
    pub(crate) skills: Vec<String>,
    /// None or `inherit`: the parent's model. Otherwise kept as written (a profile or an alias
    /// like `sonnet`), resolved by whoever starts the child.
    pub model: Option<String>,
    pub max_turns: Option<u32>,
    pub max_budget_usd: Option<f64>,
    /// Tokens (input plus output) one run of the agent may use (`maxTokens`). None: no limit.
    pub max_tokens: Option<u64>,
    /// A permission mode name of ours (None: the parent's); the reference's names are mapped
    /// (`alwaysConfirm` → `default`, `confirmRisky` → `acceptEdits`, `neverConfirm` → `bypass`).
    pub permission_mode: Option<String>,
    /// `mcpServers`: the servers a child run as this agent gets instead of its parent's
    /// (None: the parent's).
    pub mcp_servers: Option<AgentMcpServers>,
    /// `hooks` as written: Claude Code's hooks shape as a JSON text (the frontmatter holds no
    /// nested mappings), active while this subagent runs (`agentd_agent::hooks`).
    pub hooks: Option<String>,
    /// The trust digest (`agentd_policy::trust::digest`) of the file text `hooks` and inline
    /// `mcpServers` were read from: a project definition's hooks run, and its inline servers
    /// start, only while trust pins that content.
    pub hooks_digest: Option<String>,
    /// Runs in the background unless the call says otherwise.
    pub background: bool,
    /// Only read-only tools (may run in parallel with other read-only agents).
    pub read_only: bool,
    /// What of the file is not used (a key agentd does not read, a bad `mcpServers` item):
    /// the definition is used without it.
    pub warnings: Vec<String>,
    pub source: AgentSource,
}

/// A definition's `mcpServers`, Claude Code's shape: a list whose items name a server (of the
/// user's config.toml, the project's `.mcp.json` or the parent's session) or define one
/// (a JSON object `{"name": {"command": …}}` in one item, as the frontmatter holds no nested
/// mappings), or one JSON object of servers by name (the `.mcp.json` shape).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentMcpServers {
    /// Servers named, in the order written.
    pub names: Vec<String>,
    /// Servers defined in the file, by name, as written (the `.mcp.json` entry shape).
    pub inline: serde_json::Map<String, serde_json::Value>,
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
    pub(crate) fn names(&self) -> Vec<&str> {
        self.agents
            .iter()
            .map(|agent| agent.name.as_str())
            .collect()
    }

    /// The error for an unknown agent type: lowercase, listing the available ones.
    pub fn unknown(&self, name: &str) -> String {
        format!(
            "no agent named `{name}`; available agents: {}",
            self.names().join(", ")
        )
    }
}

/// Which tools a session run as an agent keeps: frozen in the session header at creation, so
/// the child's tools do not change when its definition file does.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolFilter {
    /// Only these names (None: every tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) allow: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) deny: Vec<String>,
    /// Only tools that declare themselves read-only (built-in or MCP).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) read_only: bool,
    /// MCP servers whose tools `allow` also lets through: the ones the definition's
    /// `mcpServers` gives it, whose tools its `tools` need not list one by one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) allow_servers: Vec<String>,
}

impl ToolFilter {
    pub fn of(definition: &AgentDefinition) -> Self {
        let allow_servers = match (&definition.tools, &definition.mcp_servers) {
            (Some(_), Some(servers)) => servers
                .names
                .iter()
                .chain(servers.inline.keys())
                .cloned()
                .collect(),
            _ => Vec::new(),
        };
        Self {
            allow: definition.tools.clone(),
            deny: definition.disallowed_tools.clone(),
            read_only: definition.read_only,
            allow_servers,
        }
    }

    /// Whether it keeps only read-only tools (its agent never writes: it takes a reader's slot).
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Whether tool `name` (read-only or not, of MCP server `server` or none) is kept;
    /// `never_for_subagents` always applies. An `allow` entry ending in `*` (`mcp__github__*`)
    /// keeps the names it starts.
    pub(crate) fn allows(&self, name: &str, read_only: bool, server: Option<&str>) -> bool {
        let listed = |pattern: &String| match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => pattern == name,
        };
        !never_for_subagents(name)
            && !self.deny.iter().any(listed)
            && (!self.read_only || read_only)
            && self.allow.as_ref().is_none_or(|allow| {
                allow.iter().any(listed)
                    || server.is_some_and(|server| self.allow_servers.iter().any(|s| s == server))
            })
    }

    /// The tools of `registry` this filter keeps.
    pub fn apply(&self, registry: &ToolRegistry) -> ToolRegistry {
        registry
            .filtered_tools(|tool| self.allows(tool.name(), tool.read_only(), tool.mcp_server()))
    }
}

/// The tools of `registry` a child run as `definition` gets: its allow and deny lists, only
/// read-only ones for a read-only agent, never `task`, `task_*`, `memory`, `todo_write`.
#[cfg(test)]
pub(crate) fn filter_tools(definition: &AgentDefinition, registry: &ToolRegistry) -> ToolRegistry {
    ToolFilter::of(definition).apply(registry)
}

/// What a definition's `permissionMode` (`wanted`) makes of the mode it would run under: the
/// definition's when it is a known mode not looser than `base` (a definition, maybe a
/// project's, may tighten, never loosen), `base` when it names none or an unknown one.
/// Err: the looser mode it asked for (`base` stays; the caller says so).
pub fn mode_within(
    base: protocol::approval::PermissionMode,
    wanted: Option<&str>,
) -> Result<protocol::approval::PermissionMode, agentd_policy::permission::PermissionMode> {
    let Some(wanted) = wanted.and_then(|mode| {
        mode.parse::<agentd_policy::permission::PermissionMode>()
            .ok()
    }) else {
        return Ok(base);
    };
    if wanted.loosens(base.into()) {
        return Err(wanted);
    }
    Ok(wanted.into())
}

/// The system prompt of a session run as `definition`: its body, then `context` (the
/// environment block and the notes its parent also has, `agentd_agent::prompt::context_sections`),
/// then the catalogue of the skills it declares (those `skills` holds; an unknown name is left
/// out). Never the parent's instructions, memory or agents catalogue.
pub fn child_system_prompt(
    definition: &AgentDefinition,
    context: &str,
    skills: &agentd_knowledge::skills::Catalogue,
) -> String {
    let declared: Vec<agentd_knowledge::skills::Skill> = skills
        .skills
        .iter()
        .filter(|skill| definition.skills.contains(&skill.name))
        .cloned()
        .collect();
    let mut prompt = definition.body.trim_end().to_owned();
    prompt.push_str(context);
    prompt.push_str(&agentd_knowledge::skills::skills_section(&declared));
    prompt
}

/// The agents for a session in `cwd` (`user_dir`: `$XDG_CONFIG_HOME/agentd/agents`).
/// Blocking: reads files.
pub fn discover(cwd: &Path, user_dir: Option<&Path>) -> AgentCatalogue {
    discover_with(cwd, user_dir, &AgentLimits::default())
}

/// [`discover`] with explicit limits.
pub(crate) fn discover_with(
    cwd: &Path,
    user_dir: Option<&Path>,
    limits: &AgentLimits,
) -> AgentCatalogue {
    // Each agents directory, whether it is the project's, and what its files may lead to
    // through symlinks: the project's root, or the user's config dir (`user_dir`'s parent).
    let mut roots: Vec<(PathBuf, bool, PathBuf)> = Vec::new();
    let project_dirs = agentd_core::workspace::project_dirs(cwd);
    for dir in &project_dirs.dirs {
        let containment = project_dirs.containment_for(dir).to_path_buf();
        for sub in PROJECT_AGENT_DIRS {
            roots.push((dir.join(sub), true, containment.clone()));
        }
    }
    if let Some(user_dir) = user_dir {
        let config_dir = user_dir.parent().unwrap_or(user_dir).to_path_buf();
        roots.push((user_dir.to_path_buf(), false, config_dir));
    }
    let mut found: Vec<AgentDefinition> = Vec::new();
    let mut problems = Vec::new();
    let mut files_read = 0usize;
    for (root, project, containment) in roots {
        for file in definition_files(&root, limits, &mut problems) {
            if files_read >= limits.max_files_read || found.len() >= limits.max_agents {
                problems.push(AgentProblem {
                    path: file,
                    reason: format!(
                        "not used: at most {} agents from {} files are read; remove the ones you do not need",
                        limits.max_agents, limits.max_files_read
                    ),
                });
                continue;
            }
            files_read += 1;
            let source = if project {
                AgentSource::Project(file.clone())
            } else {
                AgentSource::User(file.clone())
            };
            match read_definition(&file, &containment, source, limits) {
                Ok(definition) => {
                    if let Some(nearer) = found.iter().find(|agent| agent.name == definition.name) {
                        let nearer = nearer.source.path().map(Path::display);
                        problems.push(AgentProblem {
                            path: file,
                            reason: format!(
                                "not used: the nearer {} has the same name `{}`; rename one of them to use both",
                                nearer.map(|path| path.to_string()).unwrap_or_default(),
                                definition.name
                            ),
                        });
                    } else {
                        found.push(definition);
                    }
                }
                Err(reason) => problems.push(AgentProblem { path: file, reason }),
            }
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    // Built-ins first, each replaced by a file of its name (the file is the user's choice).
    let mut agents = Vec::new();
    for builtin in built_ins() {
        match found.iter().position(|agent| agent.name == builtin.name) {
            Some(at) => agents.push(found.remove(at)),
            None => agents.push(builtin),
        }
    }
    agents.extend(found);
    AgentCatalogue { agents, problems }
}

/// `general-purpose` and `explore`.
pub(crate) fn built_ins() -> Vec<AgentDefinition> {
    let base = |name: &str, description: &str, body: &str| AgentDefinition {
        name: name.to_owned(),
        description: description.to_owned(),
        body: body.to_owned(),
        tools: None,
        disallowed_tools: Vec::new(),
        skills: Vec::new(),
        model: None,
        max_turns: None,
        max_budget_usd: None,
        max_tokens: None,
        permission_mode: None,
        mcp_servers: None,
        hooks: None,
        hooks_digest: None,
        background: false,
        read_only: false,
        warnings: Vec::new(),
        source: AgentSource::BuiltIn,
    };
    let general = base(
        GENERAL_PURPOSE,
        "General-purpose agent for multi-step tasks: researching, searching code, making changes. Use it when a task needs its own context.",
        GENERAL_PURPOSE_PROMPT,
    );
    let mut explore = base(
        EXPLORE,
        "Read-only agent that explores a codebase fast: finds files, searches code, reads and answers questions about it. It cannot change anything.",
        EXPLORE_PROMPT,
    );
    explore.read_only = true;
    vec![general, explore]
}

const GENERAL_PURPOSE_PROMPT: &str = "\
You are a subagent of agentd, given one task by another agent. Work on it with your tools until \
it is done: inspect before you change, prefer small precise edits, check what your commands \
return. You cannot ask the user anything. When you are done, answer with a concise report of \
what you found or did: it is all the other agent sees of your work.";

const EXPLORE_PROMPT: &str = "\
You are a read-only subagent of agentd that explores a codebase for another agent. Find files \
with glob and list_dir, search with grep, read with read_file; call independent lookups together. \
You cannot change files or run commands. When you are done, answer with a concise report that \
names the files and lines that matter: it is all the other agent sees of your work.";

/// `root/*.md` in name order; a missing root gives none, another user's gives a problem.
fn definition_files(
    root: &Path,
    limits: &AgentLimits,
    problems: &mut Vec<AgentProblem>,
) -> Vec<PathBuf> {
    if !root.is_dir() {
        return Vec::new();
    }
    if !agentd_core::regular_file::is_own_dir(root) {
        problems.push(AgentProblem {
            path: root.to_path_buf(),
            reason: "not used: the directory belongs to another user".to_owned(),
        });
        return Vec::new();
    }
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(err) => {
            problems.push(AgentProblem {
                path: root.to_path_buf(),
                reason: format!("cannot list the directory: {err}"),
            });
            return Vec::new();
        }
    };
    let mut files = Vec::new();
    for (index, entry) in entries.enumerate() {
        if index >= limits.max_dir_entries {
            problems.push(AgentProblem {
                path: root.to_path_buf(),
                reason: format!(
                    "more than {} entries; only the first were looked at",
                    limits.max_dir_entries
                ),
            });
            break;
        }
        let Ok(entry) = entry else { continue };
        let path = entry.path();
        if path.extension().is_some_and(|ext| ext == "md") && !path.is_dir() {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// One definition from its file (which must not lead out of `containment` through a
/// symlink), or the reason it cannot be used.
fn read_definition(
    path: &Path,
    containment: &Path,
    source: AgentSource,
    limits: &AgentLimits,
) -> Result<AgentDefinition, String> {
    let text =
        agentd_core::regular_file::read_definition_text(path, containment, limits.max_file_bytes)?;
    let document =
        agentd_core::frontmatter::parse(&text).map_err(|err| format!("bad frontmatter: {err}"))?;
    let mut definition = parse_definition(&document, path, source, limits)?;
    let inline_servers = definition
        .mcp_servers
        .as_ref()
        .is_some_and(|servers| !servers.inline.is_empty());
    if definition.hooks.is_some() || inline_servers {
        definition.hooks_digest = Some(agentd_policy::trust::digest(&text));
    }
    Ok(definition)
}

/// The servers a definition's text defines inline in its `mcpServers` (trust pins them), by
/// name; none when the frontmatter cannot be read.
pub fn inline_mcp_servers(text: &str) -> serde_json::Map<String, serde_json::Value> {
    agentd_core::frontmatter::parse(text)
        .ok()
        .and_then(|document| parse::mcp_servers_of(&document))
        .map(|servers| servers.inline)
        .unwrap_or_default()
}

/// The items of a nested list field as texts (a string as it is, anything else as JSON).
pub(crate) fn strings_of(value: &serde_json::Value) -> Vec<String> {
    let items = match value {
        serde_json::Value::Array(items) => items.as_slice(),
        other => std::slice::from_ref(other),
    };
    items
        .iter()
        .map(|item| match item {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

mod parse;
use parse::parse_definition;
pub(crate) use parse::tool_name;

#[cfg(test)]
mod tests;
