//! What a hook reads on stdin: one JSON object with Claude Code's field names, the session's
//! (`session_id`, `transcript_path`, `cwd`, `permission_mode`, `hook_event_name`) and the
//! event's (`tool_name`, `tool_input`, `tool_use_id`, `tool_response`, `prompt`, `source`, …).

use serde_json::{Map, Value, json};

use super::{HookEnv, HookEvent, trigger_name};
use crate::intercept::Point;
use agentd_core::conversation::ToolCall;

/// The most characters of one text field (a prompt, a tool's output) put on stdin; a longer
/// one is cut in the middle (the input is written whole before a hook's output is read).
const MAX_FIELD_CHARS: usize = 256 * 1024;

/// The stdin of the hooks of `event` at `point`, as bytes.
pub(super) fn stdin_json(event: HookEvent, point: &Point<'_>, env: &HookEnv) -> Vec<u8> {
    let mut fields = Map::new();
    fields.insert("session_id".into(), json!(env.session_id));
    fields.insert(
        "transcript_path".into(),
        json!(env.transcript_path.display().to_string()),
    );
    fields.insert("cwd".into(), json!(env.cwd.display().to_string()));
    fields.insert("permission_mode".into(), json!(env.permission_mode));
    fields.insert("hook_event_name".into(), json!(event.name()));
    let mut add = |name: &str, value: Value| {
        fields.insert(name.to_owned(), value);
    };
    match point {
        Point::SessionStart { source } => add("source", json!(source)),
        Point::SessionEnd { reason } => add("reason", json!(reason)),
        Point::SubagentStart { agent_type } => add("agent_type", json!(agent_type)),
        Point::UserPrompt { text } => add("prompt", json!(bounded(text))),
        Point::ToolCall { call } => tool_fields(call, &mut add),
        Point::PermissionRequest { call, reason } => {
            tool_fields(call, &mut add);
            add("reason", json!(reason));
        }
        Point::ToolResult { call, output } => {
            tool_fields(call, &mut add);
            add("tool_response", json!(bounded(&output.content)));
            if output.is_error {
                add("error", json!(bounded(&output.content)));
            }
        }
        Point::Stop {
            stop_hook_active,
            last_message,
            agent_type,
        } => {
            add("stop_hook_active", json!(stop_hook_active));
            add("last_assistant_message", json!(bounded(last_message)));
            if let Some(agent_type) = agent_type {
                add("agent_type", json!(agent_type));
            }
        }
        Point::PreCompact { trigger, focus } => {
            add("trigger", json!(trigger_name(*trigger)));
            add("custom_instructions", json!(focus.unwrap_or_default()));
        }
        Point::PostCompact { trigger, summary } => {
            add("trigger", json!(trigger_name(*trigger)));
            if let Some(summary) = summary {
                add("compact_summary", json!(bounded(summary)));
            }
        }
        Point::Notification { message } => add("message", json!(message)),
        Point::Request { .. } | Point::ProviderRequest { .. } => {}
    }
    serde_json::to_vec(&Value::Object(fields)).unwrap_or_default()
}

/// `tool_name`, `tool_input` (the arguments as JSON, or as the text the model wrote when they
/// are not JSON) and `tool_use_id`.
fn tool_fields(call: &ToolCall, add: &mut impl FnMut(&str, Value)) {
    add("tool_name", json!(call.name));
    let input = serde_json::from_str::<Value>(&call.arguments)
        .unwrap_or_else(|_| json!(bounded(&call.arguments)));
    add("tool_input", input);
    add("tool_use_id", json!(call.id));
}

fn bounded(text: &str) -> String {
    agentd_core::truncate::truncate_middle(text, MAX_FIELD_CHARS).into_owned()
}
