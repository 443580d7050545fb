//! How many terminal columns text takes, and cutting it to fit: enough of Unicode's East Asian
//! width for a status line (wide CJK and emoji count two, combining marks none) without a
//! dependency.

/// Columns `text` takes on a terminal.
pub fn display_width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

/// At most `columns` columns of `text`, ending in `…` when cut.
pub fn truncate_to_width(text: &str, columns: usize) -> String {
    if display_width(text) <= columns {
        return text.to_owned();
    }
    let budget = columns.saturating_sub(1);
    let mut used = 0;
    let mut cut = String::new();
    for c in text.chars() {
        let width = char_width(c);
        if used + width > budget {
            break;
        }
        used += width;
        cut.push(c);
    }
    if columns > 0 {
        cut.push('…');
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
/// half (a word is not split when it can be kept whole); the rest follows on the next row.
pub fn split_at_width(text: &str, columns: usize) -> (&str, &str) {
    let mut used = 0;
    let mut cut = text.len();
    let mut after_space = None;
    for (at, c) in text.char_indices() {
        let width = char_width(c);
        if used + width > columns && at > 0 {
            cut = at;
            break;
        }
        used += width;
        if c == ' ' && used * 2 > columns {
            after_space = Some(at + 1);
        }
    }
    if cut < text.len()
        && let Some(space) = after_space
    {
        cut = space;
    }
    text.split_at(cut)
}

fn char_width(c: char) -> usize {
    match c as u32 {
        0x0300..=0x036f | 0x200b..=0x200f | 0xfe00..=0xfe0f => 0,
        0x1100..=0x115f
        | 0x2e80..=0xa4cf
        | 0xac00..=0xd7a3
        | 0xf900..=0xfaff
        | 0xfe30..=0xfe4f
        | 0xff00..=0xff60
        | 0xffe0..=0xffe6
        | 0x1f300..=0x1f64f
        | 0x1f900..=0x1f9ff
        | 0x20000..=0x3fffd => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_and_cuts() {
        assert_eq!(display_width("abc"), 3);
        assert_eq!(display_width("日本"), 4);
        assert_eq!(display_width("e\u{301}"), 1);
        assert_eq!(truncate_to_width("abcdef", 4), "abc…");
        assert_eq!(truncate_to_width("abc", 4), "abc");
        assert_eq!(truncate_to_width("日本語です", 5), "日本…");
        assert_eq!(truncate_to_width("abc", 0), "");
        assert_eq!(tail_to_width("why not? no, use tabs", 10), "… use tabs");
        assert_eq!(tail_to_width("short", 10), "short");
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
