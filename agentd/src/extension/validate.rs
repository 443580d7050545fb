//! What `extension/register` accepts: the grammar of names (so `ext__<name>__<tool>` splits one
//! way and needs no sanitising), bounded counts and sizes, schemas that are objects, no name
//! twice. Each refusal says what to change.

use std::collections::HashSet;

use protocol::extension::ExtensionRegisterParams;

/// Longest extension name.
pub const MAX_NAME_CHARS: usize = 32;
/// Longest name the model is offered (the providers' limit, as for MCP tools).
pub const MAX_TOOL_NAME_CHARS: usize = 64;
/// Tools and commands one extension may declare.
pub const MAX_TOOLS: usize = 32;
pub const MAX_COMMANDS: usize = 32;
/// A tool's description is written for the model: bounded like a prompt section.
pub const MAX_DESCRIPTION_CHARS: usize = 4096;
/// A command's description and argument hint are one line of a listing.
pub const MAX_COMMAND_TEXT_CHARS: usize = 512;
/// An input schema as JSON text; every request of the session carries it.
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;

/// Why a registration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// The declaration itself is wrong.
    #[error("{0}")]
    Invalid(String),
    /// A live extension already has the name.
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    TooMany(String),
}

/// What a valid declaration yields: its tools' exposed names, in order.
pub struct Declared {
    pub tool_names: Vec<String>,
}

/// Checks a registration; Ok gives the names its tools are offered under.
pub fn check(params: &ExtensionRegisterParams) -> Result<Declared, RegisterError> {
    let invalid = |message: String| Err(RegisterError::Invalid(message));
    if let Err(why) = name_grammar(&params.name, MAX_NAME_CHARS) {
        return invalid(format!("extension name: {why}"));
    }
    if params.tools.len() > MAX_TOOLS {
        return invalid(format!(
            "{} tools declared, the limit is {MAX_TOOLS}",
            params.tools.len()
        ));
    }
    if params.commands.len() > MAX_COMMANDS {
        return invalid(format!(
            "{} commands declared, the limit is {MAX_COMMANDS}",
            params.commands.len()
        ));
    }
    let mut seen = HashSet::new();
    let mut tool_names = Vec::with_capacity(params.tools.len());
    for tool in &params.tools {
        if let Err(why) = name_grammar(&tool.name, MAX_TOOL_NAME_CHARS) {
            return invalid(format!("tool name: {why}"));
        }
        if !seen.insert(tool.name.as_str()) {
            return invalid(format!("the tool {:?} is declared twice", tool.name));
        }
        let exposed = format!("ext__{}__{}", params.name, tool.name);
        if exposed.len() > MAX_TOOL_NAME_CHARS {
            return invalid(format!(
                "the tool {:?} would be offered as {exposed:?}, {} chars: the limit is {MAX_TOOL_NAME_CHARS}; shorten the extension's or the tool's name",
                tool.name,
                exposed.len()
            ));
        }
        if tool.description.chars().count() > MAX_DESCRIPTION_CHARS {
            return invalid(format!(
                "the description of the tool {:?} is over {MAX_DESCRIPTION_CHARS} chars",
                tool.name
            ));
        }
        let Some(schema) = tool.input_schema.as_object() else {
            return invalid(format!(
                "the inputSchema of the tool {:?} must be a JSON Schema object, like {{\"type\": \"object\", \"properties\": {{}}}}",
                tool.name
            ));
        };
        if schema
            .get("type")
            .is_some_and(|kind| kind != &serde_json::Value::from("object"))
        {
            return invalid(format!(
                "the inputSchema of the tool {:?} must describe an object (\"type\": \"object\"): tool arguments are objects",
                tool.name
            ));
        }
        let bytes = tool.input_schema.to_string().len();
        if bytes > MAX_SCHEMA_BYTES {
            return invalid(format!(
                "the inputSchema of the tool {:?} is {bytes} bytes, the limit is {MAX_SCHEMA_BYTES}",
                tool.name
            ));
        }
        tool_names.push(exposed);
    }
    let mut seen = HashSet::new();
    for command in &params.commands {
        if let Err(why) = name_grammar(&command.name, MAX_NAME_CHARS) {
            return invalid(format!("command name: {why}"));
        }
        if !seen.insert(command.name.as_str()) {
            return invalid(format!("the command {:?} is declared twice", command.name));
        }
        let hint = command.argument_hint.as_deref().unwrap_or("");
        if command.description.chars().count() > MAX_COMMAND_TEXT_CHARS
            || hint.chars().count() > MAX_COMMAND_TEXT_CHARS
        {
            return invalid(format!(
                "the description or argument hint of the command {:?} is over {MAX_COMMAND_TEXT_CHARS} chars",
                command.name
            ));
        }
    }
    let mut seen = HashSet::new();
    for event in &params.events {
        if !seen.insert(event) {
            return invalid(format!("the event {:?} is listed twice", event.name()));
        }
    }
    Ok(Declared { tool_names })
}

/// Letters, digits, `-` and `_`, starting and ending with a letter or digit, no `__` (the
/// separator of `ext__<name>__<tool>`), at most `max` chars.
fn name_grammar(name: &str, max: usize) -> Result<(), String> {
    let shown = protocol::error::echo(name);
    if name.is_empty() {
        return Err("it is empty".to_owned());
    }
    if name.len() > max {
        return Err(format!("{shown:?} is over {max} chars"));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let ends = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !name.chars().all(allowed) || !ends(name.chars().next()) || !ends(name.chars().last()) {
        return Err(format!(
            "{shown:?} may hold only ASCII letters, digits, '-' and '_', and must start and end with a letter or digit"
        ));
    }
    if name.contains("__") {
        return Err(format!(
            "{shown:?} holds \"__\", which separates the parts of a tool's name"
        ));
    }
    Ok(())
}
