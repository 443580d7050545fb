//! Parsing permission rules: a rule's text into its tool pattern and specifier (shell command,
//! path glob, domain), lists of rule texts into a `RuleSet` with an error for each bad one, and
//! the name a misspelt tool most likely meant.

use globset::GlobBuilder;

use super::{
    Anchor, BUILTIN_TOOL_NAMES, CLAUDE_TOOL_NAMES, CommandPattern, DomainPattern, PathPattern,
    Rule, RuleEntry, RuleError, RuleList, RuleSet, RuleSource, Specifier, ToolPattern,
};

impl RuleSet {
    /// Parses three lists of rule texts from one source: the good rules, and an error for each
    /// bad one (never silently dropped).
    pub fn parse(
        source: &RuleSource,
        allow: &[String],
        ask: &[String],
        deny: &[String],
    ) -> (RuleSet, Vec<RuleError>) {
        let entries = [
            (RuleList::Allow, allow),
            (RuleList::Ask, ask),
            (RuleList::Deny, deny),
        ]
        .into_iter()
        .flat_map(|(list, texts)| {
            texts
                .iter()
                .enumerate()
                .map(move |(index, text)| RuleEntry {
                    list,
                    index,
                    text: text.clone(),
                    line_col: None,
                })
        });
        Self::parse_entries(source, entries)
    }

    /// [`RuleSet::parse`] for entries that carry their own positions.
    pub(crate) fn parse_entries(
        source: &RuleSource,
        entries: impl IntoIterator<Item = RuleEntry>,
    ) -> (RuleSet, Vec<RuleError>) {
        let mut rules = RuleSet::default();
        let mut errors = Vec::new();
        for entry in entries {
            match Rule::parse(&entry.text, source.clone(), entry.list) {
                Ok(rule) => rules.push(rule),
                Err(message) => errors.push(RuleError {
                    source: source.clone(),
                    location: format!("permissions.{}[{}]", entry.list, entry.index),
                    line_col: entry.line_col,
                    rule: entry.text.clone(),
                    message,
                }),
            }
        }
        (rules, errors)
    }
}

impl Rule {
    /// Parses one rule; the error is the message for a [`RuleError`].
    pub fn parse(text: &str, source: RuleSource, list: RuleList) -> Result<Rule, String> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err("empty rule".to_owned());
        }
        let (name, specifier) = match trimmed.find('(') {
            Some(open) => {
                let Some(inner) = trimmed
                    .get(open + 1..)
                    .and_then(|rest| rest.strip_suffix(')'))
                else {
                    return Err("missing `)` at the end of the rule".to_owned());
                };
                (trimmed.get(..open).unwrap_or("").trim(), Some(inner.trim()))
            }
            None if trimmed.contains(')') => return Err("`)` without `(`".to_owned()),
            None => (trimmed, None),
        };
        let specifier = match specifier {
            Some("") => {
                return Err(format!(
                    "empty specifier; write `{name}` to match every call of the tool"
                ));
            }
            Some("*") | None => None,
            Some(specifier) => Some(specifier),
        };
        let tools = parse_tool_name(name)?;
        let specifier = match (specifier, &tools) {
            (None, _) => None,
            (Some(_), ToolPattern::McpServer(_) | ToolPattern::McpTool(_)) => {
                return Err("MCP and extension rules take no specifier".to_owned());
            }
            (Some(specifier), ToolPattern::Builtin(names)) => {
                Some(parse_specifier(name, names, specifier)?)
            }
        };
        Ok(Rule {
            text: trimmed.to_owned(),
            source,
            list,
            tools,
            specifier,
        })
    }
}

pub(super) fn parse_tool_name(name: &str) -> Result<ToolPattern, String> {
    // MCP tools (`mcp__server__tool`) and extension tools (`ext__name__tool`) are named alike.
    for (prefix, owner, what) in [("mcp__", "SERVER", "MCP"), ("ext__", "NAME", "extension")] {
        let Some(rest) = name.strip_prefix(prefix) else {
            continue;
        };
        let valid = |part: &str| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        let kind = &prefix[..3];
        return match rest.split_once("__") {
            None if valid(rest) => Ok(ToolPattern::McpServer(name.to_owned())),
            Some((server, "*")) if valid(server) => {
                Ok(ToolPattern::McpServer(format!("{prefix}{server}")))
            }
            Some((server, tool)) if valid(server) && valid(tool) => {
                Ok(ToolPattern::McpTool(name.to_owned()))
            }
            _ => Err(format!(
                "bad {what} tool name {name:?}; write {kind}__{owner}, {kind}__{owner}__* or {kind}__{owner}__TOOL"
            )),
        };
    }
    if let Some((_, tools)) = CLAUDE_TOOL_NAMES.iter().find(|(alias, _)| *alias == name) {
        return Ok(ToolPattern::Builtin(tools));
    }
    if let Some(index) = BUILTIN_TOOL_NAMES.iter().position(|tool| *tool == name) {
        return Ok(ToolPattern::Builtin(
            BUILTIN_TOOL_NAMES.get(index..=index).unwrap_or(&[]),
        ));
    }
    Err(match suggest(name) {
        Some(close) => format!("unknown tool {name:?}; did you mean {close:?}?"),
        None => format!(
            "unknown tool {name:?}; known tools are {}, {}, mcp__SERVER__TOOL and ext__NAME__TOOL",
            CLAUDE_TOOL_NAMES
                .iter()
                .map(|(alias, _)| *alias)
                .collect::<Vec<_>>()
                .join(", "),
            BUILTIN_TOOL_NAMES.join(", ")
        ),
    })
}

/// The specifier for a tool group; every group is one family (shell, files, web, other).
fn parse_specifier(name: &str, tools: &[&str], specifier: &str) -> Result<Specifier, String> {
    let first = tools.first().copied().unwrap_or("");
    match first {
        "run_shell" => {
            if let Some(prefix) = specifier.strip_suffix(":*") {
                let prefix = prefix.trim();
                if prefix.is_empty() {
                    return Err(format!(
                        "empty command prefix; write `{name}` for every command"
                    ));
                }
                Ok(Specifier::Command(CommandPattern::Prefix(
                    prefix.to_owned(),
                )))
            } else if specifier.contains('*') {
                Ok(Specifier::Command(CommandPattern::Wildcard(
                    specifier.to_owned(),
                )))
            } else {
                Ok(Specifier::Command(CommandPattern::Exact(
                    specifier.to_owned(),
                )))
            }
        }
        "read_file" | "write_file" | "edit_file" | "list_dir" | "glob" | "grep" => {
            Ok(Specifier::Path(parse_path_pattern(specifier)?))
        }
        "fetch_url" => {
            let Some(domain) = specifier.strip_prefix("domain:") else {
                return Err(format!(
                    "{name} rules take `domain:HOST` (e.g. {name}(domain:example.com))"
                ));
            };
            let domain = domain.trim().trim_end_matches('.').to_ascii_lowercase();
            match domain.strip_prefix("*.") {
                Some(parent) if !parent.is_empty() && !parent.contains('*') => Ok(
                    Specifier::Domain(DomainPattern::Subdomains(format!(".{parent}"))),
                ),
                None if is_ipv6_literal(&domain)
                    || (!domain.is_empty() && !domain.contains(['*', '/', ':'])) =>
                {
                    Ok(Specifier::Domain(DomainPattern::Exact(url_host_spelling(
                        domain,
                    ))))
                }
                _ => Err(format!(
                    "bad domain {domain:?}; write example.com or *.example.com"
                )),
            }
        }
        _ => Err(format!("{name} takes no specifier; write `{name}`")),
    }
}

/// `[::1]`-style hosts: an IPv6 address in brackets, as URLs write it.
fn is_ipv6_literal(domain: &str) -> bool {
    domain
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .is_some_and(|inner| inner.parse::<std::net::Ipv6Addr>().is_ok())
}

/// The host as a parsed URL spells it, so a rule matches however the URL wrote the host:
/// `127.1` is `127.0.0.1`, `[0:0::1]` is `[::1]`. Only plain host names and address literals
/// are respaced; anything else stays as written.
fn url_host_spelling(domain: String) -> String {
    let plain = domain
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if !plain && !is_ipv6_literal(&domain) {
        return domain;
    }
    reqwest::Url::parse(&format!("http://{domain}/"))
        .ok()
        .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
        .unwrap_or(domain)
}

fn parse_path_pattern(specifier: &str) -> Result<PathPattern, String> {
    let (anchor, pattern, anchored) = if let Some(rest) = specifier.strip_prefix("//") {
        (Anchor::Absolute, format!("/{rest}"), true)
    } else if specifier == "~" {
        (Anchor::Home, String::new(), true)
    } else if let Some(rest) = specifier.strip_prefix("~/") {
        (Anchor::Home, rest.to_owned(), true)
    } else if let Some(rest) = specifier.strip_prefix("./") {
        (Anchor::Workspace, rest.to_owned(), true)
    } else if let Some(rest) = specifier.strip_prefix('/') {
        (Anchor::Workspace, rest.to_owned(), true)
    } else {
        let anchored = specifier.trim_end_matches('/').contains('/');
        (Anchor::Workspace, specifier.to_owned(), anchored)
    };
    let mut pattern = pattern.trim_end_matches('/').to_owned();
    if pattern.is_empty() || (anchor == Anchor::Absolute && pattern == "/") {
        pattern = if anchor == Anchor::Absolute {
            "/**".to_owned()
        } else {
            "**".to_owned()
        };
    } else if !anchored {
        pattern = format!("**/{pattern}");
    }
    let compile = |pattern: &str| {
        GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map(|glob| glob.compile_matcher())
    };
    let matcher = compile(&pattern).map_err(|error| format!("bad glob: {error}"))?;
    // `dir/**` and `dir/*` match every entry of `dir` (`*` matches any one name, dotted ones
    // too); a prefix that does not compile on its own (`a\/**`) only loses the shortcut.
    let contents_of = pattern
        .strip_suffix("/**")
        .or_else(|| pattern.strip_suffix("/*"))
        .filter(|prefix| !prefix.is_empty() && !prefix.ends_with('\\'))
        .and_then(|prefix| compile(prefix).ok());
    Ok(PathPattern {
        anchor,
        matcher,
        contents_of,
    })
}

/// The known tool name closest to `name`, if it is close (a typo or a case slip).
fn suggest(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    CLAUDE_TOOL_NAMES
        .iter()
        .map(|(alias, _)| *alias)
        .chain(BUILTIN_TOOL_NAMES.iter().copied())
        .map(|candidate| {
            (
                edit_distance(&lower, &candidate.to_ascii_lowercase()),
                candidate,
            )
        })
        .filter(|(distance, candidate)| *distance <= 2.max(candidate.len() / 4))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous.get(j).copied().unwrap_or(0) + usize::from(ca != *cb);
            let deletion = previous.get(j + 1).copied().unwrap_or(0) + 1;
            let insertion = current.get(j).copied().unwrap_or(0) + 1;
            current.push(substitution.min(deletion).min(insertion));
        }
        previous = current;
    }
    previous.last().copied().unwrap_or(0)
}
