//! Tests of the answer on a terminal's stdout: markdown rendered a block at a time through the
//! renderer, the open block waiting (and shown to a caller with live rows), "writing…" on the
//! activity line meanwhile, and the last tool result kept for `/expand`.

use super::*;

fn markdown_run(stderr_is_tty: bool) -> Harness {
    Harness::run(RenderOptions {
        json: false,
        stderr_is_tty,
        width: stderr_is_tty.then_some(80),
        color: false,
        markdown: Some(MarkdownOptions {
            color: false,
            width: 80,
        }),
    })
}

#[test]
fn blocks_are_written_once_complete_and_the_rest_when_the_message_ends() {
    let mut h = markdown_run(false);
    h.send(started(RUN));
    h.send(delta(RUN, "# Title\n\n- on"));
    assert_eq!(
        h.stdout, "",
        "the heading waits for the list's first whole line"
    );
    h.send(delta(RUN, "e\n"));
    assert_eq!(h.stdout, "# Title\n", "the list waits for what follows");
    h.send(delta(RUN, "- two\n\nAfter"));
    assert_eq!(
        h.stdout, "# Title\n",
        "a line being written is not judged yet"
    );
    h.send(delta(RUN, "\n"));
    assert_eq!(h.stdout, "# Title\n\n• one\n• two\n");
    assert_eq!(h.renderer.open_answer().as_deref(), Some("\nAfter\n"));
    h.send(assistant(
        RUN,
        "# Title\n\n- one\n- two\n\nAfter\nthe list.",
    ));
    assert_eq!(h.stdout, "# Title\n\n• one\n• two\n\nAfter\nthe list.\n");
    assert_eq!(h.renderer.open_answer(), None);
}

#[test]
fn a_run_that_stops_mid_answer_still_writes_its_open_block() {
    let mut h = markdown_run(false);
    h.send(started(RUN));
    h.send(delta(RUN, "Half a **para"));
    assert_eq!(h.stdout, "");
    h.send(finished(RUN, RunStatus::Cancelled, None));
    assert_eq!(h.stdout, "Half a **para\n");
}

#[test]
fn the_activity_line_says_writing_while_a_block_waits() {
    let mut h = markdown_run(true);
    h.send(started(RUN));
    h.send(Event::TurnStarted {
        run_id: RUN.to_owned(),
        step: 1,
    });
    h.send(delta(RUN, "Some text"));
    assert!(
        h.stderr.ends_with("writing… 0s · Ctrl-C to cancel"),
        "{:?}",
        h.stderr
    );
    h.send(assistant(RUN, "Some text"));
    assert_eq!(h.stdout, "Some text\n");
    assert!(h.renderer.status_line(80).is_none());
}

#[test]
fn the_last_tool_result_is_kept_whole() {
    let mut h = markdown_run(true);
    h.send(started(RUN));
    h.send(tool_started(RUN, "c1", "read_file", "a.txt"));
    h.send(Event::ToolCompleted {
        run_id: RUN.to_owned(),
        tool_call_id: "c1".to_owned(),
        tool: "read_file".to_owned(),
        output: "1\n2\n3\n4\n5\n".to_owned(),
        is_error: false,
        duration_ms: 3,
    });
    let result = h.renderer.last_result().expect("kept");
    assert_eq!(result.label, "read_file: a.txt");
    assert_eq!(result.output, "1\n2\n3\n4\n5\n");
    assert!(h.stderr.contains("  │ … 3 more lines"), "{:?}", h.stderr);
}
