//! Turning a session's event stream into terminal output: a pure state machine. It takes one
//! event envelope at a time and answers with what to write on stdout and stderr and, once the
//! stream has said what it had to say, the exit code. No I/O here, so every rendering rule is
//! unit-tested.
//!
//! Here the renderer's state and API; `events` says what each event shows, `lines` writes the
//! messages, tools and the run's end, `draw` puts text on stdout, notes on stderr and the line
//! drawn in place (`activity`, or the approval prompt); `restart` what a daemon restart shows;
//! `text` has the helpers the list commands share.

use std::collections::BTreeMap;
use std::time::Instant;

use protocol::event::{Event, RunStatus, SessionEventEnvelope};

use crate::output::{EXIT_CANCELLED, EXIT_FAILED, EXIT_OK};

/// What the renderer is following, which decides what it shows and when it is done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `agentctl run`: show only this run; done when it finishes, with its status as the exit
    /// code, and name the session on stderr.
    Run { run_id: String },
    /// `agentctl attach`: show every run as a transcript (user messages as `> text`).
    Attach { until: AttachUntil },
}

/// When `attach` stops by itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttachUntil {
    /// The session was idle: stop once the replay reaches this seq (exit 0).
    Seq(u64),
    /// The session was running: stop when this run finishes (exit code of its status).
    RunFinished(String),
    /// `--follow`: never; only Ctrl-C ends it.
    Never,
}

/// How output looks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RenderOptions {
    /// `--json`: every envelope as one NDJSON line on stdout, nothing on stderr.
    pub json: bool,
    /// Stderr is a terminal: with a known `width`, the activity line (thinking, running tools)
    /// is redrawn in place (ANSI). Otherwise terse `[tool] …` lines.
    pub stderr_is_tty: bool,
    /// Stderr's terminal width in columns, when known: lines drawn in place are cut to it (a
    /// wrapped line cannot be redrawn, each frame would add one). Unknown: plain lines.
    pub width: Option<usize>,
    /// Colour agentctl's own marks on stderr (`--color`, `NO_COLOR`).
    pub color: bool,
    /// Stdout is a terminal: the answer's markdown is rendered for it, a block at a time.
    /// `None`: the answer's text as it comes (a pipe gets exactly what the model wrote).
    pub markdown: Option<MarkdownOptions>,
}

impl RenderOptions {
    /// Whether the activity line is drawn and redrawn in place.
    pub fn redraws(&self) -> bool {
        !self.json && self.stderr_is_tty && self.width.is_some()
    }
}

/// One piece of output, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    Stdout(String),
    Stderr(String),
}

/// The event-stream state machine.
#[derive(Debug)]
pub struct Renderer {
    mode: Mode,
    options: RenderOptions,
    /// Seq of the last persisted event handled; persisted events at or below it are
    /// duplicates (a replay after `lagged` or after re-subscribing) and are skipped.
    last_seq: u64,
    /// Assistant text printed from `messageDelta`s of the message in progress, per run, so
    /// `messageCompleted` prints only what is missing.
    streamed: BTreeMap<String, String>,
    /// Stdout's last line is unfinished (text printed without a trailing newline yet).
    stdout_line_open: bool,
    /// Thinking and the tools started and not yet completed: the activity line.
    activity: Activity,
    /// The activity line is currently drawn on stderr (TTY only) and must be cleared before
    /// anything else is written.
    spinner_drawn: bool,
    /// The time of the event or tick being handled (the activity line's elapsed times).
    now: Instant,
    /// The goal run's numbers for the after-run line: when it started, its last step.
    run_started: Option<Instant>,
    steps: u32,
    /// Set when the stream has reached its end: the exit code.
    exit: Option<u8>,
    /// `run` answers its approvals itself (`approval_desk`): their events are not rendered.
    approvals_handled: bool,
    /// The approval prompt's question, drawn like the spinner (in its place) while it waits
    /// for a key, and redrawn after anything else is written.
    prompt: Option<String>,
    /// The prompt shows text being typed (a denial's reason): when it is wider than the
    /// terminal, its end is shown, so the line never wraps while it is redrawn key by key.
    prompt_keeps_tail: bool,
    /// The caller draws the activity line itself, from `status_line` (chat's live area):
    /// thinking and tools are tracked as when redrawing in place, but never written here.
    status_drawn_by_caller: bool,
    /// Name the session after the goal run's after-run line (`run`; chat knows its session).
    names_session: bool,
    /// The caller follows the run across a daemon restart (`follow`): `runSuspended` needs no
    /// pointer to `agentctl attach`.
    follows_across_restarts: bool,
    /// The arguments of the edits and writes the model asked for, by call id, until they
    /// complete: a completed one is shown as the lines it changed (`preview::edit_rows`).
    edits: BTreeMap<String, (String, String)>,
    /// How full the context window was at the goal run's last model call (the after-run
    /// line's gauge).
    context: Option<summary::Context>,
    /// Cells of the bar the after-run line's context gauge has (0: none, the words only).
    context_bar_cells: usize,
    /// How the model's reasoning is shown (`--thinking`).
    thinking: Thinking,
    /// Reasoning of an unfinished line, printed once whole (`--thinking full`).
    thought_buffer: String,
    /// The answer being rendered as markdown (`options.markdown`), and the run it is of.
    answer: MarkdownStream,
    answer_run: Option<String>,
    /// The last tool call completed: what `/expand` shows whole.
    last_result: Option<ToolResult>,
}

/// A completed tool call's result, as the model read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolResult {
    /// `tool: summary`, as its ✓/✗ line names it.
    pub label: String,
    pub output: String,
    pub is_error: bool,
}

/// How `run`, `attach` and chat show the model's reasoning (`thinkingDelta`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Thinking {
    /// All of it, dimmed, as it streams.
    Full,
    /// Its last line beside the thinking timer (on a terminal).
    #[default]
    Brief,
    /// The timer only.
    Off,
}

/// Longest one-line summary shown for a tool (the activity line is also cut to the width).
const SUMMARY_MAX_CHARS: usize = 60;

/// Moves to the start of the line and erases it.
const CLEAR_LINE: &str = "\r\x1b[2K";

impl Renderer {
    /// A renderer for a subscription made with `afterSeq = after_seq`.
    pub fn new(mode: Mode, options: RenderOptions, after_seq: u64) -> Renderer {
        Renderer {
            mode,
            options,
            last_seq: after_seq,
            streamed: BTreeMap::new(),
            stdout_line_open: false,
            activity: Activity::default(),
            spinner_drawn: false,
            now: Instant::now(),
            run_started: None,
            steps: 0,
            exit: None,
            approvals_handled: false,
            prompt: None,
            prompt_keeps_tail: false,
            status_drawn_by_caller: false,
            names_session: true,
            follows_across_restarts: false,
            edits: BTreeMap::new(),
            context: None,
            context_bar_cells: 0,
            thinking: Thinking::default(),
            thought_buffer: String::new(),
            answer: MarkdownStream::default(),
            answer_run: None,
            last_result: None,
        }
    }

    /// Seq of the last persisted event handled: re-subscribe with `afterSeq` = this.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// The exit code once the stream is done (the run finished, or attach caught up).
    pub fn exit_code(&self) -> Option<u8> {
        if let Some(code) = self.exit {
            return Some(code);
        }
        match &self.mode {
            Mode::Attach {
                until: AttachUntil::Seq(seq),
            } if self.last_seq >= *seq => Some(EXIT_OK),
            _ => None,
        }
    }

    /// Handle one envelope. The event stays raw JSON so that event types this client does not
    /// know still reach `--json` output; in text mode they are skipped.
    pub fn handle(&mut self, envelope: &SessionEventEnvelope<serde_json::Value>) -> Vec<Output> {
        self.handle_at(envelope, Instant::now())
    }

    /// `handle` with the time it happens (tests pass their own).
    pub fn handle_at(
        &mut self,
        envelope: &SessionEventEnvelope<serde_json::Value>,
        now: Instant,
    ) -> Vec<Output> {
        self.now = now;
        let event = serde_json::from_value::<Event>(envelope.event.clone()).ok();
        let persisted = event.as_ref().is_none_or(Event::is_persisted);
        if persisted {
            if envelope.seq <= self.last_seq {
                return Vec::new();
            }
            self.last_seq = envelope.seq;
        }
        let mut out = Vec::new();
        if self.options.json {
            match serde_json::to_string(envelope) {
                Ok(line) => out.push(Output::Stdout(line + "\n")),
                Err(err) => out.push(Output::Stderr(format!(
                    "agentctl: cannot encode event: {err}\n"
                ))),
            }
            if let Some(event) = &event {
                self.track_exit(event);
            }
            return out;
        }
        if let Some(event) = event {
            // An optional field of `runFinished` (per-provider prices), read from the raw JSON.
            let cost_usd = envelope
                .event
                .get("costUsd")
                .and_then(serde_json::Value::as_f64);
            self.render(&envelope.session_id, &event, cost_usd, &mut out);
        }
        self.redraw_prompt(&mut out);
        out
    }

    /// Redraw the activity line with its next frame (call every ~100 ms on a TTY).
    pub fn tick(&mut self) -> Vec<Output> {
        self.tick_at(Instant::now())
    }

    /// `tick` at a given time.
    pub fn tick_at(&mut self, now: Instant) -> Vec<Output> {
        self.now = now;
        let mut out = Vec::new();
        if !self.tracks_activity() || self.activity.is_idle() || self.prompt.is_some() {
            return out;
        }
        self.activity.advance();
        self.draw_spinner(&mut out);
        out
    }

    /// How the model's reasoning is shown from now on.
    pub fn set_thinking(&mut self, thinking: Thinking) {
        self.thinking = thinking;
    }

    /// The terminal was resized: lines drawn from now on fit `width`.
    pub fn set_width(&mut self, width: Option<usize>) {
        if self.options.stderr_is_tty || self.status_drawn_by_caller {
            self.options.width = width;
        }
        if let (Some(markdown), Some(width)) = (self.options.markdown.as_mut(), width) {
            markdown.width = width;
        }
    }

    /// Leave the terminal tidy before exiting early (Ctrl-C, lost connection): erase the
    /// spinner and end stdout's last line.
    pub fn finish(&mut self) -> Vec<Output> {
        let mut out = Vec::new();
        self.clear_spinner(&mut out);
        self.flush_answer(&mut out);
        self.end_stdout_line(&mut out);
        out
    }

    /// A note of the client's own (Ctrl-C, a skipped event) on stderr, on its own line.
    pub fn note(&mut self, text: &str) -> Vec<Output> {
        let mut out = Vec::new();
        self.stderr_line(text, &mut out);
        self.redraw_prompt(&mut out);
        out
    }

    /// In `--json` mode only the exit decision is needed.
    fn track_exit(&mut self, event: &Event) {
        if let Event::RunFinished { run_id, status, .. } = event
            && self.is_goal_run(run_id)
        {
            self.exit = Some(exit_code_for(*status));
        }
    }

    /// Whether `run_id` is the run whose end ends the stream.
    fn is_goal_run(&self, run_id: &str) -> bool {
        match &self.mode {
            Mode::Run { run_id: ours } => ours == run_id,
            Mode::Attach {
                until: AttachUntil::RunFinished(ours),
            } => ours == run_id,
            Mode::Attach { .. } => false,
        }
    }

    /// Whether an event of `run_id` is shown at all: `run` shows only its own run.
    fn shows_run(&self, run_id: Option<&str>) -> bool {
        match (&self.mode, run_id) {
            (Mode::Run { run_id: ours }, Some(run_id)) => ours == run_id,
            _ => true,
        }
    }

    fn is_transcript(&self) -> bool {
        matches!(self.mode, Mode::Attach { .. })
    }
}

/// The exit code of a run's final status.
pub fn exit_code_for(status: RunStatus) -> u8 {
    match status {
        RunStatus::Completed => EXIT_OK,
        RunStatus::Cancelled => EXIT_CANCELLED,
        RunStatus::Failed | RunStatus::MaxSteps | RunStatus::Interrupted => EXIT_FAILED,
        RunStatus::Budget => crate::output::EXIT_BUDGET,
    }
}

mod activity;
mod answer;
mod caller_status;
mod draw;
mod events;
mod lines;
pub mod markdown;
mod mcp;
mod preview;
mod restart;
mod style;
pub mod summary;
mod text;
mod todo;
pub mod width;

pub use style::{Style, auto_color, paint};
pub use text::{format_duration, one_line, truncate};
pub use width::{display_width, split_at_width, truncate_to_width};

use activity::Activity;
use markdown::{MarkdownOptions, MarkdownStream};

#[cfg(test)]
mod tests;
