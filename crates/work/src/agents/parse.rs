//! The fields of one definition's frontmatter, in Claude Code's spelling and the reference's:
//! every key in camelCase or snake_case (`disallowedTools`/`disallowed_tools`,
//! `permissionMode`/`permission_mode`, `mcpServers`/`mcp_servers`), the reference's own names
//! (`max_iteration_per_run` for `maxTurns`, `max_budget_per_run` for `maxBudgetUsd`,
//! `max_tokens_per_run` for `maxTokens`, `mcp_config` for `mcpServers`) and every mode in
//! either spelling (`always_confirm`, `alwaysConfirm`, `acceptEdits`, `bypassPermissions`, …).
//! A key agentd does not use (`color`, `effort`, `condenser`, a typo) is a warning that names
//! it, never a refused definition.

use std::path::Path;

use super::{AgentDefinition, AgentLimits, AgentMcpServers, AgentSource};
use agentd_core::frontmatter::{Document, Value};

/// Claude Code's tool names and ours.
const TOOL_ALIASES: &[(&str, &str)] = &[
    ("Read", "read_file"),
    ("Write", "write_file"),
    ("Edit", "edit_file"),
    ("MultiEdit", "edit_file"),
    ("LS", "list_dir"),
    ("Glob", "glob"),
    ("Grep", "grep"),
    ("Bash", "run_shell"),
    ("WebFetch", "fetch_url"),
    ("TodoWrite", "todo_write"),
    ("Task", "task"),
];

/// Permission modes by their spelling folded ([`folded`]): ours, Claude Code's and the
/// reference's. Claude Code's `dontAsk` (deny what is not allowed beforehand) has no mode of
/// ours; `default` is the nearest that never runs more (it asks).
const MODE_ALIASES: &[(&str, &str)] = &[
    ("default", "default"),
    ("alwaysconfirm", "default"),
    ("dontask", "default"),
    ("acceptedits", "acceptEdits"),
    ("confirmrisky", "acceptEdits"),
    ("plan", "plan"),
    ("bypass", "bypass"),
    ("bypasspermissions", "bypass"),
    ("neverconfirm", "bypass"),
];

/// The keys agentd reads (each with its other names), as the first of each is written in
/// messages.
const KEYS: &[&[&str]] = &[
    &["name"],
    &["description"],
    &["tools"],
    &["disallowedTools"],
    &["skills"],
    &["model"],
    &["maxTurns", "max_iteration_per_run"],
    &["maxBudgetUsd", "max_budget_per_run"],
    &["maxTokens", "max_tokens_per_run"],
    &["permissionMode"],
    &["mcpServers", "mcp_config"],
    &["hooks"],
    &["background"],
];

/// Keys other tools define that agentd knows of but does not use: each is a warning saying so.
const NOT_USED: &[(&str, &str)] = &[
    ("color", "agentd shows no agent colours"),
    ("effort", "the child uses its provider's reasoning settings"),
    (
        "condenser",
        "the child compacts its context as every session does ([compaction] of config.toml)",
    ),
    (
        "memory",
        "a subagent never reads or writes memory in agentd",
    ),
    ("isolation", "the child works in its parent's workspace"),
    (
        "initialPrompt",
        "the task's prompt is the child's first message",
    ),
    (
        "profile_store_dir",
        "models are chosen by `model` among config.toml's providers",
    ),
    ("disabled", "remove or rename the file to disable the agent"),
];

/// The definition `document` (the file `path`) describes, or why it cannot be used.
pub(super) fn parse_definition(
    document: &Document<'_>,
    path: &Path,
    source: AgentSource,
    limits: &AgentLimits,
) -> Result<AgentDefinition, String> {
    let field = |keys: &[&str]| -> Result<Option<&Value>, String> {
        let wanted: Vec<String> = keys.iter().map(|key| folded(key)).collect();
        let mut found: Option<(&str, &Value)> = None;
        for (name, value) in &document.fields {
            if !wanted.contains(&folded(name)) {
                continue;
            }
            if let Some((first, _)) = found {
                return Err(format!(
                    "`{}` is given twice (as `{first}` and `{name}`); keep one",
                    keys[0]
                ));
            }
            found = Some((name, value));
        }
        Ok(found.map(|(_, value)| value))
    };
    let text = |keys: &[&str]| -> Result<Option<String>, String> {
        match field(keys)? {
            None => Ok(None),
            Some(Value::Text(text)) => Ok(Some(text.trim().to_owned()).filter(|t| !t.is_empty())),
            Some(Value::List(_) | Value::Nested(_)) => {
                Err(format!("`{}` must be one value, not a list", keys[0]))
            }
        }
    };
    let stem = path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = text(&["name"])?.unwrap_or(stem);
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' || c == ':')
    {
        return Err(format!(
            "`{name}` is not a usable name; use at most 64 letters, digits, `-`, `_`, `.` or `:`"
        ));
    }
    let description = text(&["description"])?
        .map(|text| text.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    if description.is_empty() {
        return Err(
            "it has no description; add `description: <when to use this agent>` to its frontmatter"
                .to_owned(),
        );
    }
    let description = cut(description, limits.max_description_chars);
    let tools = list(field(&["tools"])?).map(|tools| tools.into_iter().map(tool_name).collect());
    let disallowed_tools = list(field(&["disallowedTools"])?)
        .unwrap_or_default()
        .into_iter()
        .map(tool_name)
        .collect();
    let skills = list(field(&["skills"])?).unwrap_or_default();
    let model = text(&["model"])?.filter(|model| model != "inherit");
    let max_turns = match text(&["maxTurns", "max_iteration_per_run"])? {
        None => None,
        Some(raw) => Some(
            raw.parse::<u32>()
                .ok()
                .filter(|turns| *turns > 0)
                .ok_or_else(|| format!("maxTurns `{raw}` is not a positive whole number"))?,
        ),
    };
    let max_budget_usd = match text(&["maxBudgetUsd", "max_budget_per_run"])? {
        None => None,
        Some(raw) => Some(
            raw.trim_start_matches('$')
                .parse::<f64>()
                .ok()
                .filter(|budget| budget.is_finite() && *budget > 0.0)
                .ok_or_else(|| {
                    format!("maxBudgetUsd `{raw}` is not a positive number of dollars")
                })?,
        ),
    };
    let max_tokens = match text(&["maxTokens", "max_tokens_per_run"])? {
        None => None,
        Some(raw) => Some(
            raw.replace('_', "")
                .parse::<u64>()
                .ok()
                .filter(|tokens| *tokens > 0)
                .ok_or_else(|| format!("maxTokens `{raw}` is not a positive whole number"))?,
        ),
    };
    let permission_mode = match text(&["permissionMode"])? {
        None => None,
        Some(raw) => Some(permission_mode(&raw)?),
    };
    let mut warnings = unused_keys(document);
    let mcp_servers =
        field(&["mcpServers", "mcp_config"])?.map(|value| mcp_servers(value, &mut warnings));
    // A JSON text, or nested YAML as Claude Code writes it (kept as its JSON text).
    let hooks = match field(&["hooks"])? {
        Some(Value::Nested(value)) => Some(value.to_string()),
        _ => text(&["hooks"])?,
    };
    let background = match text(&["background"])?.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => return Err(format!("background `{other}` must be true or false")),
    };
    Ok(AgentDefinition {
        name,
        description,
        body: document.body.trim_start_matches(['\n', '\r']).to_owned(),
        tools,
        disallowed_tools,
        skills,
        model,
        max_turns,
        max_budget_usd,
        max_tokens,
        permission_mode,
        mcp_servers,
        hooks,
        hooks_digest: None,
        background,
        read_only: false,
        warnings,
        source,
    })
}

/// The `mcpServers` of `document` (any spelling), warnings dropped: what trust review shows.
pub(crate) fn mcp_servers_of(document: &Document<'_>) -> Option<AgentMcpServers> {
    let value = document
        .fields
        .iter()
        .find(|(name, _)| ["mcpservers", "mcpconfig"].contains(&folded(name).as_str()))
        .map(|(_, value)| value)?;
    Some(mcp_servers(value, &mut Vec::new()))
}

/// `mcpServers` as written: names, and servers defined inline as JSON objects (a list item
/// each, or one object of them all); what cannot be read is a warning.
fn mcp_servers(value: &Value, warnings: &mut Vec<String>) -> AgentMcpServers {
    let mut servers = AgentMcpServers::default();
    let items = match value {
        Value::List(items) => items.clone(),
        Value::Text(text) if text.trim_start().starts_with('{') => vec![text.clone()],
        Value::Text(text) => text.split(',').map(str::to_owned).collect(),
        // Nested YAML: a list of names and `name: {entry}` mappings, or servers by name.
        Value::Nested(serde_json::Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                serde_json::Value::String(name) => name.clone(),
                other => other.to_string(),
            })
            .collect(),
        Value::Nested(other) => vec![other.to_string()],
    };
    for item in items {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        if !item.starts_with('{') {
            if !servers.names.iter().any(|name| name == item) {
                servers.names.push(item.to_owned());
            }
            continue;
        }
        match serde_json::from_str::<serde_json::Value>(item) {
            Ok(serde_json::Value::Object(mut object)) => {
                // The whole `.mcp.json` pasted in: its `mcpServers`.
                if let Some(serde_json::Value::Object(inner)) = object.remove("mcpServers") {
                    object = inner;
                }
                for (name, entry) in object {
                    if servers.inline.contains_key(&name) {
                        warnings.push(format!(
                            "`mcpServers` defines `{name}` twice; the first is used"
                        ));
                        continue;
                    }
                    servers.inline.insert(name, entry);
                }
            }
            Ok(_) | Err(_) => warnings.push(format!(
                "an `mcpServers` item is neither a server name nor a JSON object of servers by name, so it is not used: {}",
                cut(item.to_owned(), 80)
            )),
        }
    }
    servers
}

/// A key folded for comparison: lowercase, without `_` and `-` (`permission_mode`,
/// `permissionMode` and `PermissionMode` are one key).
fn folded(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// A warning for each key of `document` agentd does not use: the ones it knows of say why,
/// the others are listed as unknown with the keys it reads.
fn unused_keys(document: &Document<'_>) -> Vec<String> {
    let mut warnings = Vec::new();
    for (name, _) in &document.fields {
        let key = folded(name);
        if KEYS
            .iter()
            .flat_map(|names| names.iter())
            .any(|known| folded(known) == key)
        {
            continue;
        }
        match NOT_USED.iter().find(|(known, _)| folded(known) == key) {
            Some((_, why)) => warnings.push(format!("`{name}` is not used: {why}")),
            None => warnings.push(format!(
                "`{name}` is not a key agentd knows, so it is not used; the keys are {}",
                KEYS.iter()
                    .map(|names| names[0])
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
    warnings
}

/// A list field: a YAML list or a comma list in one text (`Read, Grep`).
fn list(value: Option<&Value>) -> Option<Vec<String>> {
    let items = match value? {
        Value::List(items) => items.clone(),
        Value::Text(text) => text.split(',').map(str::to_owned).collect(),
        Value::Nested(value) => super::strings_of(value),
    };
    Some(
        items
            .into_iter()
            .map(|item| item.trim().to_owned())
            .filter(|item| !item.is_empty())
            .collect(),
    )
}

/// Our name of a tool named in Claude Code's spelling; other names as written (also for a
/// command file's `allowed-tools`).
pub(crate) fn tool_name(name: String) -> String {
    TOOL_ALIASES
        .iter()
        .find(|(theirs, _)| *theirs == name)
        .map(|(_, ours)| (*ours).to_owned())
        .unwrap_or(name)
}

/// Our mode name for `raw` (ours, Claude Code's or the reference's, in any of their
/// spellings), or the error listing them.
fn permission_mode(raw: &str) -> Result<String, String> {
    let key = folded(raw);
    MODE_ALIASES
        .iter()
        .find(|(theirs, _)| *theirs == key)
        .map(|(_, ours)| (*ours).to_owned())
        .ok_or_else(|| {
            format!(
                "permissionMode `{raw}` is unknown; use default, acceptEdits, plan, bypass (or bypassPermissions), dontAsk, always_confirm, confirm_risky or never_confirm"
            )
        })
}

/// `text` cut to `max` characters, with `…` when cut.
fn cut(text: String, max: usize) -> String {
    if text.chars().count() <= max {
        return text;
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}
