//! How many terminal columns text takes, and cutting it to fit: Unicode's widths through
//! `unicode-width` (wide CJK and emoji count two, combining marks none). agentctl's own colour
//! sequences (`ESC [ … m`; text from elsewhere was neutralised first, so an ESC is always
//! ours) take no columns, are never split, and a cut that drops one ends with a reset.

use unicode_width::UnicodeWidthChar;

/// Ends every colour and style (SGR 0).
pub const RESET: &str = "\x1b[0m";

/// Columns `text` takes on a terminal.
pub fn display_width(text: &str) -> usize {
    pieces(text).map(|piece| piece.width()).sum()
}

/// At most `columns` columns of `text`, ending in `…` when cut.
pub fn truncate_to_width(text: &str, columns: usize) -> String {
    if display_width(text) <= columns {
        return text.to_owned();
    }
    let budget = columns.saturating_sub(1);
    let mut used = 0;
    let mut cut = String::new();
    let mut styled = false;
    for piece in pieces(text) {
        match piece {
            Piece::Escape(sequence) => {
                styled = true;
                cut.push_str(sequence);
            }
            Piece::Char(c, width) => {
                if used + width > budget {
                    break;
                }
                used += width;
                cut.push(c);
            }
        }
    }
    if columns > 0 {
        cut.push('…');
    }
    if styled {
        cut.push_str(RESET);
    }
    cut
}

/// At most `columns` columns of the end of `text`, starting with `…` when cut (a line being
/// typed shows where the cursor is).
pub fn tail_to_width(text: &str, columns: usize) -> String {
    if display_width(text) <= columns || columns == 0 {
        return if columns == 0 {
            String::new()
        } else {
            text.to_owned()
        };
    }
    let budget = columns - 1;
    let mut used = 0;
    let mut kept = Vec::new();
    for c in text.chars().rev() {
        let width = char_width(c);
        if used + width > budget {
            break;
        }
        used += width;
        kept.push(c);
    }
    std::iter::once('…').chain(kept.into_iter().rev()).collect()
}

/// `text` cut where a row of `columns` columns ends: the head fits (at least one character,
/// so the rest always shrinks), ending after the last space when it has one past its first
/// half (a word is not split when it can be kept whole); the rest follows on the next row. A
/// colour sequence stays whole, on the side of the character it colours.
pub fn split_at_width(text: &str, columns: usize) -> (&str, &str) {
    let mut used = 0;
    let mut cut = text.len();
    let mut after_space = None;
    let mut at = 0;
    let mut seen_char = false;
    for piece in pieces(text) {
        let here = at;
        at += piece.len();
        let Piece::Char(c, width) = piece else {
            continue;
        };
        if used + width > columns && seen_char {
            cut = here;
            break;
        }
        seen_char = true;
        used += width;
        if c == ' ' && used * 2 > columns {
            after_space = Some(at);
        }
    }
    if cut < text.len()
        && let Some(space) = after_space
    {
        cut = space;
    }
    if cut < text.len() {
        // Colour sequences right before the cut belong to what follows.
        while let Some(start) = text[..cut].rfind('\x1b') {
            if !is_sgr(&text[start..cut]) {
                break;
            }
            cut = start;
        }
    }
    text.split_at(cut)
}

/// `text` without agentctl's colour sequences.
pub fn strip_styles(text: &str) -> String {
    pieces(text)
        .filter_map(|piece| match piece {
            Piece::Char(c, _) => Some(c),
            Piece::Escape(_) => None,
        })
        .collect()
}

/// Columns one character takes (control characters none: they were neutralised before).
pub fn char_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

/// A character with its width, or a whole colour sequence.
#[derive(Clone, Copy, Debug)]
enum Piece<'a> {
    Char(char, usize),
    Escape(&'a str),
}

impl Piece<'_> {
    fn width(self) -> usize {
        match self {
            Piece::Char(_, width) => width,
            Piece::Escape(_) => 0,
        }
    }

    fn len(self) -> usize {
        match self {
            Piece::Char(c, _) => c.len_utf8(),
            Piece::Escape(sequence) => sequence.len(),
        }
    }
}

/// The pieces of `text` in order.
fn pieces(text: &str) -> impl Iterator<Item = Piece<'_>> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let c = rest.chars().next()?;
        if c == '\x1b'
            && let Some(length) = sgr_length(rest)
        {
            let (sequence, after) = rest.split_at(length);
            rest = after;
            return Some(Piece::Escape(sequence));
        }
        rest = &rest[c.len_utf8()..];
        Some(Piece::Char(c, char_width(c)))
    })
}

/// The length of the SGR sequence `text` starts with (`ESC [` digits and `;` then `m`).
fn sgr_length(text: &str) -> Option<usize> {
    let body = text.strip_prefix("\x1b[")?;
    let end = body.find(|c: char| !(c.is_ascii_digit() || c == ';'))?;
    body[end..].starts_with('m').then_some(2 + end + 1)
}

fn is_sgr(text: &str) -> bool {
    sgr_length(text) == Some(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_and_cuts() {
        assert_eq!(display_width("abc"), 3);
        assert_eq!(display_width("日本"), 4);
        assert_eq!(display_width("e\u{301}"), 1);
        assert_eq!(display_width("🦀"), 2);
        assert_eq!(truncate_to_width("abcdef", 4), "abc…");
        assert_eq!(truncate_to_width("abc", 4), "abc");
        assert_eq!(truncate_to_width("日本語です", 5), "日本…");
        assert_eq!(truncate_to_width("abc", 0), "");
        assert_eq!(tail_to_width("why not? no, use tabs", 10), "… use tabs");
        assert_eq!(tail_to_width("short", 10), "short");
    }

    #[test]
    fn colour_sequences_take_no_columns_and_are_never_split() {
        let red = "\x1b[31mred\x1b[0m";
        assert_eq!(display_width(red), 3);
        assert_eq!(truncate_to_width(red, 5), red);
        // Cut: the reset comes back at the end.
        assert_eq!(
            truncate_to_width("\x1b[2mabcdef\x1b[0m", 4),
            "\x1b[2mabc…\x1b[0m"
        );
        assert_eq!(
            split_at_width("\x1b[1mab\x1b[0m \x1b[1mcd\x1b[0m", 3),
            ("\x1b[1mab\x1b[0m ", "\x1b[1mcd\x1b[0m")
        );
        assert_eq!(strip_styles(red), "red");
        // A lone ESC (not a colour) counts like any character.
        assert_eq!(display_width("\x1b[2J"), 3);
    }

    #[test]
    fn rows_break_after_a_space_when_a_word_would_be_split() {
        assert_eq!(split_at_width("short", 10), ("short", ""));
        assert_eq!(
            split_at_width("hello big world", 10),
            ("hello big ", "world")
        );
        assert_eq!(split_at_width("abcdefghijkl", 5), ("abcde", "fghijkl"));
        // A space in the first half would leave a short row: cut the word instead.
        assert_eq!(split_at_width("a bcdefghij", 6), ("a bcde", "fghij"));
        assert_eq!(split_at_width("日本語", 3), ("日", "本語"));
        // At least one character, even one wider than the row.
        assert_eq!(split_at_width("日本", 1), ("日", "本"));
    }
}
