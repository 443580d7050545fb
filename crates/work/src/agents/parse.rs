//! The fields of one definition's frontmatter, in Claude Code's spelling and the reference's
//! (`disallowedTools`/`disallowed_tools`, `maxTurns`/`max_iteration_per_run`,
//! `maxBudgetUsd`/`max_budget_per_run`, `maxTokens`/`max_tokens_per_run`,
//! `permissionMode`/`permission_mode`).

use std::path::Path;

use super::{AgentDefinition, AgentLimits, AgentSource};
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

/// The reference's permission modes and ours.
const MODE_ALIASES: &[(&str, &str)] = &[
    ("alwaysConfirm", "default"),
    ("confirmRisky", "acceptEdits"),
    ("neverConfirm", "bypass"),
    ("bypassPermissions", "bypass"),
];

/// The definition `document` (the file `path`) describes, or why it cannot be used.
pub(super) fn parse_definition(
    document: &Document<'_>,
    path: &Path,
    source: AgentSource,
    limits: &AgentLimits,
) -> Result<AgentDefinition, String> {
    let field = |keys: &[&str]| -> Result<Option<&Value>, String> {
        let mut found = None;
        for key in keys {
            if let Some((_, value)) = document.fields.iter().find(|(name, _)| name == key) {
                if found.is_some() {
                    return Err(format!(
                        "`{}` is given twice ({}); keep one",
                        keys[0],
                        keys.join(" and ")
                    ));
                }
                found = Some(value);
            }
        }
        Ok(found)
    };
    let text = |keys: &[&str]| -> Result<Option<String>, String> {
        match field(keys)? {
            None => Ok(None),
            Some(Value::Text(text)) => Ok(Some(text.trim().to_owned()).filter(|t| !t.is_empty())),
            Some(Value::List(_)) => Err(format!("`{}` must be one value, not a list", keys[0])),
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
    let disallowed_tools = list(field(&["disallowedTools", "disallowed_tools"])?)
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
    let permission_mode = match text(&["permissionMode", "permission_mode"])? {
        None => None,
        Some(raw) => Some(permission_mode(&raw)?),
    };
    let mcp_servers = field(&["mcpServers", "mcp_servers"])?.cloned();
    let hooks = text(&["hooks"])?;
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
        source,
    })
}

/// A list field: a YAML list or a comma list in one text (`Read, Grep`).
fn list(value: Option<&Value>) -> Option<Vec<String>> {
    let items = match value? {
        Value::List(items) => items.clone(),
        Value::Text(text) => text.split(',').map(str::to_owned).collect(),
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

/// Our mode name for `raw` (ours or the reference's), or the error listing them.
fn permission_mode(raw: &str) -> Result<String, String> {
    if let Some((_, ours)) = MODE_ALIASES.iter().find(|(theirs, _)| *theirs == raw) {
        return Ok((*ours).to_owned());
    }
    protocol::approval::PermissionMode::ALL
        .iter()
        .find(|mode| mode.as_str() == raw)
        .map(|mode| mode.as_str().to_owned())
        .ok_or_else(|| {
            format!(
                "permissionMode `{raw}` is unknown; use default, acceptEdits, plan, bypass, alwaysConfirm, confirmRisky or neverConfirm"
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
