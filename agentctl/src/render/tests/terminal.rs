//! Tests of what the renderer draws for a terminal: plain tool lines without one, the activity
//! line redrawn in place on a TTY, and a caller that draws that line itself.

use super::*;

#[test]
fn tool_lines_when_stderr_is_not_a_tty() {
    let mut h = Harness::plain_run();
    h.send(tool_started(RUN, "c1", "run_shell", "cargo test\n--quiet"));
    h.send(tool_completed(RUN, "c1", "run_shell", false, 12));
    h.send(tool_started(RUN, "c2", "read_file", "src/main.rs"));
    h.send(tool_completed(RUN, "c2", "read_file", true, 1500));
    assert_eq!(
        h.stderr,
        "[tool] run_shell: cargo test …\n\
         [tool] run_shell done (12 ms)\n\
         [tool] read_file: src/main.rs\n\
         [tool] read_file failed (1.5 s): no such file …\n"
    );
    assert!(!h.stderr.contains('\x1b'));
}

#[test]
fn tool_spinner_on_a_tty_is_replaced_by_a_result_line() {
    let mut h = Harness::run(RenderOptions {
        json: false,
        stderr_is_tty: true,
        width: Some(80),
        color: false,
        markdown: None,
    });
    h.send(tool_started(RUN, "c1", "run_shell", "ls"));
    assert_eq!(h.stderr, "\r\x1b[2K⠋ run_shell: ls");
    let tick = h.renderer.tick();
    h.collect(tick);
    assert!(
        h.stderr.ends_with("\r\x1b[2K⠙ run_shell: ls"),
        "{:?}",
        h.stderr
    );
    h.send(tool_completed(RUN, "c1", "run_shell", false, 40));
    assert!(
        // The result's first rows under it.
        h.stderr
            .ends_with("\r\x1b[2K✓ run_shell: ls (40 ms)\n  │ ok\n"),
        "{:?}",
        h.stderr
    );
    // Nothing active: ticking draws nothing.
    assert!(h.renderer.tick().is_empty());
}

#[test]
fn parallel_tools_on_a_tty_show_how_many_more_run() {
    let mut h = Harness::run(RenderOptions {
        json: false,
        stderr_is_tty: true,
        width: Some(80),
        color: false,
        markdown: None,
    });
    h.send(tool_started(RUN, "c1", "read_file", "a"));
    h.send(tool_started(RUN, "c2", "read_file", "b"));
    assert!(
        h.stderr.ends_with("read_file: b (+1 more)"),
        "{:?}",
        h.stderr
    );
    h.send(tool_completed(RUN, "c1", "read_file", true, 3));
    assert!(
        h.stderr.ends_with(
            "✗ read_file: a (3 ms)\n  │ no such file\n  │ more\n\r\x1b[2K⠋ read_file: b"
        ),
        "{:?}",
        h.stderr
    );
}

#[test]
fn the_spinner_is_cleared_before_text_and_never_drawn_over_open_stdout() {
    let mut h = Harness::run(RenderOptions {
        json: false,
        stderr_is_tty: true,
        width: Some(80),
        color: false,
        markdown: None,
    });
    h.send(tool_started(RUN, "c1", "grep", "todo"));
    let before = h.stderr.clone();
    h.send(delta(RUN, "thinking"));
    assert_eq!(h.stderr, format!("{before}\r\x1b[2K"));
    // Stdout's line is open: a tick must not erase it.
    assert!(h.renderer.tick().is_empty());
    let finish = h.renderer.finish();
    h.collect(finish);
    assert_eq!(h.stdout, "thinking\n");
}

#[test]
fn a_terminal_of_unknown_width_gets_plain_lines_with_the_tools_progress() {
    let mut h = Harness::run(RenderOptions {
        json: false,
        stderr_is_tty: true,
        width: None,
        color: false,
        markdown: None,
    });
    h.send(Event::TurnStarted {
        run_id: RUN.to_owned(),
        step: 1,
    });
    h.send(tool_started(RUN, "c1", "run_shell", "make"));
    h.send(Event::ToolProgress {
        run_id: RUN.to_owned(),
        tool_call_id: "c1".to_owned(),
        message: "3 lines, 40 bytes of output: CC a.o".to_owned(),
    });
    assert!(h.renderer.tick().is_empty());
    assert_eq!(
        h.stderr,
        "[tool] run_shell: make\n[tool] … 3 lines, 40 bytes of output: CC a.o\n"
    );
}

#[test]
fn the_activity_line_shows_thinking_then_the_tool_with_its_time_and_output_tail() {
    let mut h = Harness::run(RenderOptions {
        json: false,
        stderr_is_tty: true,
        width: Some(80),
        color: false,
        markdown: None,
    });
    let start = h.now;
    h.send(Event::TurnStarted {
        run_id: RUN.to_owned(),
        step: 1,
    });
    assert_eq!(h.stderr, "\r\x1b[2K⠋ thinking… 0s · Ctrl-C to cancel");
    let tick = h
        .renderer
        .tick_at(start + std::time::Duration::from_secs(4));
    h.collect(tick);
    assert!(
        h.stderr
            .ends_with("\r\x1b[2K⠙ thinking… 4s · Ctrl-C to cancel"),
        "{:?}",
        h.stderr
    );
    h.now = start + std::time::Duration::from_secs(5);
    h.send(tool_started(RUN, "c1", "run_shell", "make"));
    h.send(Event::ToolProgress {
        run_id: RUN.to_owned(),
        tool_call_id: "c1".to_owned(),
        message: "3 lines, 40 bytes of output: CC a.o".to_owned(),
    });
    let tick = h
        .renderer
        .tick_at(start + std::time::Duration::from_secs(8));
    h.collect(tick);
    assert!(
        h.stderr
            .ends_with("\r\x1b[2K⠹ run_shell: make · 3s · 3 lines, 40 bytes of output: CC a.o"),
        "{:?}",
        h.stderr
    );
}

#[test]
fn a_caller_that_draws_the_activity_line_gets_only_lines_that_stay() {
    let mut h = Harness::plain_run();
    h.renderer.set_status_drawn_by_caller();
    h.renderer.set_names_session(false);
    h.renderer.set_width(Some(50));
    let start = h.now;
    assert_eq!(h.renderer.status_line(50), None);
    h.send(started(RUN));
    h.send(Event::TurnStarted {
        run_id: RUN.to_owned(),
        step: 1,
    });
    assert!(
        h.renderer
            .tick_at(start + std::time::Duration::from_secs(4))
            .is_empty()
    );
    assert_eq!(
        h.renderer.status_line(50).as_deref(),
        Some("⠙ thinking… 4s · Ctrl-C to cancel")
    );
    h.send(delta(RUN, "Hello wor"));
    assert_eq!(h.renderer.status_line(50), None, "the model answered");
    h.send(tool_started(RUN, "c1", "run_shell", &"x".repeat(80)));
    h.send(Event::ToolProgress {
        run_id: RUN.to_owned(),
        tool_call_id: "c1".to_owned(),
        message: "1 lines, 9 bytes of output: line one".to_owned(),
    });
    h.renderer
        .tick_at(start + std::time::Duration::from_secs(7));
    let status = h.renderer.status_line(50).expect("a running tool");
    assert!(status.starts_with("⠹ run_shell: xxx"), "{status}");
    assert!(display_width(&status) < 50, "{status}");
    h.send(tool_completed(RUN, "c1", "run_shell", false, 1200));
    h.send(finished(RUN, RunStatus::Completed, None));
    assert_eq!(h.stdout, "Hello wor\n");
    // Nothing drawn in place, and no session line after the after-run line.
    assert!(!h.stderr.contains('\r'), "{:?}", h.stderr);
    assert!(h.stderr.starts_with("\n✓ run_shell: xxx"), "{:?}", h.stderr);
    assert!(
        h.stderr.ends_with(" out · 1 step · 0 ms\n"),
        "{:?}",
        h.stderr
    );
    assert!(!h.stderr.contains("session:"), "{:?}", h.stderr);
}

fn thought(text: &str) -> Event {
    Event::ThinkingDelta {
        run_id: RUN.to_owned(),
        text: text.to_owned(),
    }
}

fn tty() -> RenderOptions {
    RenderOptions {
        json: false,
        stderr_is_tty: true,
        width: Some(120),
        color: false,
        markdown: None,
    }
}

#[test]
fn brief_thinking_shows_the_last_line_of_reasoning_beside_the_timer() {
    let mut h = Harness::run(tty());
    h.send(Event::TurnStarted {
        run_id: RUN.to_owned(),
        step: 1,
    });
    h.send(thought("First I look at the parser.\nThen the"));
    h.send(thought(" lexer."));
    assert!(
        h.stderr
            .ends_with("thinking… 0s · Ctrl-C to cancel · Then the lexer."),
        "{:?}",
        h.stderr
    );
    assert!(
        !h.stderr.contains("First I look"),
        "only the last line: {:?}",
        h.stderr
    );
}

#[test]
fn full_thinking_prints_each_line_of_reasoning_and_off_prints_none() {
    let mut full = Harness::run(tty());
    full.renderer.set_thinking(Thinking::Full);
    full.send(Event::TurnStarted {
        run_id: RUN.to_owned(),
        step: 1,
    });
    full.send(thought("First I look at the parser.\nThen the"));
    assert!(
        full.stderr.contains("First I look at the parser.\n"),
        "{:?}",
        full.stderr
    );
    assert!(
        !full.stderr.contains("Then the"),
        "a line is printed once whole"
    );
    full.send(delta(RUN, "Answer."));
    assert!(
        full.stderr.contains("Then the\n"),
        "the rest before the answer: {:?}",
        full.stderr
    );

    let mut off = Harness::run(tty());
    off.renderer.set_thinking(Thinking::Off);
    off.send(Event::TurnStarted {
        run_id: RUN.to_owned(),
        step: 1,
    });
    off.send(thought("secret plans\n"));
    assert!(!off.stderr.contains("secret plans"), "{:?}", off.stderr);
}
