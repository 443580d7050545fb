//! Unit tests of the context view: windows, clearing, compaction cuts.

use super::*;
use agentd_core::conversation::ToolCall;

fn user(text: &str) -> Message {
    Message::user(text)
}

fn call(id: &str) -> Message {
    Message::Assistant {
        content: String::new(),
        tool_calls: vec![ToolCall {
            id: id.to_owned(),
            name: "read_file".to_owned(),
            arguments: "{}".to_owned(),
        }],
    }
}

fn result(id: &str, content: &str) -> Message {
    // A loaded skill's result comes from load_skill; everything else from read_file.
    let tool_name = if content.starts_with("[skill] ") {
        "load_skill"
    } else {
        "read_file"
    };
    Message::Tool {
        tool_call_id: id.to_owned(),
        tool_name: tool_name.to_owned(),
        content: content.to_owned(),
        is_error: false,
        images: Vec::new(),
    }
}

#[test]
fn windows_come_from_config_then_the_table_then_the_default() {
    let check = |model: &str, configured: Option<u64>, expect: u64| {
        assert_eq!(context_window(model, configured), expect, "{model}");
    };
    check("gpt-4o-mini", None, 128_000);
    check("gpt-4.1-nano", None, 1_047_576);
    check("o3-mini", None, 200_000);
    check("o4-mini", None, 200_000);
    check("claude-sonnet-4-5", None, 200_000);
    check("anthropic/claude-3-haiku", None, 200_000);
    check("llama3.1:8b", None, DEFAULT_CONTEXT_WINDOW);
    check("claude-sonnet-4-5", Some(32_768), 32_768);
    check("mystery", Some(0), DEFAULT_CONTEXT_WINDOW);
    assert_eq!(
        ContextLimits::new(1000, 50, 80),
        ContextLimits {
            window: 1000,
            soft: 500,
            hard: 800
        }
    );
}

#[test]
fn clearing_keeps_the_three_newest_results_and_skills() {
    let mut history = vec![user("go")];
    for (id, content) in [
        ("a", "old a"),
        ("s", "[skill] deploy\nsteps"),
        ("r", "[skill] a file that only looks like a skill"),
        ("b", "old b"),
        ("c", "c"),
        ("d", "d"),
        ("e", "e"),
    ] {
        history.push(call(id));
        history.push(result(id, content));
    }
    let mut state = ContextState::default();
    // Only load_skill's results are skills: a file that starts like one is cleared.
    for message in &mut history {
        if let Message::Tool {
            tool_call_id,
            tool_name,
            ..
        } = message
            && tool_call_id == "r"
        {
            *tool_name = "read_file".to_owned();
        }
    }
    assert_eq!(state.clearable(&history), vec!["a", "r", "b"]);
    state.apply(&ContextChange::Cleared {
        tool_call_ids: state.clearable(&history),
    });
    assert!(state.clearable(&history).is_empty(), "cleared ones stay so");
    let view = state.view(&history);
    assert_eq!(view.len(), history.len());
    let contents: Vec<&str> = view
        .iter()
        .filter_map(|m| match m {
            Message::Tool { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        contents,
        vec![
            CLEARED_PLACEHOLDER,
            "[skill] deploy\nsteps",
            CLEARED_PLACEHOLDER,
            CLEARED_PLACEHOLDER,
            "c",
            "d",
            "e"
        ]
    );
}

#[test]
fn limits_fire_once_until_the_prompt_goes_back_under_them() {
    let limits = ContextLimits {
        window: 100,
        soft: 50,
        hard: 80,
    };
    let mut state = ContextState {
        soft_fired: true,
        hard_fired: true,
        ..ContextState::default()
    };
    state.note_prompt_tokens(60, limits);
    assert!(state.soft_fired && !state.hard_fired);
    state.note_prompt_tokens(10, limits);
    assert!(!state.soft_fired && !state.hard_fired);
    assert_eq!(state.last_prompt_tokens, 10);
}

#[test]
fn compaction_keeps_the_last_two_user_turns_and_their_tool_results() {
    let history = vec![
        user("one"),
        call("a"),
        result("a", "ra"),
        user("two"),
        call("b"),
        result("b", "rb"),
        user("three"),
        call("c"),
        result("c", "rc"),
    ];
    let mut state = ContextState::default();
    assert_eq!(state.compaction_cut(&history[..6]), None, "only two turns");
    let cut = state.compaction_cut(&history);
    assert_eq!(cut, Some(3));
    let input = state.summary_input(&history, 3, 10_000);
    assert_eq!(
        input,
        "[user] one\n[assistant] \n[tool call] read_file({})\n[tool result: read_file] ra"
    );
    state.apply(&ContextChange::Compacted {
        summary: "did one".to_owned(),
        first_kept: 3,
        tokens_before: 100,
        tokens_after: 40,
    });
    let view = state.view(&history);
    assert_eq!(view.len(), 2 + 6);
    assert_eq!(view[0], user(&format!("{SUMMARY_INTRO}\ndid one")));
    assert_eq!(&view[2..], &history[3..]);
    assert_eq!(state.compaction_cut(&history), None, "two turns left");

    // A second compaction summarises the first summary too.
    let mut longer = history.clone();
    longer.push(user("four"));
    assert_eq!(state.compaction_cut(&longer), Some(6));
    let input = state.summary_input(&longer, 6, 10_000);
    assert!(
        input.starts_with("[earlier summary]\ndid one\n[user] two"),
        "{input}"
    );
    assert!(!input.contains("three"), "{input}");
    let short = state.summary_input(&longer, 6, 40);
    assert!(short.chars().count() <= 40 + 32, "{short}");
    assert!(short.contains("chars omitted"), "{short}");
    assert!(short.starts_with("[earlier summary]"), "{short}");
}

#[test]
fn a_cut_never_separates_a_tool_call_from_its_result() {
    // A user message between a call and its result (a repaired history): the cut moves to an
    // earlier turn, or there is none.
    let history = vec![
        user("one"),
        user("two"),
        call("a"),
        user("three"),
        result("a", "ra"),
        user("four"),
    ];
    let state = ContextState::default();
    assert_eq!(state.compaction_cut(&history), Some(1));
    assert_eq!(state.compaction_cut(&history[1..]), None);
}

#[test]
fn estimates_scale_with_size() {
    assert_eq!(estimate_tokens(1000, 900, 400, 100), 500);
    assert_eq!(estimate_tokens(0, 900, 400, 100), 125);
}
