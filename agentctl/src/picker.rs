//! A list to choose one item from on the terminal, used by `chat --resume`, the chat's
//! `/resume` (sessions) and `/rewind` (runs): Up/Down (or Ctrl-P/Ctrl-N, and j/k while no
//! filter is typed), PgUp/PgDn, Home/End move; typed text filters the rows (every word must be
//! in the row's text, case aside; `/` starts a filter that begins with j or k); Tab switches
//! between the picker's row sets (this directory's sessions, every session); Enter chooses,
//! Esc or Ctrl-C cancels. `Picker` is the pure state and its frame; `choose` draws it in place
//! on stdout and reads raw keys (`platform::RawKeys`, `platform::read_keys`) until it ends, and
//! erases it.

mod keys;

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::mpsc;

pub use keys::{Key, KeyDecoder};

use crate::platform::Interrupts;
use crate::render::width::truncate_to_width;

/// Rows shown at once; PgUp/PgDn move by this many.
pub const PAGE_ROWS: usize = 10;

/// How long a lone ESC waits for the rest of an escape sequence (an arrow's bytes come
/// together) before it is the Escape key.
const ESCAPE_WAIT: std::time::Duration = std::time::Duration::from_millis(50);

/// Reads of the terminal waiting for the picker.
const READS_BUFFERED: usize = 16;

/// One choice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// What the caller gets back when this row is chosen (a session id, a run's number).
    pub key: String,
    /// The row as shown (one line, neutralised; cut to the terminal's width when drawn).
    pub text: String,
    /// What a filter looks in besides `text` (an id, a whole first prompt).
    pub search: String,
}

/// The rows of one view, under a label (`this directory`, `all directories`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowSet {
    pub label: String,
    pub rows: Vec<Row>,
}

/// How a key left the picker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Still choosing: draw the frame again.
    Choosing,
    /// This row's key was chosen.
    Chosen(String),
    Cancelled,
}

/// The picker's state: its row sets, the filter typed, the selection and the scroll.
#[derive(Clone, Debug)]
pub struct Picker {
    title: String,
    sets: Vec<RowSet>,
    /// The row set shown.
    set: usize,
    filter: String,
    /// `/` was typed: j and k are text.
    typing: bool,
    /// Position of the selected row among those the filter keeps.
    selected: usize,
    /// Position of the first row shown among those the filter keeps.
    top: usize,
}

impl Picker {
    /// A picker of `sets` (at least one; Tab cycles through them) under `title`.
    pub fn new(title: &str, sets: Vec<RowSet>) -> Picker {
        Picker {
            title: title.to_owned(),
            sets,
            set: 0,
            filter: String::new(),
            typing: false,
            selected: 0,
            top: 0,
        }
    }

    /// The rows the filter keeps, in order.
    pub fn matching(&self) -> Vec<&Row> {
        let words: Vec<String> = self
            .filter
            .split_whitespace()
            .map(str::to_lowercase)
            .collect();
        let Some(set) = self.sets.get(self.set) else {
            return Vec::new();
        };
        set.rows
            .iter()
            .filter(|row| {
                let haystack = format!("{} {}", row.text, row.search).to_lowercase();
                words.iter().all(|word| haystack.contains(word.as_str()))
            })
            .collect()
    }

    /// Act on one key.
    pub fn key(&mut self, key: Key) -> Step {
        let count = self.matching().len();
        match key {
            Key::Up => self.move_by(-1, count),
            Key::Down => self.move_by(1, count),
            Key::PageUp => self.move_by(-(PAGE_ROWS as isize), count),
            Key::PageDown => self.move_by(PAGE_ROWS as isize, count),
            Key::Home => self.move_by(-(count as isize), count),
            Key::End => self.move_by(count as isize, count),
            Key::Char('j') if self.moves_with_letters() => self.move_by(1, count),
            Key::Char('k') if self.moves_with_letters() => self.move_by(-1, count),
            Key::Char('/') if self.filter.is_empty() && !self.typing => self.typing = true,
            Key::Enter => {
                return match self.matching().get(self.selected) {
                    Some(row) => Step::Chosen(row.key.clone()),
                    // Nothing matches: Enter does nothing (Esc leaves).
                    None => Step::Choosing,
                };
            }
            Key::Escape => return Step::Cancelled,
            Key::Tab => {
                self.set = (self.set + 1) % self.sets.len().max(1);
                self.reset_selection();
            }
            Key::Backspace => {
                if self.filter.pop().is_none() {
                    self.typing = false;
                }
                self.reset_selection();
            }
            Key::ClearFilter => {
                self.filter.clear();
                self.typing = false;
                self.reset_selection();
            }
            Key::Char(c) if !c.is_control() => {
                self.filter.push(c);
                self.reset_selection();
            }
            Key::Char(_) => {}
        }
        Step::Choosing
    }

    /// The lines to draw, none wider than `width` columns: the title with the row set (and
    /// the others Tab shows), the filter or the keys, the rows shown (the selected one marked
    /// `›`), and where the rows shown are in the list.
    pub fn frame(&self, width: usize) -> Vec<String> {
        let fit = |line: String| truncate_to_width(&line, width.saturating_sub(1).max(1));
        let mut lines = Vec::new();
        let mut title = self.title.clone();
        if let Some(set) = self.sets.get(self.set) {
            title.push_str(&format!(" · {}", set.label));
        }
        if self.sets.len() > 1 {
            let next = &self.sets[(self.set + 1) % self.sets.len()];
            title.push_str(&format!(" (Tab: {})", next.label));
        }
        lines.push(fit(title));
        lines.push(fit(if self.filter.is_empty() && !self.typing {
            "type to filter · ↑↓ or j/k move · Enter opens · Esc cancels".to_owned()
        } else {
            format!(
                "filter: {}▏ · ↑↓ move · Enter opens · Esc cancels",
                self.filter
            )
        }));
        let matching = self.matching();
        if matching.is_empty() {
            lines.push(fit("  (nothing matches)".to_owned()));
        }
        for (position, row) in matching.iter().enumerate().skip(self.top).take(PAGE_ROWS) {
            let marker = if position == self.selected {
                "› "
            } else {
                "  "
            };
            lines.push(fit(format!("{marker}{}", row.text)));
        }
        if matching.len() > PAGE_ROWS {
            let last = (self.top + PAGE_ROWS).min(matching.len());
            lines.push(fit(format!(
                "  {}–{last} of {}",
                self.top + 1,
                matching.len()
            )));
        }
        lines
    }

    fn moves_with_letters(&self) -> bool {
        self.filter.is_empty() && !self.typing
    }

    fn move_by(&mut self, delta: isize, count: usize) {
        if count == 0 {
            return;
        }
        let last = count - 1;
        self.selected = self.selected.saturating_add_signed(delta).min(last);
        if self.selected < self.top {
            self.top = self.selected;
        } else if self.selected >= self.top + PAGE_ROWS {
            self.top = self.selected + 1 - PAGE_ROWS;
        }
    }

    fn reset_selection(&mut self) {
        self.selected = 0;
        self.top = 0;
    }
}

/// Draw `picker` on stdout below the cursor and read keys until a row is chosen (its key) or
/// the picker is cancelled (`None`: Esc, Ctrl-C through `interrupts`, or stdin ended); the
/// picker is erased either way, the cursor back where it was. Nothing else may write to the
/// terminal meanwhile (the chat flushes its printer first). Fails when stdin is not a terminal.
pub async fn choose(
    picker: &mut Picker,
    interrupts: &mut Interrupts,
) -> io::Result<Option<String>> {
    let mut input = RawInput::start()?;
    let width = crate::terminal::stdout_width().unwrap_or(80);
    let mut decoder = KeyDecoder::default();
    let mut drawn = 0;
    let mut outcome = None;
    'reading: loop {
        let frame = picker.frame(width);
        write(&redraw(drawn, &frame));
        drawn = frame.len();
        let keys = tokio::select! {
            keys = next_keys(&mut input.reads, &mut decoder) => match keys {
                Some(keys) => keys,
                None => break 'reading,
            },
            _ = interrupts.recv() => break 'reading,
        };
        for key in keys {
            match picker.key(key) {
                Step::Choosing => {}
                Step::Chosen(chosen) => {
                    outcome = Some(chosen);
                    break 'reading;
                }
                Step::Cancelled => break 'reading,
            }
        }
    }
    drop(input);
    write(&erase(drawn));
    Ok(outcome)
}

/// Write `text` to the terminal at once.
fn write(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    // A terminal that went away has nothing to show.
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// The terminal in single-key mode and a blocking thread reading it, each read's bytes handed
/// over together (an arrow's escape sequence in one piece); both undone on drop.
struct RawInput {
    // Field order: stop reading before the terminal goes back to canonical mode.
    reads: mpsc::Receiver<Vec<u8>>,
    stop: Arc<AtomicBool>,
    _raw: crate::platform::RawKeys,
}

impl RawInput {
    fn start() -> io::Result<RawInput> {
        let raw = crate::platform::RawKeys::enable()?;
        let (sender, reads) = mpsc::channel(READS_BUFFERED);
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = stop.clone();
        // Not awaited: it cannot be interrupted inside poll, so it ends itself once `stop` is
        // set (within the platform's key poll) or the receiver is gone.
        drop(tokio::task::spawn_blocking(move || {
            crate::platform::read_keys(&thread_stop, &mut |bytes| {
                sender.blocking_send(bytes.to_vec()).is_ok()
            });
        }));
        Ok(RawInput {
            reads,
            stop,
            _raw: raw,
        })
    }
}

impl Drop for RawInput {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The keys of the next read from the terminal; `None` when stdin ended. A lone ESC is the
/// Escape key when nothing follows within `ESCAPE_WAIT`.
async fn next_keys(
    reads: &mut mpsc::Receiver<Vec<u8>>,
    decoder: &mut KeyDecoder,
) -> Option<Vec<Key>> {
    loop {
        let bytes = if decoder.holds() {
            match tokio::time::timeout(ESCAPE_WAIT, reads.recv()).await {
                Ok(bytes) => bytes?,
                Err(_) => return Some(decoder.flush()),
            }
        } else {
            reads.recv().await?
        };
        let keys = decoder.keys(&bytes);
        if !keys.is_empty() {
            return Some(keys);
        }
    }
}

/// Erase the `drawn` lines above the cursor and write `frame` in their place, the cursor left
/// below it.
fn redraw(drawn: usize, frame: &[String]) -> String {
    let mut text = erase(drawn);
    for line in frame {
        text.push_str(line);
        text.push_str("\r\n");
    }
    text
}

/// Erase the `drawn` lines above the cursor, the cursor left where the first was.
fn erase(drawn: usize) -> String {
    match drawn {
        0 => String::new(),
        rows => format!("\x1b[{rows}A\r\x1b[J"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: &str, text: &str) -> Row {
        Row {
            key: key.to_owned(),
            text: text.to_owned(),
            search: String::new(),
        }
    }

    fn picker(rows: Vec<Row>) -> Picker {
        Picker::new(
            "resume",
            vec![
                RowSet {
                    label: "here".to_owned(),
                    rows,
                },
                RowSet {
                    label: "everywhere".to_owned(),
                    rows: vec![row("z", "elsewhere")],
                },
            ],
        )
    }

    fn keys(picker: &mut Picker, keys: &[Key]) -> Step {
        let mut last = Step::Choosing;
        for key in keys {
            last = picker.key(*key);
        }
        last
    }

    #[test]
    fn arrows_and_j_k_move_and_enter_chooses() {
        let mut p = picker(vec![row("a", "alpha"), row("b", "beta"), row("c", "gamma")]);
        assert_eq!(
            keys(&mut p, &[Key::Down, Key::Down, Key::Down, Key::Enter]),
            Step::Chosen("c".into())
        );
        let mut p = picker(vec![row("a", "alpha"), row("b", "beta")]);
        assert_eq!(
            keys(
                &mut p,
                &[Key::Char('j'), Key::Char('k'), Key::Char('j'), Key::Enter]
            ),
            Step::Chosen("b".into())
        );
        assert_eq!(keys(&mut p, &[Key::Escape]), Step::Cancelled);
    }

    #[test]
    fn typing_filters_by_every_word_and_slash_makes_j_text() {
        let mut p = picker(vec![
            row("a", "fix the parser"),
            Row {
                search: "ses_123".into(),
                ..row("b", "write docs")
            },
            row("c", "just joking"),
        ]);
        keys(&mut p, &[Key::Char('D'), Key::Char('o')]);
        assert_eq!(p.matching().len(), 1);
        assert_eq!(keys(&mut p, &[Key::Enter]), Step::Chosen("b".into()));
        keys(&mut p, &[Key::ClearFilter]);
        // By the id a row searches in.
        keys(&mut p, &"ses_12".chars().map(Key::Char).collect::<Vec<_>>());
        assert_eq!(keys(&mut p, &[Key::Enter]), Step::Chosen("b".into()));
        keys(&mut p, &[Key::ClearFilter, Key::Char('/'), Key::Char('j')]);
        assert_eq!(keys(&mut p, &[Key::Enter]), Step::Chosen("c".into()));
        // Nothing matches: Enter stays.
        keys(&mut p, &[Key::Char('x'), Key::Char('x')]);
        assert_eq!(keys(&mut p, &[Key::Enter]), Step::Choosing);
        assert!(
            p.frame(80)
                .iter()
                .any(|line| line.contains("nothing matches"))
        );
    }

    #[test]
    fn tab_shows_the_other_set_and_pages_scroll() {
        let rows: Vec<Row> = (0..25)
            .map(|n| row(&n.to_string(), &format!("row {n}")))
            .collect();
        let mut p = picker(rows);
        keys(&mut p, &[Key::PageDown, Key::PageDown]);
        let frame = p.frame(80);
        assert!(frame.contains(&"› row 20".to_owned()), "{frame:?}");
        assert!(frame.contains(&"  12–21 of 25".to_owned()), "{frame:?}");
        assert_eq!(
            keys(&mut p, &[Key::End, Key::Enter]),
            Step::Chosen("24".into())
        );
        assert_eq!(
            keys(&mut p, &[Key::Tab, Key::Enter]),
            Step::Chosen("z".into())
        );
        assert!(p.frame(80)[0].contains("everywhere (Tab: here)"));
    }

    #[test]
    fn no_line_of_the_frame_is_wider_than_the_terminal() {
        let p = picker(vec![row("a", &"日本語".repeat(30))]);
        for line in p.frame(20) {
            assert!(crate::render::width::display_width(&line) < 20, "{line:?}");
        }
    }
}
