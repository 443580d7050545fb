//! Colours on stderr: only when asked (`--color always`) or on a terminal without `NO_COLOR`
//! (`auto`). Applied to text already neutralised, so only agentctl's own sequences remain.

/// How a piece of agentctl's own text is coloured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Succeeded (✓).
    Good,
    /// Failed (✗, errors).
    Bad,
    /// Needs attention (warnings, approvals).
    Attention,
    /// Secondary (the activity line, the after-run line).
    Dim,
}

/// `text` in `style` when `color` is on (SGR sequences, reset after).
pub fn paint(color: bool, style: Style, text: &str) -> String {
    if !color || text.is_empty() {
        return text.to_owned();
    }
    let code = match style {
        Style::Good => "32",
        Style::Bad => "31",
        Style::Attention => "33",
        Style::Dim => "2",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

/// Whether `--color auto` colours: stderr is a terminal, `NO_COLOR` is unset or empty
/// (no-color.org) and `TERM` is not `dumb`.
pub fn auto_color(stderr_is_tty: bool, no_color: Option<&str>, term: Option<&str>) -> bool {
    stderr_is_tty && no_color.is_none_or(str::is_empty) && term != Some("dumb")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_colours_only_a_terminal_without_no_color() {
        assert!(auto_color(true, None, Some("xterm")));
        assert!(auto_color(true, Some(""), None));
        assert!(!auto_color(true, Some("1"), Some("xterm")));
        assert!(!auto_color(false, None, Some("xterm")));
        assert!(!auto_color(true, None, Some("dumb")));
        assert_eq!(paint(false, Style::Bad, "x"), "x");
        assert_eq!(paint(true, Style::Bad, "x"), "\x1b[31mx\x1b[0m");
    }
}
