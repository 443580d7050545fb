//! The lines of the events that say the most: assistant and user messages, tools started and
//! completed, and the end of a run with its after-run line.

use protocol::event::{RunStatus, Usage, UserMessageKind};

use super::style::{Style, paint};
use super::{
    Output, Renderer, SUMMARY_MAX_CHARS, exit_code_for, format_duration, one_line, summary,
    truncate, truncate_to_width,
};
use crate::safe_text::neutralise;

/// What `runFinished` says, for the renderer.
#[derive(Clone, Copy, Debug)]
pub(super) struct Finished<'a> {
    pub(super) status: RunStatus,
    pub(super) error: Option<&'a str>,
    pub(super) usage: &'a Usage,
    pub(super) cost_usd: Option<f64>,
}

impl Renderer {
    pub(super) fn user_message(
        &mut self,
        content: &str,
        kind: Option<UserMessageKind>,
        out: &mut Vec<Output>,
    ) {
        if self.is_transcript() {
            let label = match kind {
                Some(UserMessageKind::Steer) => "(steer) ",
                Some(UserMessageKind::FollowUp) => "(follow-up) ",
                Some(UserMessageKind::Prompt) | None => "",
            };
            self.end_stdout_line(out);
            let quoted: String = content
                .lines()
                .enumerate()
                .map(|(index, line)| {
                    if index == 0 {
                        format!("> {label}{line}\n")
                    } else {
                        format!("> {line}\n")
                    }
                })
                .collect();
            let quoted = if quoted.is_empty() {
                format!("> {label}\n")
            } else {
                quoted
            };
            self.stdout(&quoted, out);
        } else if kind == Some(UserMessageKind::FollowUp) {
            // `run` typed the prompt itself and notes steers via `steerDelivered`.
            self.stderr_line(&format!("follow-up delivered: {}", one_line(content)), out);
        }
    }

    pub(super) fn tool_started(
        &mut self,
        id: &str,
        tool: &str,
        summary: &str,
        out: &mut Vec<Output>,
    ) {
        let summary = truncate(&one_line(summary), SUMMARY_MAX_CHARS);
        if self.tracks_activity() {
            self.activity.tool_started(id, tool, summary, self.now);
            self.draw_spinner(out);
        } else {
            let line = if summary.is_empty() {
                format!("[tool] {tool}")
            } else {
                format!("[tool] {tool}: {summary}")
            };
            self.stderr_line(&line, out);
        }
    }

    /// Reasoning streamed: `full` prints it dimmed on stderr as it comes (whole lines; the
    /// rest once the model answers), `brief` keeps its last line for the activity line, `off`
    /// drops it. A transcript (`attach` of a finished run) never had it: it is not persisted.
    pub(super) fn thinking(&mut self, text: &str, out: &mut Vec<Output>) {
        match self.thinking {
            super::Thinking::Off => {}
            super::Thinking::Brief => {
                if self.tracks_activity() {
                    self.activity.thought(text);
                    self.draw_spinner(out);
                }
            }
            super::Thinking::Full => {
                // Whole lines only: the activity line is redrawn below them.
                self.thought_buffer.push_str(text);
                if self.thought_buffer.len() > 16 * 1024 {
                    // A line that never ends is shown in pieces.
                    self.end_thought(out);
                }
                while let Some(newline) = self.thought_buffer.find('\n') {
                    let line: String = self.thought_buffer.drain(..=newline).collect();
                    self.stderr_styled(Style::Dim, line.trim_end_matches('\n'), out);
                }
                self.draw_spinner(out);
            }
        }
    }

    /// Prints what `--thinking full` holds of an unfinished line, before anything else.
    pub(super) fn end_thought(&mut self, out: &mut Vec<Output>) {
        if !self.thought_buffer.is_empty() {
            let rest = std::mem::take(&mut self.thought_buffer);
            if !rest.trim().is_empty() {
                self.stderr_styled(Style::Dim, &rest, out);
            }
        }
    }

    /// Keeps the arguments of the edits and writes among `calls`, shown once they complete.
    pub(super) fn remember_edits(&mut self, calls: &[protocol::event::ToolCallInfo]) {
        for call in calls {
            if matches!(call.name.as_str(), "edit_file" | "write_file") && self.edits.len() < 64 {
                self.edits
                    .insert(call.id.clone(), (call.name.clone(), call.arguments.clone()));
            }
        }
    }

    pub(super) fn tool_completed(
        &mut self,
        id: &str,
        tool: &str,
        output: &str,
        is_error: bool,
        duration_ms: u64,
        out: &mut Vec<Output>,
    ) {
        let duration = format_duration(duration_ms);
        let edit = self.edits.remove(id);
        let error = if is_error {
            let first = truncate(&one_line(output), SUMMARY_MAX_CHARS);
            if first.is_empty() {
                String::new()
            } else {
                format!(": {first}")
            }
        } else {
            String::new()
        };
        let label = match self.activity.tool_completed(id) {
            Some(active) if !active.summary.is_empty() => {
                format!("{}: {}", active.tool, active.summary)
            }
            _ => tool.to_owned(),
        };
        self.remember_result(label.clone(), output, is_error);
        if self.tracks_activity() {
            // The caller that draws the activity line may not know the width: no cut then.
            let width = self.options.width.unwrap_or(usize::MAX);
            let (mark, style) = if is_error {
                ("✗", Style::Bad)
            } else {
                ("✓", Style::Good)
            };
            // The result's first rows follow (the error's too): the line names the call.
            let text = neutralise(&format!("{label} ({duration})")).into_owned();
            let text = truncate_to_width(&text, width.saturating_sub(3));
            let mut line = format!("{} {text}\n", paint(self.options.color, style, mark));
            let max_rows = if is_error {
                super::preview::ERROR_ROWS
            } else {
                super::preview::RESULT_ROWS
            };
            let rows = match (&edit, is_error) {
                (Some((tool, arguments)), false) => {
                    super::preview::edit_rows(tool, arguments, self.options.width.unwrap_or(100))
                }
                _ => None,
            };
            let shown = neutralise(output);
            let width = self.options.width.unwrap_or(100);
            let rows = rows.unwrap_or_else(|| match (tool, is_error) {
                ("run_shell", false) => {
                    super::preview::tail_rows(&shown, width, super::preview::SHELL_ROWS)
                }
                ("run_shell", true) => {
                    super::preview::tail_rows(&shown, width, super::preview::SHELL_ERROR_ROWS)
                }
                _ => super::preview::rows(&shown, width, max_rows),
            });
            for (row, style) in rows.iter().map(|row| (row, super::preview::style_of(row))) {
                let row = neutralise(row);
                line.push_str(&paint(self.options.color, style, &row));
                line.push('\n');
            }
            self.clear_spinner(out);
            let lead = if self.stdout_line_open { "\n" } else { "" };
            out.push(Output::Stderr(format!("{lead}{line}")));
            self.draw_spinner(out);
        } else {
            let verb = if is_error { "failed" } else { "done" };
            self.stderr_line(&format!("[tool] {tool} {verb} ({duration}){error}"), out);
        }
    }

    pub(super) fn run_finished(
        &mut self,
        session_id: &str,
        run_id: &str,
        finished: Finished<'_>,
        out: &mut Vec<Output>,
    ) {
        let Finished { status, error, .. } = finished;
        // Tools of a finished run cannot complete any more.
        self.activity.clear();
        self.clear_spinner(out);
        self.streamed.remove(run_id);
        self.flush_answer(out);
        self.end_stdout_line(out);
        let message = match status {
            RunStatus::Completed => None,
            RunStatus::Cancelled => Some("run cancelled".to_owned()),
            RunStatus::Failed => Some(format!(
                "run failed: {}",
                error.unwrap_or("no reason given")
            )),
            RunStatus::MaxSteps => Some(match error {
                Some(error) => format!("run stopped at the step limit: {error}"),
                None => "run stopped at the step limit (progress is kept; \
                     send a follow-up to continue)"
                    .to_owned(),
            }),
            RunStatus::Budget => Some(format!(
                "run stopped at its budget: {}",
                error.unwrap_or("a budget was reached")
            )),
            RunStatus::Interrupted => Some(format!(
                "run interrupted: {}",
                error.unwrap_or("the daemon stopped while the run was active")
            )),
        };
        if let Some(message) = message {
            let style = if status == RunStatus::Cancelled {
                Style::Attention
            } else {
                Style::Bad
            };
            self.stderr_styled(style, &message, out);
        }
        if self.is_goal_run(run_id) {
            if !self.is_transcript() {
                let duration = self
                    .run_started
                    .map(|at| self.now.saturating_duration_since(at));
                let mut line = summary::after_run_line(
                    finished.usage,
                    self.steps,
                    duration,
                    finished.cost_usd,
                    self.context.map(|context| summary::Gauge {
                        context,
                        bar_cells: self.context_bar_cells,
                    }),
                );
                // A narrow terminal gets the line without its gauge rather than a wrapped one.
                if self
                    .options
                    .width
                    .is_some_and(|width| super::display_width(&line) >= width)
                {
                    line = summary::after_run_line(
                        finished.usage,
                        self.steps,
                        duration,
                        finished.cost_usd,
                        None,
                    );
                }
                self.stderr_styled(Style::Dim, &line, out);
                if self.names_session {
                    self.stderr_line(&format!("session: {session_id}"), out);
                }
            }
            self.exit = Some(exit_code_for(status));
        }
    }
}
