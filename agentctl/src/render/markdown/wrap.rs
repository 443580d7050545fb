//! Styled text to rows of a width: words kept whole where they fit, every row ending with its
//! styles reset and the next one starting with them again, so a prefix drawn before a row (a
//! quote bar, a list indent) never takes the text's style and a style never leaks past a row.

use crate::render::width::{RESET, display_width, split_at_width};

/// SGR sequences `text` sets, in order, since its last reset: what is in force at its end.
fn styles_in_force(text: &str, mut in_force: String) -> String {
    let mut rest = text;
    while let Some(start) = rest.find("\x1b[") {
        let after = &rest[start + 2..];
        let Some(end) = after.find(|c: char| !(c.is_ascii_digit() || c == ';')) else {
            break;
        };
        if after[end..].starts_with('m') {
            let sequence = &rest[start..start + 2 + end + 1];
            if sequence == RESET || sequence == "\x1b[m" {
                in_force.clear();
            } else {
                in_force.push_str(sequence);
            }
            rest = &after[end + 1..];
        } else {
            rest = after;
        }
    }
    in_force
}

/// `text` as rows of at most `columns` columns (at least one row); a `\n` ends a row. A style
/// in force goes on across rows and lines.
pub fn wrap(text: &str, columns: usize) -> Vec<String> {
    let columns = columns.max(1);
    let mut rows = Vec::new();
    let mut in_force = String::new();
    for line in text.split('\n') {
        let mut rest = line;
        loop {
            let (head, tail) = if display_width(rest) <= columns {
                (rest, "")
            } else {
                split_row(rest, columns)
            };
            let mut row = in_force.clone();
            row.push_str(if tail.is_empty() {
                head
            } else {
                head.trim_end_matches(' ')
            });
            in_force = styles_in_force(head, in_force);
            if !in_force.is_empty() {
                row.push_str(RESET);
            }
            rows.push(row);
            if tail.is_empty() {
                break;
            }
            rest = tail;
        }
    }
    rows
}

/// `split_at_width`, but a row whose words fill it exactly ends there: the space after them
/// is the break (and is not carried to the next row).
fn split_row(text: &str, columns: usize) -> (&str, &str) {
    let (head, tail) = split_at_width(text, columns + 1);
    match head.strip_suffix(' ') {
        Some(words) if display_width(head) == columns + 1 => (words, tail),
        _ => split_at_width(text, columns),
    }
}

/// Pads `text` to `columns` columns: on the right, the left, or both (centred).
pub fn pad(text: &str, columns: usize, align: Align) -> String {
    let missing = columns.saturating_sub(display_width(text));
    let (left, right) = match align {
        Align::Left => (0, missing),
        Align::Right => (missing, 0),
        Align::Center => (missing / 2, missing - missing / 2),
    };
    format!("{}{text}{}", " ".repeat(left), " ".repeat(right))
}

/// How a table cell's text sits in its column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
    Center,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_wraps_between_words() {
        assert_eq!(wrap("one two three", 8), ["one two", "three"]);
        assert_eq!(wrap("", 8), [""]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
    }

    #[test]
    fn a_style_is_reset_at_each_row_end_and_taken_up_again() {
        let bold = "\x1b[0m\x1b[1mvery bold words\x1b[0m";
        let rows = wrap(bold, 10);
        assert_eq!(
            rows,
            ["\x1b[0m\x1b[1mvery bold\x1b[0m", "\x1b[1mwords\x1b[0m"]
        );
        assert_eq!(pad("ab", 5, Align::Right), "   ab");
        assert_eq!(pad("ab", 5, Align::Center), " ab  ");
        assert_eq!(pad("\x1b[1mab\x1b[0m", 3, Align::Left), "\x1b[1mab\x1b[0m ");
    }
}
