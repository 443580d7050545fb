//! Tests of the renderer's notes on stderr: each on its own line, and the notes of steers,
//! compaction, todo lists, tool set changes and the client itself.

use super::*;

#[test]
fn stderr_notes_start_on_their_own_line() {
    let mut h = Harness::plain_run();
    h.send(delta(RUN, "half"));
    h.send(Event::Error {
        run_id: Some(RUN.to_owned()),
        message: "429 too many requests".to_owned(),
        will_retry: true,
    });
    assert_eq!(h.stderr, "\nretrying: 429 too many requests\n");
    assert_eq!(h.stdout, "half");
}

#[test]
fn steer_and_follow_up_notes_in_run() {
    let mut h = Harness::plain_run();
    h.send(user(RUN, "the prompt", UserMessageKind::Prompt));
    h.send(Event::SteerDelivered {
        run_id: RUN.to_owned(),
        text: "use tabs".to_owned(),
    });
    h.send(user(RUN, "use tabs", UserMessageKind::Steer));
    h.send(user(RUN, "then push", UserMessageKind::FollowUp));
    h.send(Event::Warning {
        message: "context nearly full".to_owned(),
    });
    assert_eq!(h.stdout, "");
    assert_eq!(
        h.stderr,
        "steer delivered: use tabs\nfollow-up delivered: then push\nwarning: context nearly full\n"
    );
}

#[test]
fn compaction_notes_in_run() {
    let mut h = Harness::plain_run();
    h.send(Event::CompactionStarted {
        run_id: Some(RUN.to_owned()),
    });
    h.send(Event::CompactionCompleted {
        run_id: Some(RUN.to_owned()),
        tokens_before: 104_211,
        tokens_after: 18_302,
    });
    assert_eq!(h.stdout, "");
    assert_eq!(
        h.stderr,
        "compacting the conversation…\ncompacted: 104211 → about 18302 prompt tokens\n"
    );
}

#[test]
fn client_notes_clear_the_spinner_and_start_on_their_own_line() {
    let mut h = Harness::run(RenderOptions {
        json: false,
        stderr_is_tty: true,
        width: Some(80),
        color: false,
        markdown: None,
    });
    h.send(tool_started(RUN, "c1", "run_shell", "sleep 5"));
    let note = h.renderer.note("cancelling…");
    h.collect(note);
    assert!(
        h.stderr.ends_with("\r\x1b[2Kcancelling…\n"),
        "{:?}",
        h.stderr
    );
    let mut h = Harness::plain_run();
    h.send(delta(RUN, "half"));
    let note = h.renderer.note("cancelling…");
    h.collect(note);
    assert_eq!(h.stderr, "\ncancelling…\n");
}

#[test]
fn a_todo_list_is_printed_compactly_on_stderr() {
    use protocol::todo::{TodoItem, TodoStatus};
    let item = |content: &str, status| TodoItem {
        content: content.to_owned(),
        status,
    };
    let mut h = Harness::plain_run();
    h.send(Event::TodoUpdated {
        run_id: RUN.to_owned(),
        items: vec![
            item("read the code", TodoStatus::Completed),
            item("write the test\nwith details", TodoStatus::InProgress),
            item("fix it", TodoStatus::Pending),
        ],
    });
    h.send(Event::TodoUpdated {
        run_id: RUN.to_owned(),
        items: Vec::new(),
    });
    assert_eq!(h.stdout, "");
    assert_eq!(
        h.stderr,
        "todo (1/3 done):\n  [x] read the code\n  [>] write the test …\n  [ ] fix it\ntodo: (cleared)\n"
    );
}

#[test]
fn a_tool_set_change_is_one_line_on_stderr() {
    let mut h = Harness::plain_run();
    h.send(Event::ToolsChanged {
        run_id: RUN.to_owned(),
        added: vec!["mcp__time__now".to_owned()],
        removed: vec!["mcp__old__gone".to_owned()],
        changed: vec!["mcp__time__convert".to_owned()],
        initial: false,
        loaded: Vec::new(),
    });
    assert_eq!(h.stdout, "");
    assert_eq!(
        h.stderr,
        "tools changed: +mcp__time__now -mcp__old__gone ~mcp__time__convert\n"
    );
}

#[test]
fn a_tool_search_load_is_said_as_a_load() {
    let mut h = Harness::plain_run();
    h.send(Event::ToolsChanged {
        run_id: RUN.to_owned(),
        added: vec!["mcp__many__item_271".to_owned()],
        removed: Vec::new(),
        changed: Vec::new(),
        initial: false,
        loaded: vec!["mcp__many__item_271".to_owned()],
    });
    h.send(Event::ToolsChanged {
        run_id: RUN.to_owned(),
        added: vec!["mcp__a__b".to_owned(), "mcp__time__now".to_owned()],
        removed: Vec::new(),
        changed: Vec::new(),
        initial: false,
        loaded: vec!["mcp__a__b".to_owned()],
    });
    assert_eq!(
        h.stderr,
        "tools loaded: mcp__many__item_271\ntools loaded: mcp__a__b\ntools changed: +mcp__time__now\n"
    );
}

#[test]
fn the_tools_a_session_starts_with_are_not_announced() {
    let mut h = Harness::plain_run();
    h.send(Event::ToolsChanged {
        run_id: RUN.to_owned(),
        added: vec!["mcp__time__now".to_owned()],
        removed: Vec::new(),
        changed: Vec::new(),
        initial: true,
        loaded: Vec::new(),
    });
    assert_eq!((h.stdout.as_str(), h.stderr.as_str()), ("", ""));
}
