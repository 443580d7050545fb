//! Syntax colours for a code block, by `syntect` with the syntaxes and themes it ships,
//! loaded once, the first time a block names a language it knows. Foreground colours only (the
//! terminal's background stays), as 24-bit colour where the terminal says it has it
//! (`COLORTERM`), else the nearest of the 256.

use std::sync::LazyLock;

use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Style, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;

/// The theme used: readable on the dark backgrounds most terminals have.
const THEME: &str = "base16-eighties.dark";

/// A block larger than this is shown without colours. Highlighting is regex work per line
/// (about 4,000 lines a second in a release build), done where events are handled: the bound
/// keeps one block to a fraction of a second.
const MAX_HIGHLIGHTED_BYTES: usize = 32 * 1024;

/// A line longer than this is shown without colours (and those after it in the block, whose
/// state it would set).
const MAX_HIGHLIGHTED_LINE: usize = 4096;

struct Highlighter {
    syntaxes: SyntaxSet,
    theme: Theme,
}

static HIGHLIGHTER: LazyLock<Option<Highlighter>> = LazyLock::new(|| {
    let syntaxes = SyntaxSet::load_defaults_newlines();
    let mut themes = ThemeSet::load_defaults();
    let theme = themes.themes.remove(THEME)?;
    Some(Highlighter { syntaxes, theme })
});

/// Whether colours can be 24-bit.
static TRUE_COLOR: LazyLock<bool> = LazyLock::new(|| {
    std::env::var("COLORTERM").is_ok_and(|value| value == "truecolor" || value == "24bit")
});

/// The lines of `code` (each without its `\n`), coloured as `language` when it is one syntect
/// knows; `None` when it is not (or the block is too big), for the caller to show them plain.
pub fn highlight(code: &str, language: &str) -> Option<Vec<String>> {
    if language.is_empty() || code.len() > MAX_HIGHLIGHTED_BYTES {
        return None;
    }
    let highlighter = HIGHLIGHTER.as_ref()?;
    let syntax = highlighter
        .syntaxes
        .find_syntax_by_token(language)
        .or_else(|| highlighter.syntaxes.find_syntax_by_extension(language))?;
    let mut lines = HighlightLines::new(syntax, &highlighter.theme);
    let mut out = Vec::new();
    let mut plain_from = None;
    for (index, line) in code.split_inclusive('\n').enumerate() {
        if line.len() > MAX_HIGHLIGHTED_LINE {
            plain_from = Some(index);
            break;
        }
        let Ok(pieces) = lines.highlight_line(line, &highlighter.syntaxes) else {
            plain_from = Some(index);
            break;
        };
        let mut row = String::new();
        for (style, text) in pieces {
            let text = text.trim_end_matches('\n');
            if text.is_empty() {
                continue;
            }
            row.push_str(&sgr(style));
            row.push_str(text);
        }
        if row.contains('\x1b') {
            row.push_str(crate::render::width::RESET);
        }
        out.push(row);
    }
    if let Some(from) = plain_from {
        out.extend(
            code.split_inclusive('\n')
                .skip(from)
                .map(|line| line.trim_end_matches('\n').to_owned()),
        );
    }
    Some(out)
}

/// The SGR sequence of a syntect style (reset first, so styles never add up).
fn sgr(style: Style) -> String {
    let color = style.foreground;
    let mut codes = String::from("0");
    if style.font_style.contains(FontStyle::BOLD) {
        codes.push_str(";1");
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        codes.push_str(";3");
    }
    if style.font_style.contains(FontStyle::UNDERLINE) {
        codes.push_str(";4");
    }
    if *TRUE_COLOR {
        codes.push_str(&format!(";38;2;{};{};{}", color.r, color.g, color.b));
    } else {
        codes.push_str(&format!(";38;5;{}", ansi256(color.r, color.g, color.b)));
    }
    format!("\x1b[{codes}m")
}

/// The nearest of the 256 colours: the 6×6×6 cube, or the grey ramp for greys.
fn ansi256(r: u8, g: u8, b: u8) -> u8 {
    let (max, min) = (r.max(g).max(b), r.min(g).min(b));
    if max - min < 10 {
        // Greys: 24 steps from 8 to 238.
        return match r {
            0..=3 => 16,
            248..=255 => 231,
            _ => 232 + (u16::from(r).saturating_sub(8) * 24 / 240).min(23) as u8,
        };
    }
    let step = |value: u8| -> u8 {
        match value {
            0..=47 => 0,
            48..=114 => 1,
            _ => ((u16::from(value) - 35) / 40) as u8,
        }
    };
    16 + 36 * step(r) + 6 * step(g) + step(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_language_is_coloured_and_an_unknown_one_is_not() {
        let lines = highlight("fn main() {\n    let x = 1;\n}\n", "rust").expect("rust is known");
        assert_eq!(lines.len(), 3);
        assert!(lines[0].contains("\x1b["), "{lines:?}");
        assert_eq!(
            crate::render::width::strip_styles(&lines[1]),
            "    let x = 1;"
        );
        assert!(highlight("x", "no-such-language").is_none());
        assert!(highlight("x", "").is_none());
        // An extension works as well as a name.
        assert!(highlight("print(1)\n", "py").is_some());
    }

    #[test]
    fn colours_map_to_the_256() {
        assert_eq!(ansi256(0, 0, 0), 16);
        assert_eq!(ansi256(255, 255, 255), 231);
        assert_eq!(ansi256(255, 0, 0), 196);
        assert_eq!(ansi256(0, 0, 255), 21);
        assert!((232..=255).contains(&ansi256(128, 128, 128)));
    }
}
