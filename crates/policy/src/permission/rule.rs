//! Permission rules in Claude Code's syntax (`Tool` or `Tool(specifier)`), their sources and
//! parse errors, and how a rule matches a tool call (reading a rule's text is in `rule_parse.rs`).
//!
//! Tool names: Claude Code's (`Bash`, `Read`, `Edit`, `Write`, `WebFetch`, …) map onto ours
//! (see [`CLAUDE_TOOL_NAMES`]), and ours work directly (`run_shell(git status)`). MCP tools are
//! `mcp__server` or `mcp__server__*` (every tool of a server) or `mcp__server__tool`.
//!
//! Specifiers, by tool:
//! - shell (`run_shell`, `Bash`): `npm run test:*` is a prefix ending at a word boundary (so it
//!   matches `npm run test` and `npm run test -- -x`, not `npm run tests`); a `*` elsewhere
//!   matches any text; anything else is exact. Each part of a compound command is matched on its
//!   own (see `Policy::evaluate`).
//! - file tools (`Read`, `Edit`, `read_file`, …): a gitignore-style glob. `src/**`, `./src/**`
//!   and `/src/**` are relative to the workspace root; a pattern without `/` (`*.env`) matches at
//!   any depth; `//etc/**` is absolute; `~/x/**` is under the home directory. A pattern matching
//!   a directory covers everything under it. The path matched is the resolved one (symlinks and
//!   `..` followed), so links cannot dodge a rule.
//! - `fetch_url` / `WebFetch`: `domain:example.com` (that host exactly) or
//!   `domain:*.example.com` (its subdomains); address literals as URLs normalise them
//!   (`domain:127.1` is `127.0.0.1`, `domain:[::1]`).
//! - `Tool(*)` is the same as `Tool`; other tools take no specifier.

#[path = "rule_parse.rs"]
mod parse;

use std::fmt;
use std::path::Path;

use globset::GlobMatcher;
use parse::parse_tool_name;

/// Claude Code tool names and the tools of ours each one covers.
pub(crate) const CLAUDE_TOOL_NAMES: &[(&str, &[&str])] = &[
    ("Bash", &["run_shell"]),
    ("Read", &["read_file", "list_dir", "glob", "grep"]),
    ("Edit", &["edit_file", "write_file"]),
    ("MultiEdit", &["edit_file"]),
    ("Write", &["write_file"]),
    ("WebFetch", &["fetch_url"]),
    ("Glob", &["glob"]),
    ("Grep", &["grep"]),
    ("LS", &["list_dir"]),
    ("TodoWrite", &["todo_write"]),
    ("Task", &["task"]),
];

/// Our built-in tool names (DESIGN §8); rules naming anything else (but `mcp__…`) are errors.
pub(crate) const BUILTIN_TOOL_NAMES: &[&str] = &[
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "glob",
    "grep",
    "run_shell",
    "fetch_url",
    "load_skill",
    "search_tools",
    "memory",
    "todo_write",
    "task",
    "task_list",
    "task_get",
    "task_output",
    "task_stop",
];

/// Which configuration layer a rule comes from; later layers add rules, never lift a deny.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RuleLayer {
    /// config.toml.
    User,
    /// `.agents/settings.toml` / `.json` of the workspace.
    Project,
    /// Given for one session (session/create, approvals).
    Session,
}

/// Where a rule was written, for messages: a file path, or "session".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleSource {
    pub layer: RuleLayer,
    /// The file (as it should appear in messages), or a word like "session".
    pub origin: String,
}

/// Which list a rule is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleList {
    Allow,
    Ask,
    Deny,
}

/// One rule as written, with where it was written, to be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RuleEntry {
    pub list: RuleList,
    /// Index in its list, for `permissions.allow[2]`.
    pub index: usize,
    pub text: String,
    /// 1-based line and column in the file, when known.
    pub line_col: Option<(usize, usize)>,
}

/// A rule that could not be parsed. Display:
/// `<source>[:line:col]: permissions.allow[2] "Bsh(ls)": unknown tool "Bsh"; did you mean "Bash"?`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleError {
    pub source: RuleSource,
    /// `permissions.allow[2]`.
    pub location: String,
    pub line_col: Option<(usize, usize)>,
    /// The rule text as written.
    pub rule: String,
    pub message: String,
}

/// A parsed rule.
#[derive(Clone, Debug)]
pub struct Rule {
    /// As written (trimmed), for messages.
    pub text: String,
    pub source: RuleSource,
    pub list: RuleList,
    tools: ToolPattern,
    specifier: Option<Specifier>,
}

/// Rules of one or more layers, by list. Within a list the first match wins (it names the rule
/// in the decision's reason); across lists deny > ask > allow.
#[derive(Clone, Debug, Default)]
pub struct RuleSet {
    pub allow: Vec<Rule>,
    pub ask: Vec<Rule>,
    pub deny: Vec<Rule>,
}

/// What a rule says about a path-taking tool call: where the resolved path lies.
pub(crate) struct PathContext<'a> {
    /// Canonical workspace root.
    pub workspace: &'a Path,
    pub home: Option<&'a Path>,
}

#[derive(Clone, Debug)]
enum ToolPattern {
    Builtin(&'static [&'static str]),
    /// Every tool of one MCP server or extension: `mcp__server` or `ext__name`, the prefix
    /// its tools' names start with (before `__tool`).
    McpServer(String),
    /// One tool: `mcp__server__tool` or `ext__name__tool`.
    McpTool(String),
}

#[derive(Clone, Debug)]
enum Specifier {
    Command(CommandPattern),
    Path(PathPattern),
    Domain(DomainPattern),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum CommandPattern {
    Exact(String),
    /// Matches the prefix alone or followed by whitespace.
    Prefix(String),
    /// `*` matches any text.
    Wildcard(String),
}

#[derive(Clone, Debug)]
struct PathPattern {
    anchor: Anchor,
    matcher: GlobMatcher,
    /// For a pattern ending in `/**` or `/*` (every entry of a directory): the directories it
    /// empties, so a walk need not enter them (`secrets/**` → `secrets`).
    contents_of: Option<GlobMatcher>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Anchor {
    Workspace,
    Absolute,
    Home,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum DomainPattern {
    Exact(String),
    Subdomains(String),
}

impl RuleSource {
    pub fn new(layer: RuleLayer, origin: impl Into<String>) -> Self {
        Self {
            layer,
            origin: origin.into(),
        }
    }

    /// Rules given for one session.
    pub fn session() -> Self {
        Self::new(RuleLayer::Session, "session")
    }

    pub fn file(layer: RuleLayer, path: &Path) -> Self {
        Self::new(layer, path.display().to_string())
    }
}

impl fmt::Display for RuleSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.origin)
    }
}

impl RuleList {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleList::Allow => "allow",
            RuleList::Ask => "ask",
            RuleList::Deny => "deny",
        }
    }
}

impl fmt::Display for RuleList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.source)?;
        if let Some((line, column)) = self.line_col {
            write!(f, ":{line}:{column}")?;
        }
        write!(f, ": {} {:?}: {}", self.location, self.rule, self.message)
    }
}

impl std::error::Error for RuleError {}

impl RuleSet {
    /// All layers' rules in one set, in the order given (user, project, session). Deny and ask
    /// rules of every layer stay in force: no layer lifts another's deny.
    pub fn merge(layers: impl IntoIterator<Item = RuleSet>) -> RuleSet {
        let mut merged = RuleSet::default();
        for layer in layers {
            merged.allow.extend(layer.allow);
            merged.ask.extend(layer.ask);
            merged.deny.extend(layer.deny);
        }
        merged
    }

    /// Adds a rule to its list.
    pub fn push(&mut self, rule: Rule) {
        match rule.list {
            RuleList::Allow => self.allow.push(rule),
            RuleList::Ask => self.ask.push(rule),
            RuleList::Deny => self.deny.push(rule),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.ask.is_empty() && self.deny.is_empty()
    }
}

impl Rule {
    /// A session allow rule for exactly `command` (no wildcard reading of `*`).
    pub(crate) fn exact_command(tool: &str, command: &str, source: RuleSource) -> Rule {
        Rule {
            text: format!("{tool}({command})"),
            source,
            list: RuleList::Allow,
            tools: parse_tool_name(tool).unwrap_or(ToolPattern::Builtin(&[])),
            specifier: Some(Specifier::Command(CommandPattern::Exact(
                command.trim().to_owned(),
            ))),
        }
    }

    /// A rule that names no tool (stands in for a key that does not parse).
    pub(crate) fn never(text: &str, source: RuleSource) -> Rule {
        Rule {
            text: text.to_owned(),
            source,
            list: RuleList::Allow,
            tools: ToolPattern::Builtin(&[]),
            specifier: None,
        }
    }

    /// Whether the rule names `tool` (our name, `mcp__server__tool` or `ext__name__tool`).
    pub(crate) fn names_tool(&self, tool: &str) -> bool {
        match &self.tools {
            ToolPattern::Builtin(names) => names.contains(&tool),
            ToolPattern::McpTool(name) => name == tool,
            ToolPattern::McpServer(prefix) => tool
                .strip_prefix(prefix.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with("__")),
        }
    }

    /// Whether the rule has no specifier, so it matches every call of its tools.
    pub(crate) fn is_whole_tool(&self) -> bool {
        self.specifier.is_none()
    }

    /// For shell rules: whether one part of a command (as written) matches. A rule without a
    /// specifier matches everything; a non-command specifier nothing.
    pub(crate) fn matches_command(&self, command: &str) -> bool {
        match &self.specifier {
            None => true,
            Some(Specifier::Command(pattern)) => pattern.matches(command.trim()),
            Some(_) => false,
        }
    }

    /// For shell rules: an exact (not prefix or wildcard) specifier equal to `command`.
    pub(crate) fn matches_command_exactly(&self, command: &str) -> bool {
        matches!(&self.specifier, Some(Specifier::Command(CommandPattern::Exact(exact))) if exact == command.trim())
    }

    /// For file tools: whether the resolved path matches.
    pub(crate) fn matches_path(&self, resolved: &Path, context: &PathContext<'_>) -> bool {
        match &self.specifier {
            None => true,
            Some(Specifier::Path(pattern)) => pattern.matches(resolved, context),
            Some(_) => false,
        }
    }

    /// For fetch_url: whether the rule names `host` through a `domain:` specifier (a rule for
    /// the whole tool names no host).
    pub(crate) fn names_host(&self, host: &str) -> bool {
        matches!(&self.specifier, Some(Specifier::Domain(pattern)) if pattern.matches(host))
    }

    /// For file tools: whether the rule matches every path under the resolved directory `dir`
    /// (it matches `dir` itself, or all of its entries, like `secrets/**` for `secrets`).
    pub(crate) fn matches_everything_under(&self, dir: &Path, context: &PathContext<'_>) -> bool {
        match &self.specifier {
            None => true,
            Some(Specifier::Path(pattern)) => pattern.matches_everything_under(dir, context),
            Some(_) => false,
        }
    }

    /// For fetch_url: whether the URL's host matches (None: the URL has no host).
    pub(crate) fn matches_host(&self, host: Option<&str>) -> bool {
        match &self.specifier {
            None => true,
            Some(Specifier::Domain(pattern)) => host.is_some_and(|host| pattern.matches(host)),
            Some(_) => false,
        }
    }
}

impl CommandPattern {
    fn matches(&self, command: &str) -> bool {
        match self {
            CommandPattern::Exact(exact) => command == exact,
            CommandPattern::Prefix(prefix) => command
                .strip_prefix(prefix.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace)),
            CommandPattern::Wildcard(pattern) => wildcard_match(pattern, command),
        }
    }
}

impl PathPattern {
    /// Matches `resolved` or any of its ancestors under the anchor (gitignore: a matched
    /// directory covers its contents).
    fn matches(&self, resolved: &Path, context: &PathContext<'_>) -> bool {
        self.relative(resolved, context).is_some_and(|relative| {
            relative
                .ancestors()
                .filter(|ancestor| !ancestor.as_os_str().is_empty())
                .any(|ancestor| self.matcher.is_match(ancestor))
        })
    }

    /// Whether every path under `dir` matches: `dir` itself does, or the pattern is one for
    /// all entries of a directory and `dir` is that directory.
    fn matches_everything_under(&self, dir: &Path, context: &PathContext<'_>) -> bool {
        self.matches(dir, context)
            || self.contents_of.as_ref().is_some_and(|contents_of| {
                self.relative(dir, context).is_some_and(|relative| {
                    !relative.as_os_str().is_empty() && contents_of.is_match(relative)
                })
            })
    }

    /// `resolved` relative to the pattern's anchor; None when it lies elsewhere.
    fn relative<'p>(&self, resolved: &'p Path, context: &PathContext<'_>) -> Option<&'p Path> {
        match self.anchor {
            Anchor::Absolute => Some(resolved),
            Anchor::Workspace => resolved.strip_prefix(context.workspace).ok(),
            Anchor::Home => context
                .home
                .and_then(|home| resolved.strip_prefix(home).ok()),
        }
    }
}

impl DomainPattern {
    fn matches(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        match self {
            DomainPattern::Exact(domain) => host == *domain,
            // Stored with its leading dot: `.example.com`.
            DomainPattern::Subdomains(suffix) => {
                host.len() > suffix.len() && host.ends_with(suffix.as_str())
            }
        }
    }
}

/// `*` matches any text (including none); everything else literally.
fn wildcard_match(pattern: &str, text: &str) -> bool {
    let mut pieces = pattern.split('*');
    let Some(first) = pieces.next() else {
        return text.is_empty();
    };
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let pieces: Vec<&str> = pieces.collect();
    let Some((last, middle)) = pieces.split_last() else {
        return rest.is_empty();
    };
    for piece in middle {
        match rest.find(piece) {
            Some(at) => rest = rest.get(at + piece.len()..).unwrap_or(""),
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}
