//! What an MCP server may ask of agentd while one of its tools runs: a question for the user
//! (`elicitation/create`) and a call of the session's model (`sampling/createMessage`). The
//! connection routes each to the [`McpServerRequests`] of a call in flight on that server (the
//! run that made it implements it: events, answers, approvals, the model), so this crate never
//! names a session. MCP's `elicitation/create` carries no reference to the call that caused
//! it over stdio, so the request goes to the oldest call in flight on the server; a server
//! shared by two sessions that call it at once may ask the other one's user (documented). It
//! lives among the tools because a call's `ToolContext` carries it to the MCP tool.

use futures::future::BoxFuture;

pub use protocol::elicitation::ElicitationAction;

/// Where a call's server requests go: implemented by the run that makes the call.
pub trait McpServerRequests: Send + Sync {
    /// Ask the user `question`; resolves with how they answered (or how agentd decided for
    /// them: headless, timeout, cancel).
    fn elicit(&self, question: McpElicitation) -> BoxFuture<'_, McpElicitationAnswer>;

    /// Run `request` on the session's model once it is approved; the error is what the
    /// server is told (denied, failed).
    fn sample(&self, request: McpSampling) -> BoxFuture<'_, Result<McpSampled, String>>;
}

/// A server's question, its schema checked to be MCP's flat object of primitives.
#[derive(Clone, Debug, PartialEq)]
pub struct McpElicitation {
    pub server: String,
    pub message: String,
    /// The requested schema as the server sent it.
    pub requested_schema: serde_json::Value,
    /// The tool call in flight that the request was routed to.
    pub tool_call_id: Option<String>,
}

/// How a question was answered.
#[derive(Clone, Debug, PartialEq)]
pub struct McpElicitationAnswer {
    pub action: ElicitationAction,
    /// For `accept`: the answers.
    pub content: Option<serde_json::Map<String, serde_json::Value>>,
    /// Why it was declined or cancelled without a person's answer; sent to the server as
    /// `_meta.reason`.
    pub reason: Option<String>,
}

impl McpElicitationAnswer {
    /// Declined by agentd, saying why.
    pub fn declined(reason: impl Into<String>) -> Self {
        Self {
            action: ElicitationAction::Decline,
            content: None,
            reason: Some(reason.into()),
        }
    }
}

/// A server's `sampling/createMessage`, reduced to what agentd sends a model: text.
#[derive(Clone, Debug, PartialEq)]
pub struct McpSampling {
    pub server: String,
    pub system_prompt: Option<String>,
    /// The conversation, in order: `(true, text)` for the assistant's turns, `(false, text)`
    /// for the user's. Images and audio are described in words.
    pub messages: Vec<(bool, String)>,
    pub max_tokens: u32,
    /// The tool call in flight that the request was routed to.
    pub tool_call_id: Option<String>,
}

/// The model's answer to a sampling request.
#[derive(Clone, Debug, PartialEq)]
pub struct McpSampled {
    pub text: String,
    pub model: String,
    /// `endTurn` or `maxTokens`.
    pub stop_reason: Option<String>,
}

/// What the calls of one run hand the server: where its requests go, and the call's id.
#[derive(Clone)]
pub struct CallAsker {
    pub requests: std::sync::Arc<dyn McpServerRequests>,
    pub tool_call_id: Option<String>,
}

/// Why `schema` is not what MCP allows an elicitation to ask for (an object whose properties
/// are strings, numbers, integers or booleans, enums of strings included), or None when it is.
pub fn schema_problem(schema: &serde_json::Value) -> Option<String> {
    let Some(object) = schema.as_object() else {
        return Some("the requested schema is not an object".to_owned());
    };
    if object.get("type").and_then(|kind| kind.as_str()) != Some("object") {
        return Some("the requested schema's type is not \"object\"".to_owned());
    }
    let Some(properties) = object.get("properties").and_then(|p| p.as_object()) else {
        return Some("the requested schema has no properties".to_owned());
    };
    for (name, property) in properties {
        match property_kind(property) {
            Some(_) => {}
            None => {
                return Some(format!(
                    "property {name:?} of the requested schema is not a string, number, integer, boolean or enum"
                ));
            }
        }
    }
    None
}

/// The primitive type of one property of an elicitation schema (`string`, `number`,
/// `integer`, `boolean`), or None when it is something else.
pub fn property_kind(property: &serde_json::Value) -> Option<&str> {
    match property.get("type").and_then(|kind| kind.as_str()) {
        Some(kind @ ("string" | "number" | "integer" | "boolean")) => Some(kind),
        // A single-select enum may come as `oneOf` of `const`s without a type (MCP 2025-11).
        None if property.get("enum").is_some() || property.get("oneOf").is_some() => Some("string"),
        _ => None,
    }
}

/// The answers `content` checked against `schema` (already known to be flat): each value of
/// its property's type (an enum's value one of it), the required ones present (a missing one
/// takes its `default`), no unknown property; returns them with the defaults filled in, or
/// what is wrong, naming the property.
pub fn check_answers(
    schema: &serde_json::Value,
    content: &serde_json::Map<String, serde_json::Value>,
) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    let empty = serde_json::Map::new();
    let properties = schema
        .get("properties")
        .and_then(|p| p.as_object())
        .unwrap_or(&empty);
    for name in content.keys() {
        if !properties.contains_key(name) {
            let known: Vec<&str> = properties.keys().map(String::as_str).collect();
            return Err(format!(
                "the question has no field {:?}; its fields are: {}",
                protocol::error::echo(name),
                known.join(", ")
            ));
        }
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(|r| r.as_array())
        .map(|names| names.iter().filter_map(|n| n.as_str()).collect())
        .unwrap_or_default();
    let mut answers = serde_json::Map::new();
    for (name, property) in properties {
        let value = match content.get(name) {
            Some(value) => value.clone(),
            None => match property.get("default") {
                Some(default) => default.clone(),
                None if required.contains(&name.as_str()) => {
                    return Err(format!("the field {name:?} is required"));
                }
                None => continue,
            },
        };
        check_value(name, property, &value)?;
        answers.insert(name.clone(), value);
    }
    Ok(answers)
}

fn check_value(
    name: &str,
    property: &serde_json::Value,
    value: &serde_json::Value,
) -> Result<(), String> {
    let kind = property_kind(property).unwrap_or("string");
    let fits = match kind {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        "boolean" => value.is_boolean(),
        _ => false,
    };
    if !fits {
        return Err(format!(
            "the field {name:?} must be of type {kind}, not {value}"
        ));
    }
    let choices = enum_values(property);
    if !choices.is_empty() && !choices.iter().any(|choice| choice == value) {
        let listed: Vec<String> = choices.iter().map(|c| c.to_string()).collect();
        return Err(format!(
            "the field {name:?} must be one of {}, not {value}",
            listed.join(", ")
        ));
    }
    Ok(())
}

/// The values an enum property allows (`enum`, or the `const`s of `oneOf`); empty when it is
/// not an enum.
pub fn enum_values(property: &serde_json::Value) -> Vec<serde_json::Value> {
    if let Some(values) = property.get("enum").and_then(|e| e.as_array()) {
        return values.clone();
    }
    property
        .get("oneOf")
        .and_then(|o| o.as_array())
        .map(|options| {
            options
                .iter()
                .filter_map(|option| option.get("const").cloned())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "age": {"type": "integer", "default": 30},
                "colour": {"type": "string", "enum": ["red", "green"]},
                "ok": {"type": "boolean"}
            },
            "required": ["name"]
        })
    }

    fn answers(value: serde_json::Value) -> Result<serde_json::Value, String> {
        check_answers(&schema(), value.as_object().unwrap()).map(serde_json::Value::Object)
    }

    #[test]
    fn answers_are_checked_against_the_schema_and_take_defaults() {
        assert_eq!(schema_problem(&schema()), None);
        assert_eq!(
            answers(json!({"name": "Ada"})).unwrap(),
            json!({"name": "Ada", "age": 30})
        );
        assert!(
            answers(json!({}))
                .unwrap_err()
                .contains("\"name\" is required")
        );
        assert!(
            answers(json!({"name": "Ada", "age": "old"}))
                .unwrap_err()
                .contains("must be of type integer")
        );
        assert!(
            answers(json!({"name": "Ada", "colour": "blue"}))
                .unwrap_err()
                .contains("one of \"red\", \"green\"")
        );
        assert!(
            answers(json!({"name": "Ada", "shoe": 1}))
                .unwrap_err()
                .contains("no field \"shoe\"")
        );
    }

    #[test]
    fn a_nested_schema_is_not_a_form() {
        let nested = json!({"type": "object", "properties": {"a": {"type": "object"}}});
        assert!(schema_problem(&nested).unwrap().contains("\"a\""));
        assert!(schema_problem(&json!({"type": "array"})).is_some());
    }
}
