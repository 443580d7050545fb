//! Tests of the event renderer: feed envelopes, check stdout, stderr and the exit code.

use protocol::event::{
    Event, MessageRole, RunStatus, SessionEventEnvelope, ToolCallInfo, Usage, UserMessageKind,
};

use super::*;

mod answer;
mod notes;
mod terminal;

const SESSION: &str = "ses_1";
const RUN: &str = "run_1";

/// Drives a renderer and collects what it wrote, seq numbered like the daemon does.
struct Harness {
    renderer: Renderer,
    /// The time every event arrives at (the activity line's and after-run line's clock).
    now: std::time::Instant,
    seq: u64,
    stdout: String,
    stderr: String,
}

impl Harness {
    fn new(mode: Mode, options: RenderOptions) -> Harness {
        Harness {
            renderer: Renderer::new(mode, options, 0),
            now: std::time::Instant::now(),
            seq: 0,
            stdout: String::new(),
            stderr: String::new(),
        }
    }

    fn run(options: RenderOptions) -> Harness {
        Harness::new(
            Mode::Run {
                run_id: RUN.to_owned(),
            },
            options,
        )
    }

    fn plain_run() -> Harness {
        Harness::run(RenderOptions::default())
    }

    /// Send `event` with the next seq (or the current one, for events that are not persisted).
    fn send(&mut self, event: Event) {
        if event.is_persisted() {
            self.seq += 1;
        }
        let seq = self.seq;
        self.send_at(seq, event);
    }

    fn send_at(&mut self, seq: u64, event: Event) {
        let envelope = SessionEventEnvelope {
            session_id: SESSION.to_owned(),
            seq,
            event: serde_json::to_value(&event).unwrap(),
            not_persisted: false,
        };
        let outputs = self.renderer.handle_at(&envelope, self.now);
        self.collect(outputs);
    }

    fn collect(&mut self, outputs: Vec<Output>) {
        for output in outputs {
            match output {
                Output::Stdout(text) => self.stdout.push_str(&text),
                Output::Stderr(text) => self.stderr.push_str(&text),
            }
        }
    }

    fn exit(&self) -> Option<u8> {
        self.renderer.exit_code()
    }
}

fn delta(run: &str, text: &str) -> Event {
    Event::MessageDelta {
        run_id: run.to_owned(),
        text: text.to_owned(),
    }
}

fn assistant(run: &str, content: &str) -> Event {
    Event::MessageCompleted {
        run_id: run.to_owned(),
        role: MessageRole::Assistant,
        content: content.to_owned(),
        kind: None,
        tool_calls: Vec::new(),
    }
}

fn user(run: &str, content: &str, kind: UserMessageKind) -> Event {
    Event::MessageCompleted {
        run_id: run.to_owned(),
        role: MessageRole::User,
        content: content.to_owned(),
        kind: Some(kind),
        tool_calls: Vec::new(),
    }
}

fn tool_started(run: &str, id: &str, tool: &str, summary: &str) -> Event {
    Event::ToolStarted {
        run_id: run.to_owned(),
        tool_call_id: id.to_owned(),
        tool: tool.to_owned(),
        summary: summary.to_owned(),
    }
}

fn tool_completed(run: &str, id: &str, tool: &str, is_error: bool, ms: u64) -> Event {
    Event::ToolCompleted {
        run_id: run.to_owned(),
        tool_call_id: id.to_owned(),
        tool: tool.to_owned(),
        output: if is_error {
            "no such file\nmore".to_owned()
        } else {
            "ok".to_owned()
        },
        is_error,
        duration_ms: ms,
    }
}

fn finished(run: &str, status: RunStatus, error: Option<&str>) -> Event {
    Event::RunFinished {
        run_id: run.to_owned(),
        status,
        error: error.map(str::to_owned),
        usage: Usage::default(),
        cost_usd: None,
    }
}

fn started(run: &str) -> Event {
    Event::RunStarted {
        run_id: run.to_owned(),
        prompt: "hi".to_owned(),
        client_request_id: None,
        options: None,
    }
}

#[test]
fn deltas_then_completed_prints_nothing_twice() {
    let mut h = Harness::plain_run();
    h.send(started(RUN));
    h.send(delta(RUN, "Hello, "));
    h.send(delta(RUN, "world"));
    assert_eq!(h.stdout, "Hello, world");
    h.send(assistant(RUN, "Hello, world"));
    assert_eq!(h.stdout, "Hello, world\n");
    h.send(finished(RUN, RunStatus::Completed, None));
    assert_eq!(h.stdout, "Hello, world\n");
    assert_eq!(
        h.stderr,
        "tokens 0 in · 0 out · 0 steps · 0 ms\nsession: ses_1\n"
    );
    assert_eq!(h.exit(), Some(0));
}

#[test]
fn completed_without_deltas_prints_the_full_text() {
    let mut h = Harness::plain_run();
    h.send(assistant(RUN, "All done.\n"));
    assert_eq!(h.stdout, "All done.\n");
    assert_eq!(h.exit(), None);
}

#[test]
fn completed_after_partial_deltas_prints_the_missing_tail() {
    let mut h = Harness::plain_run();
    h.send(delta(RUN, "The answer"));
    h.send(Event::Lagged {});
    h.send(assistant(RUN, "The answer is 42."));
    assert_eq!(h.stdout, "The answer is 42.\n");
    assert_eq!(h.stderr, "");
}

#[test]
fn lost_middle_deltas_reprint_the_whole_message() {
    let mut h = Harness::plain_run();
    h.send(delta(RUN, "The "));
    h.send(delta(RUN, "42."));
    h.send(assistant(RUN, "The answer is 42."));
    assert_eq!(h.stdout, "The 42.\nThe answer is 42.\n");
    assert!(h.stderr.contains("full message follows"), "{}", h.stderr);
}

#[test]
fn messages_of_a_run_are_separated_by_newlines() {
    let mut h = Harness::plain_run();
    h.send(delta(RUN, "Let me look."));
    h.send(assistant(RUN, "Let me look."));
    h.send(assistant(RUN, ""));
    h.send(delta(RUN, "Found it."));
    h.send(assistant(RUN, "Found it."));
    assert_eq!(h.stdout, "Let me look.\nFound it.\n");
}

#[test]
fn replayed_duplicates_are_skipped() {
    let mut h = Harness::plain_run();
    h.send_at(1, started(RUN));
    h.send_at(2, assistant(RUN, "once"));
    // After `lagged` the daemon replays from an older seq: already-seen events come again.
    h.send_at(2, Event::Lagged {});
    h.send_at(2, assistant(RUN, "once"));
    h.send_at(3, finished(RUN, RunStatus::Completed, None));
    assert_eq!(h.stdout, "once\n");
    assert_eq!(h.renderer.last_seq(), 3);
    assert_eq!(h.exit(), Some(0));
}

#[test]
fn a_trailing_newline_ends_the_output_when_the_run_stops_mid_message() {
    let mut h = Harness::plain_run();
    h.send(delta(RUN, "partial"));
    h.send(finished(RUN, RunStatus::Cancelled, None));
    assert_eq!(h.stdout, "partial\n");
    assert_eq!(
        h.stderr,
        "run cancelled\ntokens 0 in · 0 out · 0 steps\nsession: ses_1\n"
    );
    assert_eq!(h.exit(), Some(130));
}

#[test]
fn exit_codes_follow_the_run_status() {
    let cases = [
        (RunStatus::Completed, None, 0, None),
        (RunStatus::Cancelled, None, 130, Some("run cancelled")),
        (
            RunStatus::Failed,
            Some("provider said 401"),
            1,
            Some("run failed: provider said 401"),
        ),
        (RunStatus::MaxSteps, None, 1, Some("step limit")),
        (
            RunStatus::Interrupted,
            None,
            1,
            Some("run interrupted: the daemon stopped"),
        ),
    ];
    for (status, error, code, message) in cases {
        let mut h = Harness::plain_run();
        h.send(finished(RUN, status, error));
        assert_eq!(h.exit(), Some(code), "{status:?}");
        match message {
            Some(message) => assert!(h.stderr.contains(message), "{status:?}: {}", h.stderr),
            None => assert_eq!(h.stderr, "tokens 0 in · 0 out · 0 steps\nsession: ses_1\n"),
        }
        assert!(h.stderr.ends_with("session: ses_1\n"), "{}", h.stderr);
    }
}

#[test]
fn events_of_other_runs_are_ignored_by_run() {
    let mut h = Harness::plain_run();
    h.send(delta("run_other", "not ours"));
    h.send(assistant("run_other", "not ours"));
    h.send(tool_started("run_other", "c1", "read_file", "x"));
    h.send(finished("run_other", RunStatus::Failed, Some("boom")));
    assert_eq!(h.stdout, "");
    assert_eq!(h.stderr, "");
    assert_eq!(h.exit(), None);
}

#[test]
fn attach_renders_a_transcript_and_stops_at_the_last_seq() {
    let mut h = Harness::new(
        Mode::Attach {
            until: AttachUntil::Seq(5),
        },
        RenderOptions::default(),
    );
    h.send(started("run_a"));
    h.send(user(
        "run_a",
        "what is 2+2?\nbe brief",
        UserMessageKind::Prompt,
    ));
    h.send(Event::MessageCompleted {
        run_id: "run_a".to_owned(),
        role: MessageRole::Assistant,
        content: "4".to_owned(),
        kind: None,
        tool_calls: vec![ToolCallInfo {
            id: "c".to_owned(),
            name: "x".to_owned(),
            arguments: "{}".to_owned(),
        }],
    });
    h.send(user("run_a", "thanks", UserMessageKind::FollowUp));
    assert_eq!(h.exit(), None);
    h.send(finished("run_a", RunStatus::Completed, None));
    assert_eq!(h.exit(), Some(0));
    assert_eq!(
        h.stdout,
        "> what is 2+2?\n> be brief\n4\n> (follow-up) thanks\n"
    );
    // A transcript does not end with the `session:` line of `run`.
    assert_eq!(h.stderr, "");
}

#[test]
fn attach_to_an_idle_empty_session_is_done_at_once() {
    let renderer = Renderer::new(
        Mode::Attach {
            until: AttachUntil::Seq(0),
        },
        RenderOptions::default(),
        0,
    );
    assert_eq!(renderer.exit_code(), Some(0));
}

#[test]
fn attach_to_a_running_session_ends_with_that_run() {
    let mut h = Harness::new(
        Mode::Attach {
            until: AttachUntil::RunFinished("run_b".to_owned()),
        },
        RenderOptions::default(),
    );
    h.send(finished("run_a", RunStatus::Failed, Some("old failure")));
    assert_eq!(h.exit(), None);
    h.send(started("run_b"));
    h.send(delta("run_b", "live text"));
    h.send(assistant("run_b", "live text"));
    h.send(finished("run_b", RunStatus::Cancelled, None));
    assert_eq!(h.exit(), Some(130));
    assert_eq!(h.stdout, "live text\n");
    assert_eq!(h.stderr, "run failed: old failure\nrun cancelled\n");
}

#[test]
fn attach_follow_never_ends_by_itself() {
    let mut h = Harness::new(
        Mode::Attach {
            until: AttachUntil::Never,
        },
        RenderOptions::default(),
    );
    h.send(finished("run_a", RunStatus::Completed, None));
    assert_eq!(h.exit(), None);
}

#[test]
fn json_prints_every_envelope_as_one_line_and_keeps_exit_codes() {
    let mut h = Harness::run(RenderOptions {
        json: true,
        stderr_is_tty: true,
        width: Some(80),
        color: false,
        markdown: None,
    });
    h.send(started(RUN));
    h.send(delta(RUN, "hi"));
    h.send(tool_started(RUN, "c1", "grep", "x"));
    h.send(finished(RUN, RunStatus::Failed, Some("boom")));
    let lines: Vec<&str> = h.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", h.stdout);
    let last: serde_json::Value = serde_json::from_str(lines[3]).unwrap();
    assert_eq!(last["sessionId"], "ses_1");
    assert_eq!(last["seq"], 3);
    assert_eq!(last["event"]["type"], "runFinished");
    assert_eq!(h.stderr, "");
    assert_eq!(h.exit(), Some(1));
}

#[test]
fn unknown_event_types_reach_json_and_are_skipped_in_text() {
    let unknown = SessionEventEnvelope {
        session_id: SESSION.to_owned(),
        seq: 1,
        event: serde_json::json!({"type": "somethingNew", "x": 1}),
        not_persisted: false,
    };
    let mut text = Renderer::new(
        Mode::Run {
            run_id: RUN.to_owned(),
        },
        RenderOptions::default(),
        0,
    );
    assert!(text.handle(&unknown).is_empty());
    let mut json = Renderer::new(
        Mode::Run {
            run_id: RUN.to_owned(),
        },
        RenderOptions {
            json: true,
            stderr_is_tty: false,
            width: None,
            color: false,
            markdown: None,
        },
        0,
    );
    assert_eq!(json.handle(&unknown).len(), 1);
}

#[test]
fn helpers_format_durations_and_lines() {
    assert_eq!(format_duration(0), "0 ms");
    assert_eq!(format_duration(999), "999 ms");
    assert_eq!(format_duration(1234), "1.2 s");
    assert_eq!(format_duration(125_000), "2 min 5 s");
    assert_eq!(one_line("\n  first \nsecond"), "first …");
    assert_eq!(one_line("only"), "only");
    assert_eq!(truncate("abcdef", 4), "abc…");
    assert_eq!(truncate("abc", 4), "abc");
}
