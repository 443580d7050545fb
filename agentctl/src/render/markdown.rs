//! The answer's markdown rendered for a terminal (`run`, `attach` and chat when stdout is one):
//! headings, emphasis, inline code, lists, block quotes, code blocks with syntax colours,
//! tables, links and rules, wrapped to the width, never cut. `pulldown-cmark` parses; the
//! writer (`writer`, with `table`, `code` and `wrap`) is ours and writes ANSI styles only when
//! colours are on.
//!
//! The text streams in as deltas, so it is rendered a block at a time (`MarkdownStream`): a
//! top-level block (paragraph, list, code fence, table, …) is written once the first line of
//! the next one is complete, since only then can no more text change it (block structure is
//! decided line by line; a line still being written can look like another block); the open
//! block waits for that or for the end of the answer. Every byte of the answer is in exactly one rendered block: nothing
//! is written twice, nothing is lost.

mod code;
mod table;
mod wrap;
mod writer;

#[cfg(test)]
mod tests;

use pulldown_cmark::{Event, Options, Parser};

/// How the markdown is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkdownOptions {
    /// Styles and colours (SGR sequences); off with `NO_COLOR` or `--color never`, when the
    /// structure (bullets, indents, table columns, fences) still shows.
    pub color: bool,
    /// Columns the lines wrap to.
    pub width: usize,
}

/// Text waiting longer than this is parsed again only after it has grown by an eighth: a huge
/// open block (a long code fence) costs linear time, not quadratic.
const REPARSE_EVERY_LINE_UNDER: usize = 4096;

/// An answer arriving in pieces, rendered block by block.
#[derive(Debug, Default)]
pub struct MarkdownStream {
    /// The text of the open block (and of any block after it not yet seen as begun): what
    /// has not been rendered.
    pending: String,
    /// Length of `pending` when it was last parsed.
    parsed_len: usize,
    /// Some block was rendered: the next one is set off by a blank line.
    rendered_any: bool,
}

impl MarkdownStream {
    /// Add `text`; the blocks it completed, rendered (empty when none did).
    pub fn push(&mut self, text: &str, options: MarkdownOptions) -> String {
        self.pending.push_str(text);
        // Only whole lines are judged: a line being written can look like another block
        // (`|` alone is no table row).
        if !text.contains('\n') {
            return String::new();
        }
        let grown = self.pending.len() - self.parsed_len;
        if self.pending.len() > REPARSE_EVERY_LINE_UNDER && grown < self.pending.len() / 8 {
            return String::new();
        }
        self.parsed_len = self.pending.len();
        let whole_lines = self.pending.rfind('\n').map_or(0, |at| at + 1);
        let complete = complete_blocks_end(&self.pending[..whole_lines]);
        if complete == 0 {
            return String::new();
        }
        let rest = self.pending.split_off(complete);
        let done = std::mem::replace(&mut self.pending, rest);
        self.parsed_len = self.pending.len();
        self.rendered(&done, options)
    }

    /// The answer ended: whatever waits, rendered.
    pub fn finish(&mut self, options: MarkdownOptions) -> String {
        let rest = std::mem::take(&mut self.pending);
        self.parsed_len = 0;
        let out = self.rendered(&rest, options);
        self.rendered_any = false;
        out
    }

    /// The text not rendered yet, as it came (a live view of the open block may show it).
    pub fn pending(&self) -> &str {
        &self.pending
    }

    /// Whether a block of this answer was written (the next is set off by a blank line).
    pub fn rendered_any(&self) -> bool {
        self.rendered_any
    }

    fn rendered(&mut self, markdown: &str, options: MarkdownOptions) -> String {
        let out = render(markdown, options);
        if out.is_empty() {
            return out;
        }
        let lead = if self.rendered_any { "\n" } else { "" };
        self.rendered_any = true;
        format!("{lead}{out}")
    }
}

/// `markdown` as lines for the terminal, each ending in `\n` (empty for blank text).
pub fn render(markdown: &str, options: MarkdownOptions) -> String {
    writer::Writer::new(options).write(Parser::new_ext(markdown, parser_options()))
}

/// `render` for a look at a block still being written (redrawn as it grows): the same, but
/// code is not coloured, which is the costly part.
pub fn render_preview(markdown: &str, options: MarkdownOptions) -> String {
    writer::Writer::new(options)
        .without_highlighting()
        .write(Parser::new_ext(markdown, parser_options()))
}

/// The extensions models use: tables, strikethrough and task lists (GitHub's).
fn parser_options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// Where the last top-level block of `text` begins (the start of its line): everything before
/// is blocks no more text can change. Zero while there is at most one block.
fn complete_blocks_end(text: &str) -> usize {
    let mut depth = 0usize;
    let mut last_start = None;
    let mut blocks = 0usize;
    for (event, range) in Parser::new_ext(text, parser_options()).into_offset_iter() {
        match event {
            Event::Start(_) => {
                if depth == 0 {
                    blocks += 1;
                    last_start = Some(range.start);
                }
                depth += 1;
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            _ if depth == 0 => {
                // A block without children (a rule).
                blocks += 1;
                last_start = Some(range.start);
            }
            _ => {}
        }
    }
    match last_start {
        Some(start) if blocks >= 2 => text[..start].rfind('\n').map_or(0, |at| at + 1),
        _ => 0,
    }
}
