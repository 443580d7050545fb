//! Tests of the event → ACP update mapping.

use super::*;
use protocol::event::ToolCallInfo;
use serde_json::json;

fn to_json(updates: &[SessionUpdate]) -> serde_json::Value {
    serde_json::to_value(updates).unwrap()
}

fn assistant(content: &str, calls: &[(&str, &str, serde_json::Value)]) -> Event {
    Event::MessageCompleted {
        run_id: "run_1".into(),
        role: MessageRole::Assistant,
        content: content.into(),
        kind: None,
        tool_calls: calls
            .iter()
            .map(|(id, name, args)| ToolCallInfo {
                id: (*id).into(),
                name: (*name).into(),
                arguments: args.to_string(),
            })
            .collect(),
    }
}

#[test]
fn tool_kinds_come_from_tool_names() {
    let cases = [
        ("read_file", ToolKind::Read),
        ("edit_file", ToolKind::Edit),
        ("write_file", ToolKind::Edit),
        ("run_shell", ToolKind::Execute),
        ("grep", ToolKind::Search),
        ("glob", ToolKind::Search),
        ("list_dir", ToolKind::Search),
        ("fetch_url", ToolKind::Fetch),
        ("todo_write", ToolKind::Think),
        ("mcp__github__search", ToolKind::Other),
        ("task", ToolKind::Other),
    ];
    for (tool, kind) in cases {
        assert_eq!(tool_kind(tool), kind, "{tool}");
    }
}

#[test]
fn an_edit_is_a_pending_call_with_its_diff_and_absolute_location() {
    let mut translator = Translator::new("/work/ws");
    let event = assistant(
        "",
        &[(
            "call_1",
            "edit_file",
            json!({"path": "src/a.rs", "oldText": "x", "newText": "y"}),
        )],
    );
    let updates = to_json(&translator.updates(&event, Moment::Live));
    assert_eq!(updates.as_array().unwrap().len(), 1, "{updates}");
    let call = &updates[0];
    assert_eq!(call["sessionUpdate"], "tool_call");
    assert_eq!(call["toolCallId"], "call_1");
    assert_eq!(call["kind"], "edit");
    // `pending` is ACP's default status, left out on the wire.
    assert!(call.get("status").is_none_or(|s| s == "pending"), "{call}");
    assert_eq!(call["locations"][0]["path"], "/work/ws/src/a.rs");
    assert_eq!(call["content"][0]["type"], "diff");
    assert_eq!(call["content"][0]["oldText"], "x");
    assert_eq!(call["content"][0]["newText"], "y");

    let done = Event::ToolCompleted {
        run_id: "run_1".into(),
        tool_call_id: "call_1".into(),
        tool: "edit_file".into(),
        output: "edited".into(),
        is_error: false,
        duration_ms: 3,
    };
    let updates = to_json(&translator.updates(&done, Moment::Live));
    assert_eq!(updates[0]["sessionUpdate"], "tool_call_update");
    assert_eq!(updates[0]["status"], "completed");
    // The diff stays: a successful edit's content is not replaced by its output.
    assert!(updates[0].get("content").is_none(), "{updates}");
}

#[test]
fn streamed_text_is_not_repeated_but_replayed_text_is_shown() {
    let mut translator = Translator::new("/w");
    let delta = Event::MessageDelta {
        run_id: "run_1".into(),
        text: "hel".into(),
    };
    assert_eq!(
        to_json(&translator.updates(&delta, Moment::Live))[0]["content"]["text"],
        "hel"
    );
    let done = assistant("hello", &[]);
    assert!(translator.updates(&done, Moment::Live).is_empty());
    // Without deltas (a provider that does not stream, a replay) the message carries it.
    let updates = to_json(&translator.updates(&done, Moment::Live));
    assert_eq!(updates[0]["sessionUpdate"], "agent_message_chunk");
    let user = Event::MessageCompleted {
        run_id: "run_1".into(),
        role: MessageRole::User,
        content: "hi".into(),
        kind: None,
        tool_calls: Vec::new(),
    };
    assert!(translator.updates(&user, Moment::Live).is_empty());
    let updates = to_json(&translator.updates(&user, Moment::Replay));
    assert_eq!(updates[0]["sessionUpdate"], "user_message_chunk");
    assert_eq!(updates[0]["content"]["text"], "hi");
}

#[test]
fn todos_become_a_plan() {
    let mut translator = Translator::new("/w");
    let event = Event::TodoUpdated {
        run_id: "run_1".into(),
        items: vec![
            TodoItem {
                content: "a".into(),
                status: TodoStatus::Completed,
            },
            TodoItem {
                content: "b".into(),
                status: TodoStatus::InProgress,
            },
        ],
    };
    let updates = to_json(&translator.updates(&event, Moment::Live));
    assert_eq!(updates[0]["sessionUpdate"], "plan");
    assert_eq!(updates[0]["entries"][0]["status"], "completed");
    assert_eq!(updates[0]["entries"][1]["status"], "in_progress");
}

#[test]
fn open_calls_are_bounded() {
    let mut translator = Translator::new("/w");
    for n in 0..MAX_OPEN_TOOL_CALLS + 10 {
        let id = format!("c{n}");
        translator.updates(
            &assistant("", &[(id.as_str(), "read_file", json!({"path": "a"}))]),
            Moment::Live,
        );
    }
    assert_eq!(translator.calls.len(), MAX_OPEN_TOOL_CALLS);
}

#[test]
fn a_session_update_by_any_client_shows_its_mode_and_title() {
    let event = json!({"type": "sessionUpdated", "permissionMode": "plan", "title": "t"});
    let updates = to_json(&session_updated(&event));
    assert_eq!(updates[0]["sessionUpdate"], "current_mode_update");
    assert_eq!(updates[0]["currentModeId"], "plan");
    assert_eq!(updates[1]["sessionUpdate"], "session_info_update");
    assert_eq!(updates[1]["title"], "t");
    assert!(session_updated(&json!({"type": "sessionUpdated", "model": "m"})).is_empty());
}

#[test]
fn reasoning_is_a_thought_chunk_never_the_reply() {
    let mut translator = Translator::new("/w");
    let thinking = Event::ThinkingDelta {
        run_id: "run_1".into(),
        text: "weighing options".into(),
    };
    let updates = to_json(&translator.updates(&thinking, Moment::Live));
    assert_eq!(
        updates[0]["sessionUpdate"],
        json!("agent_thought_chunk"),
        "{updates}"
    );
    assert_eq!(
        updates[0]["content"]["text"],
        json!("weighing options"),
        "{updates}"
    );
    assert_eq!(updates.as_array().map(Vec::len), Some(1));
}

#[test]
fn usage_becomes_how_full_the_context_is() {
    let mut translator = Translator::new("/w");
    let usage = |input: u64, output: u64| protocol::event::Usage {
        input_tokens: input,
        output_tokens: output,
        cached_input_tokens: 0,
        cache_creation_input_tokens: 0,
        estimated: false,
    };
    let event = Event::UsageUpdated {
        run_id: "run_1".into(),
        usage: usage(53_000, 1_000),
        total: usage(90_000, 3_000),
        context_window: Some(200_000),
        total_cost_usd: None,
    };
    let updates = to_json(&translator.updates(&event, Moment::Live));
    assert_eq!(
        updates,
        json!([{"sessionUpdate": "usage_update", "used": 54_000, "size": 200_000}])
    );
    // An older daemon's event without a window says nothing.
    let old = Event::UsageUpdated {
        run_id: "run_1".into(),
        usage: usage(1, 1),
        total: usage(1, 1),
        context_window: None,
        total_cost_usd: None,
    };
    assert_eq!(translator.updates(&old, Moment::Live), Vec::new());
}
