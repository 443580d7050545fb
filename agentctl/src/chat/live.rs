//! The live area of `agentctl chat`: a few rows kept directly above the line being typed while
//! a run streams (the answer's unfinished line, or the last rows of the markdown block still
//! being written, then the renderer's activity line), redrawn in place. Every update is one message for the line editor's printer: move up over the rows
//! drawn last time and erase them, then the lines that stay (each ending `\n`), then the new
//! live rows (each ending `\n`, each cut to fit one row). Pure: the editor's printer writes
//! the messages, the chat loop decides when.

use crate::render::{Output, display_width, split_at_width, truncate_to_width};

/// Rows of the answer's open block shown while it is written (its last ones).
const OPEN_ROWS: usize = 8;

/// Columns between tab stops: a tab in the unfinished line becomes spaces, so the row's width
/// is known.
const TAB_STOP: usize = 8;

/// The lines waiting to be written and the live rows on the screen.
#[derive(Debug, Default)]
pub struct LiveArea {
    /// Complete lines not yet written; they stay above the live rows.
    finished: String,
    /// The answer's line after its last newline (tabs expanded): a live row until its newline
    /// comes.
    partial: String,
    /// The rows the last message drew, top to bottom: the next message erases them.
    drawn: Vec<String>,
}

impl LiveArea {
    /// Add the renderer's output (stdout and stderr share the terminal, in order).
    pub fn push(&mut self, outputs: Vec<Output>) {
        for output in outputs {
            let (Output::Stdout(text) | Output::Stderr(text)) = output;
            self.push_text(&text);
        }
    }

    /// A line of our own: it ends the unfinished line first, so it never joins the model's
    /// text.
    pub fn note(&mut self, line: &str) {
        self.end_line();
        self.push_text(line);
        self.push_text("\n");
    }

    /// The unfinished line becomes a line that stays (the run ended without a newline).
    pub fn end_line(&mut self) {
        if !self.partial.is_empty() {
            self.push_text("\n");
        }
    }

    /// The message that brings the screen up to date, with `status` (the activity line, if
    /// any) below the unfinished line, every row less than `width` columns wide; `None` when
    /// the screen already shows all of it. An unfinished line wider than a row keeps its full
    /// rows as lines that stay: only its last row is live.
    pub fn update(
        &mut self,
        open: Option<&str>,
        status: Option<&str>,
        width: usize,
    ) -> Option<String> {
        // The last column is left free: some terminals wrap when it is written.
        let columns = width.saturating_sub(1).max(1);
        while display_width(&self.partial) > columns {
            let (head, rest) = split_at_width(&self.partial, columns);
            self.finished.push_str(head);
            self.finished.push('\n');
            self.partial = rest.to_owned();
        }
        let mut rows = Vec::new();
        if !self.partial.is_empty() {
            rows.push(self.partial.clone());
        }
        if let Some(open) = open {
            rows.extend(open_rows(open, columns));
        }
        if let Some(status) = status.filter(|status| !status.is_empty()) {
            rows.push(truncate_to_width(status, columns));
        }
        if rows.is_empty() && self.finished.is_empty() && !self.drawn.is_empty() {
            // Erasing the rows alone would leave the editor a message without a newline, and
            // it adds one (a blank line no one counts): keep one blank live row instead.
            rows.push(String::new());
        }
        if self.finished.is_empty() && rows == self.drawn {
            return None;
        }
        let mut message = String::new();
        if !self.drawn.is_empty() {
            message.push_str(&format!("\r\x1b[{}A\x1b[J", self.drawn.len()));
        }
        message.push_str(&std::mem::take(&mut self.finished));
        for row in &rows {
            message.push_str(row);
            message.push('\n');
        }
        self.drawn = rows;
        (!message.is_empty()).then_some(message)
    }

    /// The live rows on the screen now (as the last message drew them).
    #[cfg(test)]
    pub fn drawn(&self) -> &[String] {
        &self.drawn
    }

    fn push_text(&mut self, text: &str) {
        for c in text.chars() {
            match c {
                '\n' => {
                    self.finished.push_str(&self.partial);
                    self.finished.push('\n');
                    self.partial.clear();
                }
                '\t' => {
                    let spaces = TAB_STOP - display_width(&self.partial) % TAB_STOP;
                    self.partial.extend(std::iter::repeat_n(' ', spaces));
                }
                c => self.partial.push(c),
            }
        }
    }
}

/// The last rows of the answer's open block (rendered as it stands), each cut between words
/// to fit: a view of what is being written until the finished block replaces it.
fn open_rows(open: &str, columns: usize) -> Vec<String> {
    let mut rows = Vec::new();
    for line in open.trim_end_matches('\n').lines() {
        let mut rest = expand_tabs(line);
        loop {
            let (head, tail) = split_at_width(&rest, columns);
            rows.push(head.trim_end().to_owned());
            if tail.is_empty() {
                break;
            }
            rest = tail.to_owned();
        }
        if rows.len() > 4 * OPEN_ROWS {
            rows.drain(..rows.len() - OPEN_ROWS);
        }
    }
    let skip = rows.len().saturating_sub(OPEN_ROWS);
    rows.split_off(skip)
}

fn expand_tabs(line: &str) -> String {
    let mut out = String::new();
    for c in line.chars() {
        if c == '\t' {
            let spaces = TAB_STOP - display_width(&out) % TAB_STOP;
            out.extend(std::iter::repeat_n(' ', spaces));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(text: &str) -> Vec<Output> {
        vec![Output::Stdout(text.to_owned())]
    }

    /// Replays `messages` on a screen of `width` columns the way the terminal shows them:
    /// each message starts where the editor's prompt was (just below the live rows).
    fn screen(messages: &[String]) -> Vec<String> {
        let mut lines: Vec<String> = Vec::new();
        for message in messages {
            let mut rest = message.as_str();
            if let Some(clear) = rest.strip_prefix("\r\x1b[") {
                let (count, after) = clear.split_once("A\x1b[J").expect("a clear");
                let count: usize = count.parse().expect("a row count");
                assert!(count <= lines.len(), "erases {count} of {lines:?}");
                lines.truncate(lines.len() - count);
                rest = after;
            }
            assert!(!rest.contains('\x1b'), "{rest:?}");
            assert!(rest.ends_with('\n'), "{message:?} must end a line");
            lines.extend(rest.lines().map(str::to_owned));
        }
        lines
    }

    #[test]
    fn the_unfinished_line_shows_and_ends_up_written_once() {
        let mut live = LiveArea::default();
        let mut messages = Vec::new();
        live.push(out("Hello wor"));
        messages.push(live.update(None, None, 80).expect("the half line"));
        assert_eq!(screen(&messages), ["Hello wor"]);
        live.push(out("ld.\nSecond"));
        messages.extend(live.update(None, None, 80));
        assert_eq!(screen(&messages), ["Hello world.", "Second"]);
        live.push(vec![Output::Stderr("\ntokens 10 in · 5 out\n".into())]);
        messages.extend(live.update(None, None, 80));
        assert_eq!(
            screen(&messages),
            ["Hello world.", "Second", "tokens 10 in · 5 out"]
        );
        assert!(live.drawn().is_empty());
        assert_eq!(live.update(None, None, 80), None, "nothing more to show");
    }

    #[test]
    fn the_status_row_follows_the_unfinished_line_and_goes_when_the_run_ends() {
        let mut live = LiveArea::default();
        let mut messages = Vec::new();
        messages.extend(live.update(None, Some("⠋ thinking… 0s · Ctrl-C to cancel"), 80));
        messages.extend(live.update(None, Some("⠋ thinking… 0s · Ctrl-C to cancel"), 80));
        assert_eq!(messages.len(), 1, "an unchanged status is not redrawn");
        messages.extend(live.update(None, Some("⠙ thinking… 1s · Ctrl-C to cancel"), 80));
        assert_eq!(screen(&messages), ["⠙ thinking… 1s · Ctrl-C to cancel"]);
        live.push(out("Part"));
        live.note("queued steer: use tabs");
        messages.extend(live.update(None, Some("⠹ run_shell: make · 2s"), 80));
        assert_eq!(
            screen(&messages),
            ["Part", "queued steer: use tabs", "⠹ run_shell: make · 2s"]
        );
        // The status went and nothing else came: a blank live row keeps the count true.
        messages.extend(live.update(None, None, 80));
        assert_eq!(screen(&messages), ["Part", "queued steer: use tabs", ""]);
        assert_eq!(live.update(None, None, 80), None);
        live.push(vec![Output::Stderr("tokens 1 in\n".into())]);
        messages.extend(live.update(None, None, 80));
        assert_eq!(
            screen(&messages),
            ["Part", "queued steer: use tabs", "tokens 1 in"]
        );
        assert!(live.drawn().is_empty());
    }

    #[test]
    fn live_rows_never_reach_the_last_column() {
        let mut live = LiveArea::default();
        let mut messages = Vec::new();
        let text = "word ".repeat(30);
        live.push(out(&text));
        let status = format!("⠋ run_shell: {}", "x".repeat(200));
        messages.extend(live.update(None, Some(&status), 50));
        live.push(out("and\tthe end"));
        messages.extend(live.update(None, Some(&status), 50));
        live.end_line();
        messages.extend(live.update(None, None, 50));
        let lines = screen(&messages);
        for line in &lines {
            assert!(display_width(line) < 50, "{line:?}");
        }
        // The text is all there, in order, once: rows were cut between words.
        let joined: String = lines.concat();
        assert_eq!(joined, format!("{text}and      the end"));
    }

    #[test]
    fn nothing_to_show_sends_nothing() {
        let mut live = LiveArea::default();
        assert_eq!(live.update(None, None, 80), None);
        live.push(out(""));
        assert_eq!(live.update(None, None, 0), None);
    }
}
