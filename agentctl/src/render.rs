//! Turning a session's event stream into terminal output: a pure state machine. It takes one
//! event envelope at a time and answers with what to write on stdout and stderr and, once the
//! stream has said what it had to say, the exit code. No I/O here, so every rendering rule is
//! unit-tested.

use std::collections::BTreeMap;
use std::time::Instant;

use protocol::event::{Event, MessageRole, RunStatus, SessionEventEnvelope};

use crate::output::{EXIT_CANCELLED, EXIT_FAILED, EXIT_OK};
use crate::safe_text::neutralise;

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
        }
    }

    /// Show an approval prompt: `header` as a line, `question` as the line waiting for a key.
    pub fn show_prompt(&mut self, header: &str, question: &str) -> Vec<Output> {
        let mut out = Vec::new();
        // The first line (what is asked) stands out; the details below it do not.
        let (first, details) = header.split_once('\n').unwrap_or((header, ""));
        self.stderr_styled(Style::Attention, first, &mut out);
        if !details.is_empty() {
            self.stderr_line(details, &mut out);
        }
        self.prompt = Some(question.to_owned());
        self.prompt_keeps_tail = false;
        self.draw_spinner(&mut out);
        out
    }

    /// Change the prompt's line (the reason typed so far), keeping its header.
    pub fn reprompt(&mut self, question: &str) -> Vec<Output> {
        let mut out = Vec::new();
        self.clear_spinner(&mut out);
        self.prompt = Some(question.to_owned());
        self.prompt_keeps_tail = true;
        self.draw_spinner(&mut out);
        out
    }

    /// Erase the prompt (answered, decided elsewhere, or given up).
    pub fn close_prompt(&mut self) -> Vec<Output> {
        let mut out = Vec::new();
        self.prompt_keeps_tail = false;
        if self.prompt.take().is_some() {
            self.clear_spinner(&mut out);
            self.draw_spinner(&mut out);
        }
        out
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

    /// The terminal was resized: lines drawn from now on fit `width`.
    pub fn set_width(&mut self, width: Option<usize>) {
        if self.options.stderr_is_tty || self.status_drawn_by_caller {
            self.options.width = width;
        }
    }

    /// Leave the terminal tidy before exiting early (Ctrl-C, lost connection): erase the
    /// spinner and end stdout's last line.
    pub fn finish(&mut self) -> Vec<Output> {
        let mut out = Vec::new();
        self.clear_spinner(&mut out);
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

    /// Put the prompt back after other output erased it.
    fn redraw_prompt(&mut self, out: &mut Vec<Output>) {
        if self.prompt.is_some() && !self.spinner_drawn {
            self.draw_spinner(out);
        }
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

    fn render(
        &mut self,
        session_id: &str,
        event: &Event,
        cost_usd: Option<f64>,
        out: &mut Vec<Output>,
    ) {
        if !self.shows_run(event.run_id()) {
            return;
        }
        match event {
            Event::RunStarted { run_id, .. } => {
                if self.is_goal_run(run_id) {
                    self.run_started = Some(self.now);
                }
            }
            Event::TurnStarted { run_id, step } => {
                if self.is_goal_run(run_id) {
                    self.steps = *step;
                }
                if self.tracks_activity() {
                    self.activity.start_thinking(self.now);
                    self.draw_spinner(out);
                }
            }
            Event::ToolProgress {
                tool_call_id,
                message,
                ..
            } => {
                if self.activity.progress(tool_call_id, message) {
                    self.draw_spinner(out);
                } else if self.options.stderr_is_tty && !self.options.redraws() {
                    // A person watches a terminal whose width is unknown: plain lines.
                    self.stderr_line(&format!("[tool] … {}", one_line(message)), out);
                }
            }
            // The activity line already says the model is thinking; the text is for
            // clients that show it (`--json` keeps it).
            Event::ThinkingDelta { .. } => {}
            Event::MessageDelta { run_id, text } => {
                self.activity.stop_thinking();
                self.streamed
                    .entry(run_id.clone())
                    .or_default()
                    .push_str(text);
                self.stdout(text, out);
            }
            Event::MessageCompleted {
                run_id,
                role: MessageRole::Assistant,
                content,
                ..
            } => {
                self.activity.stop_thinking();
                self.assistant_completed(run_id, content, out);
            }
            Event::MessageCompleted {
                role: MessageRole::User,
                content,
                kind,
                ..
            } => self.user_message(content, *kind, out),
            Event::ToolStarted {
                tool_call_id,
                tool,
                summary,
                ..
            } => self.tool_started(tool_call_id, tool, summary, out),
            Event::ToolCompleted {
                tool_call_id,
                tool,
                output,
                is_error,
                duration_ms,
                ..
            } => self.tool_completed(tool_call_id, tool, output, *is_error, *duration_ms, out),
            Event::SteerDelivered { text, .. } => {
                // A transcript shows the steer as a user message (`messageCompleted`).
                if !self.is_transcript() {
                    self.stderr_line(&format!("steer delivered: {}", one_line(text)), out);
                }
            }
            Event::Warning { message } => {
                let line = format!("warning: {}", one_line(message));
                self.stderr_styled(Style::Attention, &line, out);
            }
            Event::TodoUpdated { items, .. } => {
                for line in todo::lines(items) {
                    self.stderr_line(&line, out);
                }
            }
            Event::ToolsChanged {
                added,
                removed,
                changed,
                ..
            } => {
                let mut parts = Vec::new();
                for (sign, names) in [("+", added), ("-", removed), ("~", changed)] {
                    parts.extend(names.iter().map(|name| format!("{sign}{name}")));
                }
                self.stderr_line(&format!("tools changed: {}", parts.join(" ")), out);
            }
            Event::CompactionStarted { .. } => {
                self.stderr_line("compacting the conversation…", out);
            }
            Event::CompactionCompleted {
                tokens_before,
                tokens_after,
                ..
            } => {
                self.stderr_line(
                    &format!("compacted: {tokens_before} → about {tokens_after} prompt tokens"),
                    out,
                );
            }
            Event::Error {
                message,
                will_retry,
                ..
            } => {
                let (prefix, style) = if *will_retry {
                    ("retrying", Style::Attention)
                } else {
                    ("error", Style::Bad)
                };
                self.stderr_styled(style, &format!("{prefix}: {}", one_line(message)), out);
            }
            Event::RunFinished {
                run_id,
                status,
                error,
                usage,
                ..
            } => {
                let finished = Finished {
                    status: *status,
                    error: error.as_deref(),
                    usage,
                    cost_usd,
                };
                self.run_finished(session_id, run_id, finished, out);
            }
            Event::ApprovalRequested { .. } | Event::ApprovalResolved { .. }
                if self.approvals_handled => {}
            Event::ApprovalRequested { approval, .. } => {
                let because = crate::approval_view::why(approval)
                    .map(|why| format!(" ({why})"))
                    .unwrap_or_default();
                self.stderr_line(
                    &format!(
                        "approval needed: {}{because}; answer with `agentctl approve {}` or `agentctl deny {}`",
                        crate::approval_view::what(approval),
                        approval.approval_id,
                        approval.approval_id
                    ),
                    out,
                );
            }
            Event::ApprovalResolved {
                approval_id,
                decision,
                decided_by,
                ..
            } => {
                self.stderr_line(
                    &format!(
                        "approval {approval_id}: {} by {decided_by}",
                        crate::approve_policy::decision_words(*decision)
                    ),
                    out,
                );
            }
            Event::McpServerStatus {
                server,
                status,
                error,
                attempt,
                ..
            } => {
                if let Some(line) = mcp::status_line(server, *status, error.as_deref(), *attempt) {
                    self.stderr_line(&line, out);
                }
            }
            Event::TaskStarted { task } | Event::TaskFinished { task } => {
                let agent = task.agent_type.as_deref().unwrap_or("task");
                let status = serde_json::to_value(task.status)
                    .ok()
                    .and_then(|status| status.as_str().map(str::to_owned))
                    .unwrap_or_default();
                self.stderr_line(
                    &format!(
                        "task {} ({agent}) {status}: {}",
                        task.task_id, task.description
                    ),
                    out,
                );
            }
            Event::SessionUpdated {
                permission_mode,
                provider,
                model,
                title,
            } => {
                let mut changes = Vec::new();
                if let Some(mode) = permission_mode {
                    changes.push(format!("mode {}", mode.as_str()));
                }
                if let (Some(provider), Some(model)) = (provider, model) {
                    changes.push(format!("model {provider}:{model}"));
                }
                if let Some(title) = title {
                    changes.push(format!("title {title:?}"));
                }
                self.stderr_line(&format!("[session] now: {}", changes.join(", ")), out);
            }
            Event::SessionCreated { .. }
            | Event::SessionDeleted {}
            | Event::TaskUpdated { .. }
            | Event::FollowUpQueued { .. }
            | Event::SteerQueued { .. }
            | Event::UsageUpdated { .. }
            | Event::Lagged {}
            | Event::SessionUnloaded {} => {}
        }
    }

    /// Write assistant or transcript text on stdout.
    fn stdout(&mut self, text: &str, out: &mut Vec<Output>) {
        if text.is_empty() {
            return;
        }
        self.clear_spinner(out);
        self.stdout_line_open = !text.ends_with('\n');
        out.push(Output::Stdout(neutralise(text).into_owned()));
    }

    fn end_stdout_line(&mut self, out: &mut Vec<Output>) {
        if self.stdout_line_open {
            self.stdout_line_open = false;
            out.push(Output::Stdout("\n".to_owned()));
        }
    }

    /// Write one note on stderr, on its own line even when stdout's line is unfinished (both
    /// usually share a terminal). Stdout itself is never changed for stderr's sake.
    fn stderr_line(&mut self, line: &str, out: &mut Vec<Output>) {
        self.clear_spinner(out);
        let lead = if self.stdout_line_open { "\n" } else { "" };
        out.push(Output::Stderr(format!("{lead}{}\n", neutralise(line))));
    }

    /// `stderr_line` in a colour (when colours are on).
    fn stderr_styled(&mut self, style: Style, line: &str, out: &mut Vec<Output>) {
        self.clear_spinner(out);
        let lead = if self.stdout_line_open { "\n" } else { "" };
        let line = paint(self.options.color, style, &neutralise(line));
        out.push(Output::Stderr(format!("{lead}{line}\n")));
    }

    fn draw_spinner(&mut self, out: &mut Vec<Output>) {
        if let Some(question) = &self.prompt {
            // The prompt must show even after unfinished stdout text: start a line for it.
            let lead = if self.stdout_line_open {
                // The prompt's own line: stdout's text goes on below it afterwards.
                self.stdout_line_open = false;
                "\n"
            } else {
                CLEAR_LINE
            };
            let mut text = neutralise(question).into_owned();
            if let Some(width) = self.options.width.filter(|_| self.prompt_keeps_tail) {
                text = width::tail_to_width(&text, width.saturating_sub(1));
            }
            out.push(Output::Stderr(format!("{lead}{text}")));
            self.spinner_drawn = true;
            return;
        }
        // Redrawing erases the cursor's line; never do that to unfinished stdout text.
        let Some(width) = self.options.width.filter(|_| self.options.redraws()) else {
            return;
        };
        if self.stdout_line_open || self.status_drawn_by_caller {
            return;
        }
        let Some(line) = self.status_line(width) else {
            self.clear_spinner(out);
            return;
        };
        out.push(Output::Stderr(format!("{CLEAR_LINE}{line}")));
        self.spinner_drawn = true;
    }

    fn clear_spinner(&mut self, out: &mut Vec<Output>) {
        if self.spinner_drawn {
            self.spinner_drawn = false;
            out.push(Output::Stderr(CLEAR_LINE.to_owned()));
        }
    }
}

/// The exit code of a run's final status.
pub fn exit_code_for(status: RunStatus) -> u8 {
    match status {
        RunStatus::Completed => EXIT_OK,
        RunStatus::Cancelled => EXIT_CANCELLED,
        RunStatus::Failed | RunStatus::MaxSteps | RunStatus::Interrupted => EXIT_FAILED,
    }
}

/// `12 ms`, `1.5 s`, `2 min 5 s`.
pub fn format_duration(duration_ms: u64) -> String {
    if duration_ms < 1000 {
        format!("{duration_ms} ms")
    } else if duration_ms < 60_000 {
        format!("{:.1} s", duration_ms as f64 / 1000.0)
    } else {
        let secs = duration_ms / 1000;
        format!("{} min {} s", secs / 60, secs % 60)
    }
}

/// The first non-empty line of `text`, trimmed, with a `…` when more lines follow.
pub fn one_line(text: &str) -> String {
    let mut lines = text.lines().map(str::trim).filter(|line| !line.is_empty());
    let first = lines.next().unwrap_or_default();
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first.to_owned()
    }
}

/// At most `max_chars` characters, ending in `…` when cut.
pub fn truncate(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

mod activity;
mod caller_status;
mod lines;
mod mcp;
mod style;
mod summary;
mod todo;
mod width;

pub use style::{Style, auto_color, paint};
pub use width::{display_width, split_at_width, truncate_to_width};

use activity::Activity;
use lines::Finished;

#[cfg(test)]
mod tests;
