//! The conversation vocabulary shared by the agent loop, the LLM providers, the tools and the
//! session store: messages, tool calls, tool specs and token usage. A message's text is at most
//! [`MAX_MESSAGE_CHARS`] so its event fits in a line. Provider-neutral; each
//! provider maps it to its own wire format.

use serde::{Deserialize, Serialize};

pub mod wire;

/// One message of a session's history, in the order the model saw it.
///
/// The history is append-only: the same messages serialised by the same provider code give the
/// same bytes, which keeps provider prompt caches hitting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    /// Text from the user (a prompt, a steer or a follow-up), and the images attached to a
    /// prompt (`session/prompt {images}`); absent from the file when there are none.
    User {
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ToolImage>,
    },
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
        /// Images the tool returned (MCP tools), sent with the result; absent from the file
        /// when there are none, so older sessions read and serialise exactly as before.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ToolImage>,
    },
}

/// An image a tool returned, sent to the model with the tool's result (Anthropic: an image
/// block in the `tool_result`; OpenAI: a `user` message after the tool messages), or one the
/// user attached to a prompt (an image block, an `image_url` part, in the user's message).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolImage {
    /// e.g. `image/png`.
    pub mime_type: String,
    /// Base64, as the tool (the MCP server) sent it.
    pub data: String,
}

impl Message {
    /// A user's message of text alone.
    pub fn user(content: impl Into<String>) -> Message {
        Message::User {
            content: content.into(),
            images: Vec::new(),
        }
    }
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
    /// Some of these counts are the daemon's estimate: the provider reported no usage
    /// (`agentd_llm`'s usage estimate). A sum is estimated when any part of it was.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
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
        self.estimated |= other.estimated;
    }
}

/// A change to what the model is sent, made on purpose (DESIGN §5 step 8): the history itself
/// stays whole in the session file; these are replayed on load so the view is rebuilt exactly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ContextChange {
    /// The results of these tool calls are sent as a placeholder from now on.
    #[serde(rename_all = "camelCase")]
    Cleared { tool_call_ids: Vec<String> },
    /// The history before message index `firstKept` is sent as `summary` from now on.
    #[serde(rename_all = "camelCase")]
    Compacted {
        summary: String,
        first_kept: usize,
        tokens_before: u64,
        tokens_after: u64,
    },
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
            estimated: false,
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
                estimated: false,
            }
        );
    }

    #[test]
    fn tool_images_are_stored_and_results_without_them_keep_their_old_shape() {
        let plain = Message::Tool {
            tool_call_id: "c1".into(),
            tool_name: "read_file".into(),
            content: "ok".into(),
            is_error: false,
            images: Vec::new(),
        };
        let line = serde_json::to_string(&plain).unwrap();
        assert_eq!(
            line,
            r#"{"role":"tool","toolCallId":"c1","toolName":"read_file","content":"ok","isError":false}"#
        );
        assert_eq!(serde_json::from_str::<Message>(&line).unwrap(), plain);
        let with_image = Message::Tool {
            tool_call_id: "c1".into(),
            tool_name: "read_file".into(),
            content: "ok".into(),
            is_error: false,
            images: vec![ToolImage {
                mime_type: "image/png".into(),
                data: "iVBORw0KGgo=".into(),
            }],
        };
        let line = serde_json::to_string(&with_image).unwrap();
        assert!(
            line.ends_with(r#","images":[{"mimeType":"image/png","data":"iVBORw0KGgo="}]}"#),
            "{line}"
        );
        assert_eq!(serde_json::from_str::<Message>(&line).unwrap(), with_image);
    }

    #[test]
    fn orphaned_tool_calls_are_those_without_results() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: "{}".into(),
        };
        let history = vec![
            Message::user("x"),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![call("a"), call("b")],
            },
            Message::Tool {
                tool_call_id: "a".into(),
                tool_name: "read_file".into(),
                content: "ok".into(),
                is_error: false,
                images: Vec::new(),
            },
        ];
        assert_eq!(
            orphaned_tool_calls(&history),
            vec![("b".to_owned(), "read_file".to_owned())]
        );
    }
}

/// Largest text of one message (model reply, user text) kept in the history, in chars. The
/// history is stored in the session file and sent in `session/event` lines and `session/get`;
/// at up to 6 bytes per char once JSON-escaped, one message stays far under the 16 MiB line
/// limit. About 250k tokens: more than any model's context window holds.
pub const MAX_MESSAGE_CHARS: usize = 1 << 20;

/// Room left in a cut message for the note saying what was cut, so that a cut message is
/// itself within the cap (cutting again changes nothing).
const CUT_NOTE_CHARS: usize = 64;

/// `text` cut to at most `MAX_MESSAGE_CHARS`, keeping its head and tail and saying how much
/// was left out between them. Cutting a cut text changes nothing.
pub fn cap_message_text(text: String) -> String {
    if text.len() <= MAX_MESSAGE_CHARS || text.chars().count() <= MAX_MESSAGE_CHARS {
        return text;
    }
    match crate::truncate::truncate_middle(&text, MAX_MESSAGE_CHARS - CUT_NOTE_CHARS) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(cut) => cut,
    }
}

/// `call` with arguments over `MAX_MESSAGE_CHARS` replaced by a note saying so. The note is
/// not JSON, so the call is never run: the executor answers it with an error the model reads
/// (cutting JSON in the middle could leave a call that means something else).
pub fn cap_tool_call(mut call: ToolCall) -> ToolCall {
    if call.arguments.len() <= MAX_MESSAGE_CHARS {
        return call;
    }
    let chars = call.arguments.chars().count();
    if chars > MAX_MESSAGE_CHARS {
        call.arguments = format!(
            "[arguments cut: {chars} chars, over the {MAX_MESSAGE_CHARS}-char limit of one message; the call was not run]"
        );
    }
    call
}

#[cfg(test)]
mod cap_tests {
    use super::*;

    #[test]
    fn oversized_tool_arguments_become_a_note_that_is_not_json() {
        let small = ToolCall {
            id: "c1".to_owned(),
            name: "read_file".to_owned(),
            arguments: r#"{"path":"a"}"#.to_owned(),
        };
        assert_eq!(cap_tool_call(small.clone()), small);
        let big = ToolCall {
            arguments: format!(r#"{{"path":"{}"}}"#, "a".repeat(MAX_MESSAGE_CHARS)),
            ..small
        };
        let cut = cap_tool_call(big);
        assert!(
            cut.arguments.starts_with("[arguments cut: "),
            "{}",
            cut.arguments
        );
        assert!(serde_json::from_str::<serde_json::Value>(&cut.arguments).is_err());
        assert_eq!(cut.id, "c1");
    }

    #[test]
    fn short_text_is_kept_whole() {
        assert_eq!(cap_message_text("hello".to_owned()), "hello");
        let exact = "é".repeat(MAX_MESSAGE_CHARS);
        assert_eq!(cap_message_text(exact.clone()), exact);
    }

    #[test]
    fn long_text_keeps_head_and_tail_and_says_what_was_cut() {
        let text = format!(
            "{}{}{}",
            "h".repeat(MAX_MESSAGE_CHARS),
            "z".repeat(10),
            "t".repeat(MAX_MESSAGE_CHARS)
        );
        let cut = cap_message_text(text);
        assert!(cut.starts_with(&"h".repeat(1000)));
        assert!(cut.ends_with(&"t".repeat(1000)));
        assert!(!cut.contains('z'));
        assert!(cut.contains(&format!(
            "[… {} chars omitted …]",
            MAX_MESSAGE_CHARS + 10 + CUT_NOTE_CHARS
        )));
        assert!(cut.chars().count() <= MAX_MESSAGE_CHARS);
        assert!(
            cap_message_text(cut.clone()) == cut,
            "cutting again changed it"
        );
    }
}
