//! Drawing on the terminal: assistant text on stdout, notes on stderr on their own line, and
//! the line redrawn in place on a TTY (the activity line, or the approval prompt while it waits
//! for a key).

use super::style::{Style, paint};
use super::{CLEAR_LINE, Output, Renderer, width};
use crate::safe_text::neutralise;

impl Renderer {
    /// Show an approval prompt: `header` as a line, `question` as the line waiting for a key.
    pub fn show_prompt(&mut self, header: &str, question: &str) -> Vec<Output> {
        let mut out = Vec::new();
        // The first line (what is asked) stands out; the details below it do not. An empty
        // first line was shown already (by `attach`'s replay).
        let (first, details) = header.split_once('\n').unwrap_or((header, ""));
        if !first.is_empty() {
            self.stderr_styled(Style::Attention, first, &mut out);
        }
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

    /// Put the prompt back after other output erased it.
    pub(super) fn redraw_prompt(&mut self, out: &mut Vec<Output>) {
        if self.prompt.is_some() && !self.spinner_drawn {
            self.draw_spinner(out);
        }
    }

    /// Write assistant or transcript text on stdout.
    pub(super) fn stdout(&mut self, text: &str, out: &mut Vec<Output>) {
        if text.is_empty() {
            return;
        }
        self.clear_spinner(out);
        self.stdout_line_open = !text.ends_with('\n');
        out.push(Output::Stdout(neutralise(text).into_owned()));
    }

    /// Write text on stdout that is already safe: neutralised before it was styled (the
    /// answer's rendered markdown), so its only sequences are agentctl's own.
    pub(super) fn stdout_styled(&mut self, text: &str, out: &mut Vec<Output>) {
        if text.is_empty() {
            return;
        }
        self.clear_spinner(out);
        self.stdout_line_open = !text.ends_with('\n');
        out.push(Output::Stdout(text.to_owned()));
    }

    pub(super) fn end_stdout_line(&mut self, out: &mut Vec<Output>) {
        if self.stdout_line_open {
            self.stdout_line_open = false;
            out.push(Output::Stdout("\n".to_owned()));
        }
    }

    /// Write one note on stderr, on its own line even when stdout's line is unfinished (both
    /// usually share a terminal). Stdout itself is never changed for stderr's sake.
    pub(super) fn stderr_line(&mut self, line: &str, out: &mut Vec<Output>) {
        self.clear_spinner(out);
        let lead = if self.stdout_line_open { "\n" } else { "" };
        out.push(Output::Stderr(format!("{lead}{}\n", neutralise(line))));
    }

    /// `stderr_line` in a colour (when colours are on).
    pub(super) fn stderr_styled(&mut self, style: Style, line: &str, out: &mut Vec<Output>) {
        self.clear_spinner(out);
        let lead = if self.stdout_line_open { "\n" } else { "" };
        let line = paint(self.options.color, style, &neutralise(line));
        out.push(Output::Stderr(format!("{lead}{line}\n")));
    }

    pub(super) fn draw_spinner(&mut self, out: &mut Vec<Output>) {
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

    pub(super) fn clear_spinner(&mut self, out: &mut Vec<Output>) {
        if self.spinner_drawn {
            self.spinner_drawn = false;
            out.push(Output::Stderr(CLEAR_LINE.to_owned()));
        }
    }
}
