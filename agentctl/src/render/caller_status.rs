//! The renderer for a caller that draws the activity line itself (chat's live area, above
//! its line editor): what it tracks is the same as for `run` on a terminal, only the drawing
//! moves out.

use super::style::{Style, paint};
use super::{Renderer, truncate_to_width};
use crate::safe_text::neutralise;

impl Renderer {
    /// The caller shows the activity line (from [`Renderer::status_line`]) and its own
    /// prompt: this renderer tracks thinking and running tools but never draws them, and
    /// writes only lines that stay (text, notes, finished tools).
    pub fn set_status_drawn_by_caller(&mut self) {
        self.status_drawn_by_caller = true;
    }

    /// Whether the after-run line is followed by `session: ID` (on by default).
    pub fn set_names_session(&mut self, names: bool) {
        self.names_session = names;
    }

    /// Give the after-run line's context gauge a bar of `cells` cells (0: the words only).
    pub fn set_context_bar(&mut self, cells: usize) {
        self.context_bar_cells = cells;
    }

    /// How full the context window was at the goal run's last model call, once known.
    pub fn context(&self) -> Option<super::summary::Context> {
        self.context
    }

    /// The activity line ("thinking… 4s · Ctrl-C to cancel", a running tool with its elapsed
    /// time and output tail) as of the last event or tick, neutralised, coloured as the
    /// options say, and cut to less than `width` columns; `None` when nothing runs.
    pub fn status_line(&self, width: usize) -> Option<String> {
        let interrupt = if self.is_transcript() {
            "Ctrl-C to detach"
        } else {
            "Ctrl-C to cancel"
        };
        let line = self.activity.line(self.now, width, interrupt)?;
        // Neutralised first: an escape shown as `^[` takes two columns.
        let line = truncate_to_width(&neutralise(&line), width.saturating_sub(1));
        Some(paint(self.options.color, Style::Dim, &line))
    }

    /// Whether thinking and running tools are tracked for an activity line, drawn here or by
    /// the caller.
    pub(super) fn tracks_activity(&self) -> bool {
        !self.options.json && (self.status_drawn_by_caller || self.options.redraws())
    }

    /// The caller answers approvals of the run itself: do not render their events.
    pub fn set_approvals_handled(&mut self, handled: bool) {
        self.approvals_handled = handled;
    }
}
