//! The answer on stdout: as it streams when stdout is not a terminal (a pipe gets exactly the
//! model's text), or rendered as markdown a block at a time when it is (`render::markdown`):
//! the open block waits, with "writing…" on the activity line, until the next begins or the
//! message completes, and a caller that draws its own live rows can show it meanwhile
//! (`Renderer::open_answer`).

use super::{Output, Renderer, ToolResult};
use crate::safe_text::neutralise;

impl Renderer {
    /// A piece of the assistant's message of `run_id`.
    pub(super) fn answer_delta(&mut self, run_id: &str, text: &str, out: &mut Vec<Output>) {
        let Some(markdown) = self.options.markdown else {
            self.activity.stop_thinking();
            self.stdout(text, out);
            return;
        };
        if self.answer_run.as_deref() != Some(run_id) {
            self.flush_answer(out);
            self.answer_run = Some(run_id.to_owned());
        }
        let rendered = self.answer.push(&neutralise(text), markdown);
        self.stdout_styled(&rendered, out);
        if self.answer.pending().trim().is_empty() {
            self.activity.stop_thinking();
        } else if self.tracks_activity() {
            self.activity.writing(self.now);
        }
        self.draw_spinner(out);
    }

    /// The assistant's message of `run_id` is complete: what its deltas did not bring is
    /// written, and the open block with it.
    pub(super) fn assistant_completed(
        &mut self,
        run_id: &str,
        content: &str,
        out: &mut Vec<Output>,
    ) {
        let streamed = self.streamed.remove(run_id).unwrap_or_default();
        if let Some(missing) = content.strip_prefix(streamed.as_str()) {
            match self.options.markdown {
                Some(_) => {
                    self.answer_delta(run_id, missing, out);
                    self.flush_answer(out);
                }
                None => self.stdout(missing, out),
            }
        } else {
            // Some deltas were lost (the client lagged): what was printed is not a prefix of
            // the message. Print the whole message again on its own lines.
            self.answer = Default::default();
            self.end_stdout_line(out);
            self.stderr_line("(output was interrupted; the full message follows)", out);
            match self.options.markdown {
                Some(markdown) => {
                    let rendered = super::markdown::render(&neutralise(content), markdown);
                    self.stdout_styled(&rendered, out);
                }
                None => self.stdout(content, out),
            }
        }
        self.end_stdout_line(out);
    }

    /// Writes the open block of the answer (the message ended, or the run, or the output).
    pub(super) fn flush_answer(&mut self, out: &mut Vec<Output>) {
        let Some(markdown) = self.options.markdown else {
            return;
        };
        self.answer_run = None;
        let rendered = self.answer.finish(markdown);
        self.stdout_styled(&rendered, out);
        self.activity.stop_thinking();
    }

    /// The answer's text that waits for its block to complete, rendered as it stands (code
    /// not coloured yet), set off from the blocks before it: a caller with live rows shows it
    /// until the block is written. `None` when nothing waits.
    pub fn open_answer(&self) -> Option<String> {
        let pending = self.answer.pending();
        if pending.trim().is_empty() {
            return None;
        }
        let options = self.options.markdown?;
        let shown = super::markdown::render_preview(pending, options);
        Some(match self.answer.rendered_any() {
            true => format!("\n{shown}"),
            false => shown,
        })
    }

    /// Remembers a completed call's result for `/expand`.
    pub(super) fn remember_result(&mut self, label: String, output: &str, is_error: bool) {
        self.last_result = Some(ToolResult {
            label,
            output: output.to_owned(),
            is_error,
        });
    }

    /// The last tool call completed, with its whole result (as the model read it).
    pub fn last_result(&self) -> Option<&ToolResult> {
        self.last_result.as_ref()
    }
}
