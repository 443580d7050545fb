//! The printer of `agentctl chat` and its gate with the line editor. The chat's messages
//! assume the live area sits directly above the cursor's row; a line the editor accepts stays
//! on the screen below it, so the editor thread erases it before the next message is written
//! (the chat echoes it as a line of its own). The gate orders the two: while the editor reads,
//! messages go through rustyline's printer (its own thread writes them, above the prompt);
//! from the key that ends a line until the accepted line is erased, messages wait; between
//! two reads they are written straight to the terminal, where the prompt will be.

use std::io::{self, Write};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rustyline::ExternalPrinter;
use unicode_width::UnicodeWidthChar;

/// How long the key that ends a line waits for a message on its way into rustyline's
/// printer: that message checks whether the editor is reading before the key may end the read
/// (one held up longer is waiting for room in rustyline's queue, past that check).
const PRINT_IN_FLIGHT_WAIT: Duration = Duration::from_millis(100);

/// How long a message waits for the editor to erase the line it read. The editor does that at
/// once; should a key that looked like it ended the read not have ended it, the editor is
/// still reading and the message goes through its printer after this.
const ENDING_WAIT: Duration = Duration::from_secs(1);

/// Columns between the terminal's tab stops, as rustyline counts a typed tab.
const TAB_STOP: usize = 8;

/// Where the editor thread is, for the printer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Phase {
    /// Not reading, the screen tidy: the printer writes to the terminal itself.
    #[default]
    Between,
    /// Inside `readline`: messages go through rustyline's printer.
    Reading,
    /// A key ended the line, or `readline` returned, and the line is still on the screen.
    Ending,
}

#[derive(Debug, Default)]
struct GateState {
    phase: Phase,
    /// A message is inside rustyline's printer.
    printing: bool,
}

/// Shared by the editor thread (its key handlers included) and the printer thread.
#[derive(Debug, Default)]
pub struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

impl Gate {
    /// The editor thread is about to read a line.
    pub fn reading(&self) {
        self.lock().phase = Phase::Reading;
        self.changed.notify_all();
    }

    /// A key is ending the line being read (or the read returned): hold messages back until
    /// [`Gate::between`], and let one already inside rustyline's printer get through first.
    pub fn ending(&self) {
        let mut state = self.lock();
        if state.phase == Phase::Ending {
            // The key's handler waited already.
            return;
        }
        state.phase = Phase::Ending;
        let (state, _) = self
            .changed
            .wait_timeout_while(state, PRINT_IN_FLIGHT_WAIT, |state| state.printing)
            .unwrap_or_else(PoisonError::into_inner);
        drop(state);
    }

    /// The read returned: `tidy` the screen (erase the accepted line), then messages are
    /// written straight to the terminal until the next read.
    pub fn between(&self, tidy: impl FnOnce()) {
        let mut state = self.lock();
        tidy();
        state.phase = Phase::Between;
        drop(state);
        self.changed.notify_all();
    }

    /// Write `text` above the line being read, or where the prompt will be.
    pub fn print(&self, printer: &mut dyn ExternalPrinter, text: String) -> io::Result<()> {
        let state = self.lock();
        let (mut state, _) = self
            .changed
            .wait_timeout_while(state, ENDING_WAIT, |state| state.phase == Phase::Ending)
            .unwrap_or_else(PoisonError::into_inner);
        if state.phase == Phase::Between {
            return write_to_terminal(&text);
        }
        state.printing = true;
        drop(state);
        let printed = printer.print(text).map_err(io::Error::other);
        self.lock().printing = false;
        self.changed.notify_all();
        printed
    }

    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Erase the prompt and the line it was given, which the editor left on the screen above the
/// cursor.
pub fn erase_accepted(prompt: &str, line: &str) {
    let Some(columns) = terminal_columns() else {
        return;
    };
    let rows = prompt_rows(&format!("{prompt}{line}"), columns);
    // A terminal that went away needs no tidying.
    let _ = write_to_terminal(&format!("\r\x1b[{rows}A\x1b[J"));
}

/// Rows the editor took for `text` (the prompt and the line) on a terminal `columns` wide,
/// counted as rustyline lays them out: a character that does not fit goes to the next row,
/// and a row filled to the last column ends there.
pub fn prompt_rows(text: &str, columns: usize) -> usize {
    let (mut row, mut column) = (0, 0);
    for c in text.chars() {
        if c == '\n' {
            row += 1;
            column = 0;
            continue;
        }
        let width = if c == '\t' {
            TAB_STOP - column % TAB_STOP
        } else {
            c.width().unwrap_or(0)
        };
        column += width;
        if column > columns {
            row += 1;
            column = width;
        }
    }
    if column == columns {
        row += 1;
    }
    row + 1
}

fn write_to_terminal(text: &str) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()
}

/// Columns of the terminal the editor writes to (stdout).
fn terminal_columns() -> Option<usize> {
    crate::platform::columns(crate::platform::Stream::Stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_a_typed_line_as_the_editor_lays_it_out() {
        assert_eq!(prompt_rows("› ", 80), 1);
        assert_eq!(prompt_rows("› hello", 80), 1);
        // Filling the last column ends the row: the cursor sits on the next one.
        assert_eq!(prompt_rows(&format!("› {}", "x".repeat(78)), 80), 2);
        assert_eq!(prompt_rows(&format!("› {}", "x".repeat(79)), 80), 2);
        assert_eq!(prompt_rows(&format!("› {}", "x".repeat(77)), 80), 1);
        // A wide character that does not fit moves to the next row whole.
        assert_eq!(prompt_rows(&format!("› {}日", "x".repeat(7)), 10), 2);
        assert_eq!(prompt_rows("› one\ntwo", 80), 2);
    }

    /// A printer that records what it was given.
    struct Recorder(Vec<String>);

    impl ExternalPrinter for Recorder {
        fn print(&mut self, msg: String) -> rustyline::Result<()> {
            self.0.push(msg);
            Ok(())
        }
    }

    #[test]
    fn messages_wait_while_a_line_ends() {
        let gate = std::sync::Arc::new(Gate::default());
        gate.reading();
        let mut recorder = Recorder(Vec::new());
        gate.print(&mut recorder, "while reading\n".to_owned())
            .expect("printed");
        assert_eq!(recorder.0, ["while reading\n"]);
        gate.ending();
        let printer_gate = gate.clone();
        let printer = std::thread::spawn(move || {
            let mut recorder = Recorder(Vec::new());
            printer_gate
                .print(&mut recorder, "after the read\n".to_owned())
                .expect("printed");
            recorder.0
        });
        // Reading again lets it through rustyline's printer, never straight to the terminal
        // while the accepted line is still there.
        gate.reading();
        let printed = printer.join().expect("the printer thread");
        assert_eq!(printed, ["after the read\n"]);
        let mut tidied = false;
        gate.between(|| tidied = true);
        assert!(tidied);
    }
}
