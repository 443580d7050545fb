//! The line editor of `agentctl chat`: rustyline on a thread of its own, so the chat loop keeps
//! following events while a line is typed, and a printer thread that writes the chat's output
//! above the line being edited (rustyline's external printer, through `printer::Gate`). Keys
//! that mean something of their own (Alt+Enter, an approval key on an empty line) are told
//! apart here; a line read is erased from the screen once read (the chat echoes it). Tab
//! completes slash command names (`completion`).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::{
    Cmd, ConditionalEventHandler, Config, Editor, Event, EventContext, EventHandler, KeyCode,
    KeyEvent, Modifiers, RepeatCount,
};
use tokio::sync::mpsc;

use super::completion::{ChatHelper, CommandNames};
use super::printer::{Gate, erase_accepted};

/// Inputs typed and not yet taken by the chat loop. The editor reads again as soon as a line is
/// handed over (a key typed between two reads would meet the terminal in its cooked mode, echoed
/// and with Enter turned into a line feed), so it waits here only while the loop is busy.
const INPUT_BUFFER: usize = 16;

/// Undoes what the editor's raw mode leaves on the screen when the chat ends while a line is
/// being read: the prompt line is erased and bracketed paste turned off.
const RESET_SCREEN: &str = "\r\x1b[K\x1b[?2004l";

/// Output waiting for the printer thread: a fast stream waits here (the chat loop awaits room)
/// instead of growing without bound.
const PRINT_BUFFER: usize = 256;

/// Lines kept in the editor's history (Up/Down) and its file.
const HISTORY_LINES: usize = 1000;

/// The history file's name in agentd's state directory.
const HISTORY_FILE: &str = "chat_history";

/// A message for the printer thread, and who waits until it is written.
type Printed = (String, Option<tokio::sync::oneshot::Sender<()>>);

/// Whether the chat answers `line` with a picker (`/resume`, `/rewind`): the editor then waits
/// before reading again, until the chat calls [`LineEditor::go_on`], so the picker has the
/// terminal's keys to itself.
pub fn opens_picker(line: &str) -> bool {
    matches!(line.trim(), "/resume" | "/rewind")
}

/// What the person typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// A line, and whether it was sent with Alt+Enter (a follow-up).
    Line { text: String, follow_up: bool },
    /// Ctrl-C.
    Interrupt,
    /// Ctrl-D on an empty line.
    Eof,
    /// The terminal could not be read.
    Failed(String),
}

/// The editor thread, the printer thread and the channels to them.
pub struct LineEditor {
    inputs: mpsc::Receiver<Input>,
    printer: Option<mpsc::Sender<Printed>>,
    /// Lets the editor thread read again after a line that opens a picker (`opens_picker`).
    go_on: std::sync::mpsc::Sender<()>,
    /// Tells the editor thread to stop after the line it reads.
    stop: Arc<AtomicBool>,
    printer_thread: Option<JoinHandle<()>>,
}

impl LineEditor {
    /// Take the terminal and read lines with `prompt` until stopped, the lines typed in
    /// earlier chats (`history`) under Up and Down: fails when stdin or stdout is not a
    /// terminal.
    pub fn start(
        prompt: &'static str,
        history: Option<PathBuf>,
        names: CommandNames,
    ) -> io::Result<LineEditor> {
        let config = Config::builder()
            .max_history_size(HISTORY_LINES)
            .map_err(io::Error::other)?
            .auto_add_history(true)
            .completion_type(rustyline::CompletionType::List)
            .build();
        let mut editor: Editor<ChatHelper, FileHistory> =
            Editor::with_config(config).map_err(io::Error::other)?;
        editor.set_helper(Some(ChatHelper { names }));
        let follow_up = Arc::new(AtomicBool::new(false));
        let gate = Arc::new(Gate::default());
        let ended = LineEnds {
            gate: gate.clone(),
            line: Arc::new(Mutex::new(String::new())),
        };
        editor.bind_sequence(
            KeyEvent(KeyCode::Enter, Modifiers::ALT),
            EventHandler::Conditional(Box::new(FollowUpEnter {
                follow_up: follow_up.clone(),
                ended: ended.clone(),
            })),
        );
        // The keys that end a read by themselves: Enter (Ctrl-M), Ctrl-J, Ctrl-C, and Ctrl-D
        // on an empty line.
        for key in [
            KeyEvent(KeyCode::Enter, Modifiers::NONE),
            KeyEvent::ctrl('J'),
            KeyEvent::ctrl('C'),
            KeyEvent::ctrl('D'),
        ] {
            editor.bind_sequence(key, EventHandler::Conditional(Box::new(ended.clone())));
        }
        let mut printer = editor
            .create_external_printer()
            .map_err(|err| io::Error::other(format!("the terminal cannot be shared: {err}")))?;

        let (input_sender, inputs) = mpsc::channel(INPUT_BUFFER);
        let stop = Arc::new(AtomicBool::new(false));
        let stop_reading = stop.clone();
        let editor_gate = gate.clone();
        let (go_on, paused) = std::sync::mpsc::channel::<()>();
        // Not joined: it is inside `readline` whenever the chat ends, which nothing can
        // interrupt; it stops after that line, or with the process (`stop`).
        std::thread::Builder::new()
            .name("agentctl-editor".to_owned())
            .spawn(move || {
                // The history file is read and written here, off the async runtime.
                let history = history.filter(|path| open_history(&mut editor, path));
                while !stop_reading.load(Ordering::Relaxed) {
                    editor_gate.reading();
                    let input = read_one(&mut editor, prompt, &follow_up);
                    // Whatever ended the read, the screen is tidied before messages go on.
                    editor_gate.ending();
                    let typed = match &input {
                        Input::Line { text, .. } => Some(text.clone()),
                        Input::Eof => Some(String::new()),
                        Input::Interrupt => Some(ended.take_line()),
                        Input::Failed(_) => None,
                    };
                    editor_gate.between(|| {
                        if let Some(typed) = typed {
                            erase_accepted(prompt, &typed);
                        }
                    });
                    if let (Some(path), Input::Line { text, .. }) = (&history, &input)
                        && !text.trim().is_empty()
                    {
                        // A history that cannot be written only costs the next chat its lines.
                        let _ = editor.append_history(path);
                    }
                    let failed = matches!(input, Input::Failed(_));
                    let picks = matches!(&input, Input::Line { text, .. } if opens_picker(text));
                    if input_sender.blocking_send(input).is_err() || failed {
                        return;
                    }
                    // The chat is gone when it can no longer say to go on.
                    if picks && paused.recv().is_err() {
                        return;
                    }
                }
            })?;
        let (print_sender, mut to_print) = mpsc::channel::<Printed>(PRINT_BUFFER);
        let printer_thread = std::thread::Builder::new()
            .name("agentctl-printer".to_owned())
            .spawn(move || {
                while let Some((text, written)) = to_print.blocking_recv() {
                    if let Some(written) = written {
                        let _ = written.send(());
                        continue;
                    }
                    // A terminal that went away leaves nothing to print to.
                    if gate.print(&mut printer, text).is_err() {
                        return;
                    }
                }
            })?;
        Ok(LineEditor {
            inputs,
            printer: Some(print_sender),
            go_on,
            stop,
            printer_thread: Some(printer_thread),
        })
    }

    /// The next input; `Failed` when the editor thread is gone.
    pub async fn next(&mut self) -> Input {
        let input = self.inputs.recv().await;
        input.unwrap_or_else(|| Input::Failed("the line editor stopped".to_owned()))
    }

    /// Print text above the line being edited: it should end with a newline (rustyline adds
    /// one otherwise, except between two reads).
    pub async fn print(&self, text: String) {
        if let Some(printer) = &self.printer {
            // The printer thread only stops with the terminal; nothing is left to print to.
            let _ = printer.send((text, None)).await;
        }
    }

    /// Wait until everything given to [`LineEditor::print`] so far is written.
    pub async fn flushed(&self) {
        if let Some(printer) = &self.printer {
            let (written, done) = tokio::sync::oneshot::channel();
            if printer.send((String::new(), Some(written))).await.is_ok() {
                // A printer thread gone has nothing left to write.
                let _ = done.await;
            }
        }
    }

    /// Let the editor read again after a line that opened a picker.
    pub fn go_on(&self) {
        // An editor thread gone reads nothing more anyway.
        let _ = self.go_on.send(());
    }

    /// Stop: the printer after writing what it has, then the prompt line is erased and
    /// `last_words` written in its place (straight to the terminal: the editor may never
    /// read the printer's next message); the editor thread stops after the line it is
    /// reading, or with the process.
    pub fn stop(mut self, last_words: &str) {
        self.stop.store(true, Ordering::Relaxed);
        self.printer = None;
        if let Some(thread) = self.printer_thread.take() {
            let _ = thread.join();
        }
        let mut stdout = io::stdout().lock();
        // A terminal that went away needs no tidying.
        let _ = stdout.write_all(RESET_SCREEN.as_bytes());
        if !last_words.is_empty() {
            let _ = stdout.write_all(format!("{last_words}\n").as_bytes());
        }
        let _ = stdout.flush();
    }
}

/// Where chats keep the lines typed: `$XDG_STATE_HOME/agentd/chat_history`.
pub fn history_path() -> Option<PathBuf> {
    let base = directories::BaseDirs::new()?;
    Some(base.state_dir()?.join("agentd").join(HISTORY_FILE))
}

/// Load `path` into the editor, creating it private (prompts may hold anything) when missing;
/// false when it cannot be used.
fn open_history(editor: &mut Editor<ChatHelper, FileHistory>, path: &Path) -> bool {
    if let Some(dir) = path.parent()
        && crate::platform::create_private_dir(dir).is_err()
    {
        return false;
    }
    if crate::platform::open_private_append(path).is_err() {
        return false;
    }
    // An unreadable or foreign file starts an empty history; appending still works.
    let _ = editor.load_history(path);
    true
}

/// Read one line with `prompt` and say what it was.
fn read_one(
    editor: &mut Editor<ChatHelper, FileHistory>,
    prompt: &str,
    follow_up: &AtomicBool,
) -> Input {
    follow_up.store(false, Ordering::Relaxed);
    match editor.readline(prompt) {
        Ok(text) => Input::Line {
            text,
            follow_up: follow_up.swap(false, Ordering::Relaxed),
        },
        Err(ReadlineError::Interrupted) => Input::Interrupt,
        Err(ReadlineError::Eof) => Input::Eof,
        Err(err) => Input::Failed(err.to_string()),
    }
}

/// A key that ends the read: messages wait until the line read is erased (see
/// `printer::Gate`); the line is kept for Ctrl-C, whose read returns nothing.
#[derive(Clone)]
struct LineEnds {
    gate: Arc<Gate>,
    line: Arc<Mutex<String>>,
}

impl LineEnds {
    fn end(&self, ctx: &EventContext) {
        ctx.line()
            .clone_into(&mut self.line.lock().unwrap_or_else(PoisonError::into_inner));
        self.gate.ending();
    }

    /// The line on the screen when the read ended.
    fn take_line(&self) -> String {
        std::mem::take(&mut self.line.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl ConditionalEventHandler for LineEnds {
    fn handle(&self, event: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        // Ctrl-D ends the read only on an empty line (else it deletes a character).
        let deletes =
            matches!(event.get(0), Some(KeyEvent(KeyCode::Char('D'), _))) && !ctx.line().is_empty();
        if !deletes {
            self.end(ctx);
        }
        // What the key does is rustyline's own.
        None
    }
}

/// Alt+Enter: accept the line as a follow-up.
struct FollowUpEnter {
    follow_up: Arc<AtomicBool>,
    ended: LineEnds,
}

impl ConditionalEventHandler for FollowUpEnter {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        self.follow_up.store(true, Ordering::Relaxed);
        self.ended.end(ctx);
        Some(Cmd::AcceptLine)
    }
}
