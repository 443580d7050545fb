//! How the chat shows a run: its renderer (colours as `run` decides them, the answer's
//! markdown rendered a block at a time), the live area brought up to date with the open
//! block's text and the activity line below the lines that stay, and `/expand`, the whole
//! result of the last tool call.

use super::{ActiveRun, Chat};
use crate::approval_desk::ApprovalDesk;
use crate::approve_policy::Handling;
use crate::commands::FALLBACK_WIDTH;
use crate::render::markdown::MarkdownOptions;
use crate::render::{Mode, Output, RenderOptions, Renderer, Style, paint};
use crate::safe_text::neutralise;

/// The most lines `/expand` shows of a result; a line says how many more there were.
pub const EXPAND_MAX_LINES: usize = 2000;

impl Chat {
    /// Show `run_id` from the events after the last seen.
    pub(super) fn show_run(&mut self, run_id: String) {
        // Text, not JSON; the activity line is the live area's (no redrawing in place here),
        // and the after-run line does not name the session (the chat knows it; `/status`).
        let width = terminal_width();
        let options = RenderOptions {
            color: self.color,
            markdown: Some(MarkdownOptions {
                color: self.color,
                width,
            }),
            ..RenderOptions::default()
        };
        let mut renderer = Renderer::new(
            Mode::Run {
                run_id: run_id.clone(),
            },
            options,
            self.last_seq,
        );
        renderer.set_approvals_handled(true);
        renderer.set_thinking(self.thinking);
        renderer.set_status_drawn_by_caller();
        renderer.set_names_session(false);
        renderer.set_context_bar(super::gauges::AFTER_RUN_BAR_CELLS);
        renderer.set_width(Some(width));
        self.run = Some(ActiveRun {
            renderer,
            desk: ApprovalDesk::new(run_id, Handling::Prompt),
            cancelling: false,
            typing_reason: false,
        });
    }

    /// Take the renderer's output; it shows at the next tick (a fast stream is written a few
    /// times a second, not once per piece).
    pub(super) fn show(&mut self, outputs: Vec<Output>) {
        self.live.push(outputs);
    }

    /// The live area's next frame: the spinner and the seconds move on.
    pub(super) async fn on_tick(&mut self) {
        if let Some(run) = self.run.as_mut() {
            run.renderer.set_width(Some(terminal_width()));
            // The renderer only moves its clock and spinner here (it draws nothing itself).
            let outputs = run.renderer.tick();
            self.live.push(outputs);
        }
        self.refresh().await;
    }

    /// Bring the screen up to date: the lines that stay, then the live rows (the answer's
    /// block still being written, the activity line).
    pub(super) async fn refresh(&mut self) {
        let width = terminal_width();
        let status = self
            .run
            .as_ref()
            .and_then(|run| run.renderer.status_line(width));
        let open = self.run.as_ref().and_then(|run| run.renderer.open_answer());
        if let Some(message) = self.live.update(open.as_deref(), status.as_deref(), width) {
            self.editor.print(message).await;
        }
    }

    /// Print a line of our own, at once. It may quote the session, the model or the daemon (a
    /// title, a command to approve, an error), so it is neutralised like the renderer's text.
    pub(super) async fn say(&mut self, line: &str) {
        self.live.note(&neutralise(line));
        self.refresh().await;
    }

    /// The run shown has ended: what outlives its renderer is kept.
    pub(super) fn keep_from_run(&mut self, run: &ActiveRun) {
        if let Some(result) = run.renderer.last_result() {
            self.last_result = Some(result.clone());
        }
        if let Some(context) = run.renderer.context() {
            self.context = Some(context);
        }
    }

    /// `/expand`: the whole result of the last tool call (up to `EXPAND_MAX_LINES` lines).
    pub(super) async fn expand(&mut self) {
        let result = self
            .run
            .as_ref()
            .and_then(|run| run.renderer.last_result())
            .or(self.last_result.as_ref())
            .cloned();
        let Some(result) = result else {
            self.say("no tool call yet in this chat").await;
            return;
        };
        let (mark, style) = match result.is_error {
            true => ("✗", Style::Bad),
            false => ("✓", Style::Good),
        };
        let mut text = format!(
            "{} {}\n",
            paint(self.color, style, mark),
            neutralise(&result.label)
        );
        text.push_str(&expanded(&neutralise(&result.output), EXPAND_MAX_LINES));
        self.live.end_line();
        self.live.push(vec![Output::Stdout(text)]);
        self.refresh().await;
    }
}

/// `output`'s lines, at most `max_lines`, then a line saying how many were left out.
pub fn expanded(output: &str, max_lines: usize) -> String {
    let lines: Vec<&str> = output.trim_end_matches('\n').lines().collect();
    let mut text: String = lines
        .iter()
        .take(max_lines)
        .map(|line| format!("{line}\n"))
        .collect();
    if lines.len() > max_lines {
        let left = lines.len() - max_lines;
        text.push_str(&format!(
            "… {left} more line{} not shown\n",
            if left == 1 { "" } else { "s" }
        ));
    }
    if lines.is_empty() {
        text.push_str("(the result is empty)\n");
    }
    text
}

/// The terminal's width now (it may have been resized since the last update).
pub(super) fn terminal_width() -> usize {
    crate::terminal::stderr_width().unwrap_or(FALLBACK_WIDTH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_result_is_expanded_up_to_the_cap() {
        let output: String = (1..=5).map(|n| format!("line {n}\n")).collect();
        assert_eq!(
            expanded(&output, 3),
            "line 1\nline 2\nline 3\n… 2 more lines not shown\n"
        );
        assert_eq!(expanded("one", 3), "one\n");
        assert_eq!(expanded("", 3), "(the result is empty)\n");
    }
}
