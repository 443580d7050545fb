//! The ANSI writer: `pulldown-cmark`'s events of a few blocks turned into terminal lines. Block
//! quotes and list items are containers whose prefixes (a bar, a bullet or number, then its
//! indent) start every line inside them; inline text is gathered with its styles, then wrapped
//! to the columns the prefixes leave. Without colours, the structure stays: bullets, numbers,
//! bars, `# ` marks, backticks around inline code, fences around code blocks, table columns.

use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Tag, TagEnd};

use super::MarkdownOptions;
use super::code::highlight;
use super::table::Table;
use super::wrap::{Align, wrap};
use crate::render::width::{RESET, display_width, strip_styles};

/// Bullets of unordered lists, by depth (the deepest repeat the last).
const BULLETS: [&str; 3] = ["•", "◦", "▪"];
/// What starts each line inside a block quote.
const QUOTE_BAR: &str = "│ ";
/// Text is never wrapped narrower than this, however deep it is nested.
const MIN_TEXT_COLUMNS: usize = 20;
/// Columns a tab in a code block stops at.
const TAB_STOP: usize = 4;

/// SGR parameters of the styles.
const DIM: &str = "2";
const BOLD: &str = "1";
const ITALIC: &str = "3";
const STRIKE: &str = "9";
const LINK: &str = "4;34";
const INLINE_CODE: &str = "36";
const HEADING_TOP: &str = "1;35";
const HEADING: &str = "1";

/// A block lines are written inside.
#[derive(Debug)]
enum Container {
    Quote,
    /// A list item: its marker starts its first line, its width indents the others.
    Item {
        marker: String,
        shown: bool,
    },
}

/// The table being read.
#[derive(Debug, Default)]
struct TableState {
    table: Table,
    row: Vec<String>,
}

/// Writes the events of a few blocks as lines.
#[derive(Debug)]
pub struct Writer {
    options: MarkdownOptions,
    out: String,
    containers: Vec<Container>,
    /// The next number of each open list (`None`: unordered), innermost last.
    lists: Vec<Option<u64>>,
    /// The styled text of the paragraph, heading, item text or table cell being read.
    inline: String,
    /// Inline styles in force, innermost last.
    styles: Vec<&'static str>,
    /// The style of the block the inline text belongs to (a heading's).
    base: Option<&'static str>,
    /// A block ended: the next one is set off by a blank line.
    blank_before_next: bool,
    /// The code block being read: its language and text.
    code: Option<(String, String)>,
    /// Inside an HTML block: its text is written as it is.
    html: bool,
    table: Option<TableState>,
    /// Links and images being read: their target and where their text starts in `inline`.
    links: Vec<(String, usize)>,
    /// Code blocks get syntax colours (when colours are on).
    highlight: bool,
}

impl Writer {
    pub fn new(options: MarkdownOptions) -> Writer {
        Writer {
            options,
            out: String::new(),
            containers: Vec::new(),
            lists: Vec::new(),
            inline: String::new(),
            styles: Vec::new(),
            base: None,
            blank_before_next: false,
            code: None,
            html: false,
            table: None,
            links: Vec::new(),
            highlight: true,
        }
    }

    /// Code blocks without syntax colours.
    pub fn without_highlighting(mut self) -> Writer {
        self.highlight = false;
        self
    }

    /// The lines of `events`.
    pub fn write<'a>(mut self, events: impl Iterator<Item = Event<'a>>) -> String {
        for event in events {
            self.event(event);
        }
        self.flush_inline();
        self.out
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => {
                if self.options.color {
                    self.inline.push_str(&format!("{RESET}\x1b[{INLINE_CODE}m"));
                    self.inline.push_str(&code);
                    self.apply_style();
                } else {
                    self.inline.push('`');
                    self.inline.push_str(&code);
                    self.inline.push('`');
                }
            }
            Event::Html(html) if self.html => {
                for line in html.lines() {
                    self.rows(line);
                }
            }
            Event::Html(html) | Event::InlineHtml(html) => self.text(&html),
            Event::SoftBreak | Event::HardBreak => {
                if self.table.is_some() {
                    self.inline.push(' ');
                } else {
                    self.inline.push('\n');
                }
            }
            Event::Rule => {
                self.block_start();
                let rule = "─".repeat(self.text_columns());
                let rule = self.paint(DIM, &rule);
                self.line(&rule);
                self.blank_before_next = true;
            }
            Event::TaskListMarker(done) => {
                self.inline.push_str(if done { "[x] " } else { "[ ] " });
            }
            Event::FootnoteReference(name) => self.text(&format!("[^{name}]")),
            Event::InlineMath(math) | Event::DisplayMath(math) => self.text(&math),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.block_start(),
            Tag::Heading { level, .. } => {
                self.block_start();
                let depth = heading_depth(level);
                let marks = self.paint(DIM, &"#".repeat(depth));
                self.inline.push_str(&marks);
                self.inline.push(' ');
                self.base = Some(if depth <= 2 { HEADING_TOP } else { HEADING });
                self.apply_style();
            }
            Tag::BlockQuote(_) => {
                self.block_start();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => {
                self.block_start();
                let language = match kind {
                    CodeBlockKind::Fenced(info) => info
                        .split(|c: char| c.is_whitespace() || c == ',')
                        .next()
                        .unwrap_or("")
                        .trim_matches(|c| c == '{' || c == '}' || c == '.')
                        .to_owned(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((language, String::new()));
            }
            Tag::HtmlBlock => {
                self.block_start();
                self.html = true;
            }
            Tag::List(first) => {
                self.block_start();
                self.lists.push(first);
            }
            Tag::Item => {
                self.block_start();
                let depth = self.lists.len().max(1);
                let marker = match self.lists.last_mut() {
                    Some(Some(number)) => {
                        let marker = format!("{number}. ");
                        *number += 1;
                        marker
                    }
                    _ => format!("{} ", BULLETS[(depth - 1).min(BULLETS.len() - 1)]),
                };
                self.containers.push(Container::Item {
                    marker,
                    shown: false,
                });
            }
            Tag::Table(aligns) => {
                self.block_start();
                let aligns = aligns
                    .iter()
                    .map(|align| match align {
                        Alignment::Right => Align::Right,
                        Alignment::Center => Align::Center,
                        Alignment::None | Alignment::Left => Align::Left,
                    })
                    .collect();
                self.table = Some(TableState {
                    table: Table {
                        aligns,
                        ..Table::default()
                    },
                    row: Vec::new(),
                });
            }
            Tag::TableHead | Tag::TableRow | Tag::TableCell => self.inline.clear(),
            Tag::Emphasis => self.push_style(ITALIC),
            Tag::Strong => self.push_style(BOLD),
            Tag::Strikethrough => self.push_style(STRIKE),
            Tag::Link { dest_url, .. } => {
                self.links.push((dest_url.into_string(), self.inline.len()));
                self.push_style(LINK);
            }
            Tag::Image { dest_url, .. } => {
                self.inline.push_str("[image: ");
                self.links.push((dest_url.into_string(), self.inline.len()));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.block_end(),
            TagEnd::Heading(_) => {
                self.base = None;
                self.apply_style();
                self.block_end();
            }
            TagEnd::BlockQuote(_) => {
                self.flush_inline();
                self.containers.pop();
                self.blank_before_next = true;
            }
            TagEnd::CodeBlock => {
                if let Some((language, code)) = self.code.take() {
                    self.write_code(&language, &code);
                }
                self.blank_before_next = true;
            }
            TagEnd::HtmlBlock => {
                self.html = false;
                self.blank_before_next = true;
            }
            TagEnd::List(_) => {
                self.flush_inline();
                self.lists.pop();
                // A list nested in an item is part of the item: no blank line after it.
                self.blank_before_next = !self
                    .containers
                    .iter()
                    .any(|container| matches!(container, Container::Item { .. }));
            }
            TagEnd::Item => {
                self.flush_inline();
                if let Some(Container::Item { shown: false, .. }) = self.containers.last() {
                    // An empty item still shows its marker.
                    self.line("");
                }
                self.containers.pop();
            }
            TagEnd::TableCell => {
                let mut cell = std::mem::take(&mut self.inline);
                if cell.contains('\x1b') {
                    cell.push_str(RESET);
                }
                if let Some(state) = self.table.as_mut() {
                    state.row.push(cell.trim().to_owned());
                }
            }
            TagEnd::TableHead | TagEnd::TableRow => {
                if let Some(state) = self.table.as_mut() {
                    let row = std::mem::take(&mut state.row);
                    state.table.rows.push(row);
                    if tag == TagEnd::TableHead {
                        state.table.header_rows = 1;
                    }
                }
            }
            TagEnd::Table => {
                if let Some(state) = self.table.take() {
                    let color = self.options.color;
                    let dim = |text: &str| paint(color, DIM, text);
                    for line in state.table.lines(self.text_columns(), &dim) {
                        self.line(&line);
                    }
                }
                self.blank_before_next = true;
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => self.pop_style(),
            TagEnd::Link => {
                self.pop_style();
                self.link_target();
            }
            TagEnd::Image => {
                self.inline.push(']');
                self.link_target();
            }
            _ => {}
        }
    }

    fn text(&mut self, text: &str) {
        if let Some((_, code)) = self.code.as_mut() {
            code.push_str(text);
        } else {
            self.inline.push_str(&text.replace('\t', "    "));
        }
    }

    /// After a link's or an image's text: its target, unless the text already says it.
    fn link_target(&mut self) {
        let Some((target, start)) = self.links.pop() else {
            return;
        };
        let shown = strip_styles(self.inline.get(start..).unwrap_or(""));
        let bare = target.strip_prefix("mailto:").unwrap_or(&target);
        if target.is_empty() || shown == target || shown == bare {
            return;
        }
        let note = self.paint(DIM, &format!(" ({target})"));
        self.inline.push_str(&note);
        self.apply_style();
    }

    fn push_style(&mut self, style: &'static str) {
        self.styles.push(style);
        self.apply_style();
    }

    fn pop_style(&mut self) {
        self.styles.pop();
        self.apply_style();
    }

    /// Writes the styles in force now into the inline text (all of them, after a reset, so a
    /// style that ended takes nothing else with it).
    fn apply_style(&mut self) {
        if !self.options.color {
            return;
        }
        let codes: Vec<&str> = self.base.iter().chain(&self.styles).copied().collect();
        self.inline.push_str(RESET);
        if !codes.is_empty() {
            self.inline.push_str(&format!("\x1b[{}m", codes.join(";")));
        }
    }

    /// A block begins: the text before it (a tight item's) is written, then the blank line
    /// that sets it off from the block before, if any.
    fn block_start(&mut self) {
        self.flush_inline();
        if std::mem::take(&mut self.blank_before_next) {
            self.blank();
        }
    }

    fn block_end(&mut self) {
        self.flush_inline();
        self.blank_before_next = true;
    }

    /// Writes the inline text gathered, wrapped, as lines.
    fn flush_inline(&mut self) {
        if strip_styles(&self.inline).trim().is_empty() {
            self.inline.clear();
            return;
        }
        let mut text = std::mem::take(&mut self.inline);
        if text.contains('\x1b') {
            text.push_str(RESET);
        }
        self.rows(text.trim_end_matches('\n'));
    }

    /// `text` wrapped to the columns left, as lines.
    fn rows(&mut self, text: &str) {
        for row in wrap(text, self.text_columns()) {
            self.line(&row);
        }
    }

    fn write_code(&mut self, language: &str, code: &str) {
        let fence = self.paint(DIM, &format!("```{language}"));
        self.line(&fence);
        let code = expand_tabs(code);
        let lines = match self.options.color && self.highlight {
            true => highlight(&code, language),
            false => None,
        }
        .unwrap_or_else(|| code.lines().map(str::to_owned).collect());
        for line in lines {
            self.rows(&line);
        }
        let fence = self.paint(DIM, "```");
        self.line(&fence);
    }

    /// Columns the text of a line has after the prefixes (the last column is left free).
    fn text_columns(&self) -> usize {
        let prefix: usize = self
            .containers
            .iter()
            .map(|container| match container {
                Container::Quote => display_width(QUOTE_BAR),
                Container::Item { marker, .. } => display_width(marker),
            })
            .sum();
        self.options
            .width
            .saturating_sub(1 + prefix)
            .max(MIN_TEXT_COLUMNS)
    }

    /// One line, after the prefixes (an item's marker on its first line only).
    fn line(&mut self, row: &str) {
        let color = self.options.color;
        let mut line = String::new();
        for container in &mut self.containers {
            match container {
                Container::Quote => line.push_str(&paint(color, DIM, QUOTE_BAR)),
                Container::Item { marker, shown } => {
                    if *shown {
                        line.push_str(&" ".repeat(display_width(marker)));
                    } else {
                        line.push_str(marker);
                        *shown = true;
                    }
                }
            }
        }
        line.push_str(row);
        self.out.push_str(line.trim_end_matches(' '));
        self.out.push('\n');
    }

    /// A blank line, inside the quotes it is in.
    fn blank(&mut self) {
        let color = self.options.color;
        let bars = self
            .containers
            .iter()
            .filter(|container| matches!(container, Container::Quote))
            .count();
        if bars > 0 {
            let bar = QUOTE_BAR.trim_end();
            let mut line = paint(color, DIM, bar);
            for _ in 1..bars {
                line.push(' ');
                line.push_str(&paint(color, DIM, bar));
            }
            self.out.push_str(&line);
        }
        self.out.push('\n');
    }

    fn paint(&self, style: &str, text: &str) -> String {
        paint(self.options.color, style, text)
    }
}

/// `text` in `style` when colours are on.
fn paint(color: bool, style: &str, text: &str) -> String {
    if color && !text.is_empty() {
        format!("\x1b[{style}m{text}{RESET}")
    } else {
        text.to_owned()
    }
}

fn heading_depth(level: HeadingLevel) -> usize {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// Code with its tabs as spaces to the next stop, so its width is known.
fn expand_tabs(code: &str) -> String {
    if !code.contains('\t') {
        return code.to_owned();
    }
    let mut out = String::with_capacity(code.len());
    let mut column = 0;
    for c in code.chars() {
        match c {
            '\t' => {
                let spaces = TAB_STOP - column % TAB_STOP;
                out.extend(std::iter::repeat_n(' ', spaces));
                column += spaces;
            }
            '\n' => {
                out.push(c);
                column = 0;
            }
            c => {
                out.push(c);
                column += crate::render::width::char_width(c);
            }
        }
    }
    out
}
