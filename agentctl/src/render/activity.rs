//! The one line a terminal shows while a run works, redrawn in place: "thinking… 4s · Ctrl-C
//! to cancel" until the model answers, then the running tools with their elapsed time and the
//! tail of their output (`toolProgress`). Pure: the time comes in as an argument, and the line
//! is cut to the terminal's width so redrawing it never wraps.

use std::time::{Duration, Instant};

use super::{one_line, truncate_to_width};

/// Spinner frames (braille dots).
const SPINNER_FRAMES: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// A tool runs this long before its line shows the elapsed time.
const SHOW_ELAPSED_AFTER: Duration = Duration::from_secs(1);

/// What runs now, as the activity line shows it.
#[derive(Debug, Default)]
pub struct Activity {
    /// Tools started and not yet completed, in start order.
    tools: Vec<ActiveTool>,
    /// The model was asked and has not answered yet (no text, no tool call) since this instant.
    thinking_since: Option<Instant>,
    /// Spinner animation frame.
    frame: usize,
    /// The last line of the model's reasoning so far (`--thinking brief`), shown after the
    /// thinking timer.
    thought: String,
    /// The model is answering, and the block it writes waits to be complete before it is
    /// shown (markdown on a terminal): "writing…" instead of "thinking…".
    writing: bool,
}

/// One running tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActiveTool {
    pub tool_call_id: String,
    pub tool: String,
    /// One line, already capped.
    pub summary: String,
    pub started: Instant,
    /// The latest `toolProgress` message, one line.
    pub progress: Option<String>,
}

impl Activity {
    /// A model call began: "thinking…" until it answers.
    pub fn start_thinking(&mut self, now: Instant) {
        self.thinking_since = Some(now);
        self.writing = false;
        self.thought.clear();
    }

    /// The model's answer is being written, its block not shown yet.
    pub fn writing(&mut self, now: Instant) {
        if !self.writing || self.thinking_since.is_none() {
            self.thinking_since = Some(now);
        }
        self.writing = true;
    }

    /// Reasoning streamed (`thinkingDelta`): its last line is shown while thinking.
    pub fn thought(&mut self, text: &str) {
        self.thought.push_str(text);
        if let Some(cut) = self.thought.trim_end().rfind('\n') {
            self.thought.drain(..=cut);
        }
        // A line without an end yet: keep it bounded.
        if self.thought.len() > 4096 {
            let keep = self.thought.len() - 1024;
            let at = (keep..self.thought.len())
                .find(|at| self.thought.is_char_boundary(*at))
                .unwrap_or(self.thought.len());
            self.thought.drain(..at);
        }
    }

    /// The model answered (text or a tool call), or the run stopped.
    pub fn stop_thinking(&mut self) {
        self.thinking_since = None;
        self.writing = false;
    }

    pub fn tool_started(&mut self, tool_call_id: &str, tool: &str, summary: String, now: Instant) {
        self.thinking_since = None;
        self.tools.push(ActiveTool {
            tool_call_id: tool_call_id.to_owned(),
            tool: tool.to_owned(),
            summary,
            started: now,
            progress: None,
        });
    }

    /// The tool's progress message; false when the tool is not running.
    pub fn progress(&mut self, tool_call_id: &str, message: &str) -> bool {
        let Some(tool) = self
            .tools
            .iter_mut()
            .find(|tool| tool.tool_call_id == tool_call_id)
        else {
            return false;
        };
        let line = last_line(message);
        tool.progress = (!line.is_empty()).then_some(line);
        true
    }

    /// The tool finished: it leaves the line.
    pub fn tool_completed(&mut self, tool_call_id: &str) -> Option<ActiveTool> {
        let index = self
            .tools
            .iter()
            .position(|tool| tool.tool_call_id == tool_call_id)?;
        Some(self.tools.remove(index))
    }

    /// The run ended: nothing runs any more.
    pub fn clear(&mut self) {
        self.tools.clear();
        self.thinking_since = None;
    }

    /// Nothing to show.
    pub fn is_idle(&self) -> bool {
        self.tools.is_empty() && self.thinking_since.is_none()
    }

    /// Next spinner frame.
    pub fn advance(&mut self) {
        self.frame = (self.frame + 1) % SPINNER_FRAMES.len();
    }

    /// The line to draw at `now`, at most `width - 1` columns (the last column is left free:
    /// some terminals wrap when it is written); `None` when idle. `interrupt` says what Ctrl-C
    /// does ("Ctrl-C to cancel").
    pub fn line(&self, now: Instant, width: usize, interrupt: &str) -> Option<String> {
        let frame = SPINNER_FRAMES[self.frame];
        let line = if let Some(latest) = self.tools.last() {
            let mut line = format!("{frame} {}", latest.tool);
            if !latest.summary.is_empty() {
                line.push_str(": ");
                line.push_str(&latest.summary);
            }
            let elapsed = now.saturating_duration_since(latest.started);
            if elapsed >= SHOW_ELAPSED_AFTER {
                line.push_str(&format!(" · {}s", elapsed.as_secs()));
            }
            if self.tools.len() > 1 {
                line.push_str(&format!(" (+{} more)", self.tools.len() - 1));
            }
            if let Some(progress) = &latest.progress {
                line.push_str(" · ");
                line.push_str(progress);
            }
            line
        } else {
            let since = self.thinking_since?;
            let elapsed = now.saturating_duration_since(since).as_secs();
            let thought = one_line(self.thought.trim());
            if self.writing {
                format!("{frame} writing… {elapsed}s · {interrupt}")
            } else if thought.is_empty() {
                format!("{frame} thinking… {elapsed}s · {interrupt}")
            } else {
                format!("{frame} thinking… {elapsed}s · {interrupt} · {thought}")
            }
        };
        Some(truncate_to_width(&line, width.saturating_sub(1)))
    }
}

/// The last non-empty line of a progress message (a shell's says "N lines, M bytes of output:
/// <last line>"), trimmed.
fn last_line(message: &str) -> String {
    let last = message
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or_default();
    one_line(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HINT: &str = "Ctrl-C to cancel";

    #[test]
    fn thinking_shows_the_seconds_since_the_model_was_asked() {
        let start = Instant::now();
        let mut activity = Activity::default();
        assert_eq!(activity.line(start, 80, HINT), None);
        activity.start_thinking(start);
        assert_eq!(
            activity
                .line(start + Duration::from_millis(4200), 80, HINT)
                .as_deref(),
            Some("⠋ thinking… 4s · Ctrl-C to cancel")
        );
        activity.stop_thinking();
        assert!(activity.is_idle());
    }

    #[test]
    fn a_tool_shows_its_elapsed_time_and_the_tail_of_its_output() {
        let start = Instant::now();
        let mut activity = Activity::default();
        activity.start_thinking(start);
        activity.tool_started("c1", "run_shell", "make".to_owned(), start);
        assert_eq!(
            activity.line(start, 80, HINT).as_deref(),
            Some("⠋ run_shell: make")
        );
        assert!(activity.progress("c1", "12 lines, 300 bytes of output: CC foo.o"));
        assert!(!activity.progress("c9", "unknown call"));
        activity.tool_started("c2", "read_file", "a".to_owned(), start);
        activity.tool_completed("c2");
        assert_eq!(
            activity
                .line(start + Duration::from_secs(3), 80, HINT)
                .as_deref(),
            Some("⠋ run_shell: make · 3s · 12 lines, 300 bytes of output: CC foo.o")
        );
    }

    #[test]
    fn the_line_never_reaches_the_last_column() {
        let start = Instant::now();
        let mut activity = Activity::default();
        activity.tool_started("c1", "run_shell", "x".repeat(60), start);
        activity.progress("c1", &"y".repeat(300));
        for width in [10, 50, 120] {
            let line = activity
                .line(start + Duration::from_secs(70), width, HINT)
                .unwrap();
            assert!(
                super::super::display_width(&line) < width,
                "{width}: {line}"
            );
        }
    }
}
