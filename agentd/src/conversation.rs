//! The conversation vocabulary shared by the agent loop, the LLM providers, the tools and the
//! session store: messages, tool calls, tool specs and token usage. Provider-neutral; each
//! provider maps it to its own wire format.

use serde::{Deserialize, Serialize};

/// One message of a session's history, in the order the model saw it.
///
/// The history is append-only: the same messages serialised by the same provider code give the
/// same bytes, which keeps provider prompt caches hitting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    /// Text from the user (a prompt, a steer or a follow-up).
    User { content: String },
    /// What the model said: text (may be empty) and the tool calls it made, in its order.
    #[serde(rename_all = "camelCase")]
    Assistant {
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call; every tool call gets exactly one.
    #[serde(rename_all = "camelCase")]
    Tool {
        tool_call_id: String,
        tool_name: String,
        content: String,
        #[serde(default)]
        is_error: bool,
    },
}

/// A tool call as the model made it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call; results refer to it.
    pub id: String,
    pub name: String,
    /// The arguments as the raw JSON text the model produced (possibly malformed). Kept as text
    /// so the request sent back to the provider carries exactly what the model wrote.
    pub arguments: String,
}

/// A tool as offered to the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema of the input object.
    pub input_schema: serde_json::Value,
}

/// Token usage of one model call (or a sum of several).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens, including cached ones.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's prefix cache.
    pub cached_input_tokens: u64,
    /// Prompt tokens written to the provider's cache (Anthropic).
    pub cache_creation_input_tokens: u64,
}

impl Usage {
    /// Adds `other`, saturating: the counts come from the model endpoint, and a hostile or
    /// broken one must not overflow a session's totals.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cached_input_tokens = self
            .cached_input_tokens
            .saturating_add(other.cached_input_tokens);
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .saturating_add(other.cache_creation_input_tokens);
    }
}

/// Tool calls of the last assistant message that have no result yet.
pub fn orphaned_tool_calls(history: &[Message]) -> Vec<(String, String)> {
    let Some(position) = history
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { .. }))
    else {
        return Vec::new();
    };
    let Message::Assistant { tool_calls, .. } = &history[position] else {
        return Vec::new();
    };
    tool_calls
        .iter()
        .filter(|call| {
            !history[position + 1..].iter().any(
                |m| matches!(m, Message::Tool { tool_call_id, .. } if *tool_call_id == call.id),
            )
        })
        .map(|call| (call.id.clone(), call.name.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_sums_saturate() {
        let huge = Usage {
            input_tokens: u64::MAX,
            output_tokens: u64::MAX - 1,
            cached_input_tokens: 7,
            cache_creation_input_tokens: u64::MAX,
        };
        let mut total = huge;
        total.add(&huge);
        assert_eq!(
            total,
            Usage {
                input_tokens: u64::MAX,
                output_tokens: u64::MAX,
                cached_input_tokens: 14,
                cache_creation_input_tokens: u64::MAX,
            }
        );
    }

    #[test]
    fn orphaned_tool_calls_are_those_without_results() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: "{}".into(),
        };
        let history = vec![
            Message::User {
                content: "x".into(),
            },
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![call("a"), call("b")],
            },
            Message::Tool {
                tool_call_id: "a".into(),
                tool_name: "read_file".into(),
                content: "ok".into(),
                is_error: false,
            },
        ];
        assert_eq!(
            orphaned_tool_calls(&history),
            vec![("b".to_owned(), "read_file".to_owned())]
        );
    }
}
