//! The wire forms of conversation types (`protocol`'s usage, tool calls and history messages),
//! beside the types they convert, so the run, the store and the session build them one way.

use protocol::event::ToolCallInfo;
use protocol::session::HistoryMessage;

use super::{Message, ToolCall, Usage, cap_message_text, cap_tool_call};

/// Token usage as the wire reports it.
pub fn usage(usage: &Usage) -> protocol::event::Usage {
    protocol::event::Usage {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cached_input_tokens: usage.cached_input_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens,
        estimated: usage.estimated,
    }
}

/// Token usage read back from a persisted event (`usageUpdated`).
pub fn usage_from(wire: &protocol::event::Usage) -> Usage {
    Usage {
        input_tokens: wire.input_tokens,
        output_tokens: wire.output_tokens,
        cached_input_tokens: wire.cached_input_tokens,
        cache_creation_input_tokens: wire.cache_creation_input_tokens,
        estimated: wire.estimated,
    }
}

/// A tool call as events and history show it.
pub fn tool_call(call: &ToolCall) -> ToolCallInfo {
    ToolCallInfo {
        id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
    }
}

/// The wire form of a history message. Text is capped again here: a session written before
/// messages were capped may hold longer ones.
pub fn history_message(message: &Message) -> HistoryMessage {
    match message {
        Message::User { content, images } => HistoryMessage::User {
            content: cap_message_text(content.clone()),
            image_count: u32::try_from(images.len()).unwrap_or(u32::MAX),
        },
        Message::Assistant {
            content,
            tool_calls,
        } => HistoryMessage::Assistant {
            content: cap_message_text(content.clone()),
            tool_calls: tool_calls
                .iter()
                .map(|call| tool_call(&cap_tool_call(call.clone())))
                .collect(),
        },
        Message::Tool {
            tool_call_id,
            tool_name,
            content,
            is_error,
            ..
        } => HistoryMessage::Tool {
            tool_call_id: tool_call_id.clone(),
            tool_name: tool_name.clone(),
            content: cap_message_text(content.clone()),
            is_error: *is_error,
        },
    }
}
