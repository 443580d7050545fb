//! Turning the renderer's output pieces into whole lines for the line editor's printer: the
//! printer writes above the line being typed, so a streamed half line waits here until its
//! newline (or the end of the run) arrives. Pure.

use crate::render::Output;

/// Text waiting for the end of its line.
#[derive(Debug, Default)]
pub struct LineAssembler {
    partial: String,
}

impl LineAssembler {
    /// Add the renderer's output (stdout and stderr share the terminal, in order); the whole
    /// lines it completes, if any.
    pub fn push(&mut self, outputs: Vec<Output>) -> Option<String> {
        for output in outputs {
            let (Output::Stdout(text) | Output::Stderr(text)) = output;
            self.partial.push_str(&text);
        }
        let end = self.partial.rfind('\n')?;
        let rest = self.partial.split_off(end + 1);
        let mut lines = std::mem::replace(&mut self.partial, rest);
        lines.pop();
        Some(lines)
    }

    /// A line of our own: it ends any half line first, so it never joins the model's text.
    pub fn note(&mut self, line: &str) -> String {
        let mut text = std::mem::take(&mut self.partial);
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(line);
        text
    }

    /// The half line left, as a line of its own (the run ended without a newline).
    pub fn flush(&mut self) -> Option<String> {
        if self.partial.is_empty() {
            None
        } else {
            Some(std::mem::take(&mut self.partial))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_lines_wait_for_their_newline() {
        let mut lines = LineAssembler::default();
        assert_eq!(lines.push(vec![Output::Stdout("Hel".into())]), None);
        assert_eq!(
            lines.push(vec![
                Output::Stdout("lo\nwor".into()),
                Output::Stderr("\n[tool] read_file\n".into())
            ]),
            Some("Hello\nwor\n[tool] read_file".into())
        );
        assert_eq!(lines.push(vec![Output::Stdout("tail".into())]), None);
        assert_eq!(lines.note("queued steer: x"), "tail\nqueued steer: x");
        assert_eq!(lines.flush(), None);
        lines.push(vec![Output::Stdout("end".into())]);
        assert_eq!(lines.flush(), Some("end".into()));
    }
}
