//! The policy: mode + merged rules + "allow for session" keys, and the decision for one tool
//! call (see the module docs for the order). Also the keys an approval is remembered under.

use std::fmt;
use std::path::PathBuf;

use super::notes::notes_reason;
use super::redirect::write_targets;
use super::rule::PathContext;
use super::shell::{basename, parse};
use super::subject::{Subject, url_host};
use super::{
    Decision, PermissionMode, Rule, RuleList, RuleSet, RuleSource, ToolKind, ToolRequest,
    split_shell_command,
};
use agentd_core::workspace::resolve_in_workspace;

/// Everything that decides tool calls for one session.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    pub mode: PermissionMode,
    /// User, project and session rules, merged.
    pub rules: RuleSet,
    /// For `~/…` rule patterns; None: such patterns match nothing.
    pub home: Option<PathBuf>,
    /// "Allow for session" approvals, as keys (for listing) and as rules (for matching).
    session_allows: Vec<(RuleKey, Rule)>,
}

/// What an approval is remembered under: a tool and what it was applied to. Displays as rule
/// text, e.g. `run_shell(npm run:*)`, `Edit(/src/main.rs)`, `fetch_url(domain:example.com)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleKey {
    /// Our tool name, `Edit` for both file-editing tools, or the MCP tool's full name.
    pub tool: String,
    pub(crate) specifier: KeySpecifier,
}

/// The part of a [`RuleKey`] that narrows the tool.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum KeySpecifier {
    /// The whole tool (MCP tools, tools without input worth narrowing).
    None,
    /// Commands starting with these words (the first two words of the approved command).
    CommandPrefix(String),
    /// Exactly this command line (compound commands and broad prefixes like `bash -c`).
    CommandExact(String),
    /// This file, relative to the workspace root.
    Path(String),
    /// This host.
    Domain(String),
}

/// First words whose two-word prefix would allow almost anything, so approvals of them are
/// remembered as the exact command and never become an "always allow" rule.
const BROAD_COMMANDS: &[&str] = &[
    "sudo", "doas", "su", "env", "xargs", "eval", "exec", "command", "builtin", "nohup", "time",
    "timeout", "nice", "ionice", "stdbuf", "source", ".", "watch",
];

/// Interpreters whose option runs code given on the command line (`python -c`, `node -e`).
const CODE_OPTIONS: &[&str] = &["-c", "-e", "-p", "-m", "-r", "--eval", "--print"];

impl Policy {
    pub fn new(mode: PermissionMode, rules: RuleSet) -> Self {
        Self {
            mode,
            rules,
            home: None,
            session_allows: Vec::new(),
        }
    }

    pub fn with_home(mut self, home: Option<PathBuf>) -> Self {
        self.home = home;
        self
    }

    /// Remembers an approval for the rest of the session (see [`session_key`]).
    pub fn allow_for_session(&mut self, key: RuleKey) {
        if self.session_allows.iter().any(|(known, _)| *known == key) {
            return;
        }
        let rule = Rule::from_key(&key);
        self.session_allows.push((key, rule));
    }

    /// The session's remembered approvals, oldest first.
    pub fn session_allows(&self) -> impl Iterator<Item = &RuleKey> {
        self.session_allows.iter().map(|(key, _)| key)
    }

    /// Whether an allow rule (or an "allow for session" answer) names `host` for fetch_url with
    /// a `domain:` specifier: only then may fetch_url reach it at a loopback, private or
    /// link-local address. A rule allowing fetch_url as a whole names no host.
    pub fn names_fetch_host(&self, host: &str) -> bool {
        self.rules
            .allow
            .iter()
            .chain(self.session_allows.iter().map(|(_, rule)| rule))
            .any(|rule| rule.names_tool("fetch_url") && rule.names_host(host))
    }

    /// Decides one tool call. Touches the file system to resolve paths (symlinks), so async code
    /// calls it on the blocking pool or accepts a few `stat`s.
    pub fn evaluate(&self, request: &ToolRequest<'_>) -> Decision {
        let subject = match Subject::of(request) {
            Ok(subject) => subject,
            Err(reason) => return Decision::Deny { reason },
        };
        let tool = request.tool;
        let context = PathContext {
            workspace: &subject.workspace,
            home: self.home.as_deref(),
        };
        let applies = |rule: &Rule| rule.names_tool(tool) && subject.matches_any(rule, &context);

        if let Some(rule) = self.rules.deny.iter().find(|rule| applies(rule)) {
            return Decision::Deny {
                reason: format!(
                    "{} is denied by the rule `{}` in {}",
                    subject.action, rule.text, rule.source
                ),
            };
        }
        if let Some((target, rule)) = subject.write_matched_by(&self.rules.deny, &context) {
            return Decision::Deny {
                reason: format!(
                    "{} writes `{target}`, which is denied by the rule `{}` in {}",
                    subject.action, rule.text, rule.source
                ),
            };
        }
        let kind = ToolKind::of(tool, request.read_only);
        if self.mode == PermissionMode::Plan && !kind.allowed_in_plan() {
            return Decision::Deny {
                reason: format!(
                    "plan mode: only read-only tools run while planning, so {} is not available; \
                     finish the plan and present it, the user leaves plan mode to carry it out",
                    tool
                ),
            };
        }
        if let Some(notes) = &subject.notes {
            return Decision::Ask {
                reason: notes_reason(&subject.action, notes),
            };
        }
        if let Some(rule) = self.rules.ask.iter().find(|rule| applies(rule)) {
            return Decision::Ask {
                reason: format!(
                    "approval needed to {} (rule `{}` in {})",
                    subject.action, rule.text, rule.source
                ),
            };
        }
        let allow_rules: Vec<&Rule> = self
            .rules
            .allow
            .iter()
            .chain(self.session_allows.iter().map(|(_, rule)| rule))
            .filter(|rule| rule.names_tool(tool))
            .collect();
        if let Some((target, rule)) = subject.write_matched_by(&self.rules.ask, &context) {
            return Decision::Ask {
                reason: format!(
                    "approval needed to {}: it writes `{target}` (rule `{}` in {})",
                    subject.action, rule.text, rule.source
                ),
            };
        }
        if self.mode != PermissionMode::Bypass
            && let Some(reason) = subject.write_needing_approval(&allow_rules)
        {
            return Decision::Ask { reason };
        }
        if self.mode != PermissionMode::Bypass
            && let Some(reason) = subject.unaccounted_needing_approval(&allow_rules)
        {
            return Decision::Ask { reason };
        }
        if let Some(rule) = subject.allowed_by(&allow_rules, &context) {
            return Decision::Allow {
                reason: Some(format!("allowed by `{}` ({})", rule.text, rule.source)),
            };
        }
        match (self.mode, kind) {
            (_, ToolKind::ReadOnly) => Decision::Allow { reason: None },
            (_, ToolKind::Mcp { read_only: true }) if tool.starts_with("ext__") => {
                Decision::Allow {
                    reason: Some("its extension declares it read-only (readOnly)".to_owned()),
                }
            }
            (_, ToolKind::Mcp { read_only: true }) => Decision::Allow {
                reason: Some("its MCP server marks it read-only (readOnlyHint)".to_owned()),
            },
            (PermissionMode::Bypass, _) => Decision::Allow {
                reason: Some("bypass mode".to_owned()),
            },
            (_, ToolKind::DaemonStore) => Decision::Allow {
                reason: Some("it changes only the daemon's own stores".to_owned()),
            },
            (PermissionMode::AcceptEdits, ToolKind::FileEdit) => Decision::Allow {
                reason: Some("acceptEdits mode".to_owned()),
            },
            _ => Decision::Ask {
                reason: format!("approval needed to {}", subject.action),
            },
        }
    }
}

/// The key an "allow for session" approval of `request` is remembered under: for shell the
/// first two words of a simple command (`npm run`; the whole command when shorter, or when it
/// is compound, a broad prefix like `bash -c`, or its words are quoted), for file edits the
/// file (`Edit`, covering both edit tools), for fetch_url the host, else the tool.
pub fn session_key(request: &ToolRequest<'_>) -> RuleKey {
    let tool = request.tool;
    let field = |name: &str| {
        request
            .input
            .get(name)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .trim()
            .to_owned()
    };
    let (tool, specifier) = match tool {
        "run_shell" => (tool.to_owned(), shell_key(&field("command")).0),
        "write_file" | "edit_file" | "read_file" | "list_dir" | "glob" | "grep" => {
            let raw = field("path");
            let raw = if raw.is_empty() { ".".to_owned() } else { raw };
            let relative = resolve_in_workspace(request.workspace, &raw)
                .ok()
                .and_then(|resolved| {
                    let workspace = request.workspace.canonicalize().ok()?;
                    resolved
                        .strip_prefix(workspace)
                        .ok()
                        .map(|relative| relative.display().to_string())
                })
                .unwrap_or_else(|| raw.trim_start_matches("./").to_owned());
            let name = if matches!(tool, "write_file" | "edit_file") {
                "Edit"
            } else {
                tool
            };
            (name.to_owned(), KeySpecifier::Path(relative))
        }
        "fetch_url" => (
            tool.to_owned(),
            KeySpecifier::Domain(url_host(&field("url")).unwrap_or_default()),
        ),
        _ => (tool.to_owned(), KeySpecifier::None),
    };
    RuleKey { tool, specifier }
}

/// The rule text to append to the user config for "always allow" of `request`, or None where
/// that would allow far more than what was approved: compound commands (any `;`, `&&`, `|`,
/// substitution, …), broad prefixes (`bash -c`, `python -c`, `node -e`, `sudo`, `env`, `xargs`,
/// `eval`, …), leading variable assignments, and URLs without a host.
pub fn always_allow_rule(request: &ToolRequest<'_>) -> Option<String> {
    let key = session_key(request);
    match &key.specifier {
        KeySpecifier::CommandPrefix(_) => Some(key.to_string()),
        KeySpecifier::CommandExact(command) => {
            let (_, broad) = shell_key(command);
            // `*` would read as a wildcard in a rule; only session keys keep exact commands.
            (!broad && !command.contains('*')).then(|| key.to_string())
        }
        KeySpecifier::Domain(host) if host.is_empty() => None,
        _ => Some(key.to_string()),
    }
}

impl fmt::Display for RuleKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.specifier {
            KeySpecifier::None => write!(f, "{}", self.tool),
            KeySpecifier::CommandPrefix(prefix) => write!(f, "{}({prefix}:*)", self.tool),
            KeySpecifier::CommandExact(command) => write!(f, "{}({command})", self.tool),
            KeySpecifier::Path(path) => {
                write!(f, "{}(/{})", self.tool, globset::escape(path))
            }
            KeySpecifier::Domain(host) => write!(f, "{}(domain:{host})", self.tool),
        }
    }
}

impl Rule {
    /// The session rule a key stands for (built directly: an exact command with `*` stays
    /// exact).
    pub(crate) fn from_key(key: &RuleKey) -> Rule {
        let source = RuleSource::session();
        match &key.specifier {
            KeySpecifier::CommandExact(command) => Rule::exact_command(&key.tool, command, source),
            _ => Rule::parse(&key.to_string(), source.clone(), RuleList::Allow)
                .unwrap_or_else(|_| Rule::never(&key.tool, source)),
        }
    }
}

/// The key specifier of a shell command and whether the command is too broad (or compound)
/// to become a prefix rule.
fn shell_key(command: &str) -> (KeySpecifier, bool) {
    let command = command.trim();
    let parts = split_shell_command(command);
    let simple = parts.len() == 1 && parts.first().is_some_and(|part| part == command);
    let parsed = parse(command);
    let words: Vec<String> = parsed
        .pipelines
        .first()
        .and_then(|pipeline| pipeline.commands.first())
        .map(|command| command.words.clone())
        .unwrap_or_default();
    // A line that writes files through redirections or `tee` is remembered exactly: a prefix
    // would not say where it writes.
    let broad = !simple || words.is_empty() || is_broad(&words) || parsed.unaccounted.is_some();
    if !broad && !write_targets(command).paths.is_empty() {
        return (KeySpecifier::CommandExact(command.to_owned()), false);
    }
    if broad {
        return (KeySpecifier::CommandExact(command.to_owned()), true);
    }
    let plain = |token: &&str| {
        !token.contains(['\'', '"', '\\', '$', '`', '*', '?', '[', '<', '>', '(', ')'])
    };
    let tokens: Vec<&str> = command.split_whitespace().take(2).collect();
    let option_second = tokens.get(1).is_some_and(|token| token.starts_with('-'));
    if !option_second && !tokens.is_empty() && tokens.iter().all(plain) {
        (KeySpecifier::CommandPrefix(tokens.join(" ")), false)
    } else {
        // `rm -rf build` must not become `rm -rf:*`; quoted words do not make a clean prefix.
        (KeySpecifier::CommandExact(command.to_owned()), false)
    }
}

fn is_broad(words: &[String]) -> bool {
    let Some(first) = words.first() else {
        return true;
    };
    if first.contains('=') {
        return true;
    }
    let name = basename(first);
    if BROAD_COMMANDS.contains(&name) {
        return true;
    }
    let runs_code = super::shell::SHELLS.contains(&name)
        && words
            .iter()
            .skip(1)
            .any(|word| word.starts_with('-') && !word.starts_with("--") && word.contains('c'));
    let interpreter = name.starts_with("python")
        || matches!(
            name,
            "node" | "deno" | "bun" | "perl" | "ruby" | "php" | "lua" | "osascript"
        );
    runs_code
        || (interpreter
            && words
                .iter()
                .skip(1)
                .any(|word| CODE_OPTIONS.contains(&word.as_str())))
}
