//! A program on a pseudo-terminal, for tests of interactive `agentctl` (chat): it gets a
//! terminal of its own (stdin, stdout and stderr, a new session with the terminal as its
//! controlling one), the test types bytes and waits for text on the screen. Like a terminal
//! emulator, it answers the cursor-position query line editors send; for what is visible once
//! text was redrawn in place, the bytes go through a terminal emulator (`vt100`).

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::harness::WAIT;

/// The cursor-position query (DSR 6) and the answer a terminal gives (row 1, column 1).
const CURSOR_QUERY: &[u8] = b"\x1b[6n";
const CURSOR_ANSWER: &[u8] = b"\x1b[1;1R";

/// A child on a pseudo-terminal and everything it wrote.
pub struct Pty {
    child: tokio::process::Child,
    /// The terminal's master side, for typing.
    master: Arc<Mutex<File>>,
    /// Everything written to the terminal so far (lossy UTF-8), and a tick per read.
    screen: Arc<Mutex<String>>,
    changed: watch::Receiver<usize>,
    /// How far `expect` has read: each wait looks only at what came after the last match.
    cursor: usize,
    /// The terminal's size: columns, rows.
    size: (u16, u16),
}

impl Pty {
    /// Start `command` on a new `cols`×`rows` terminal.
    pub fn spawn(mut command: tokio::process::Command, cols: u16, rows: u16) -> Pty {
        let mut master_fd: libc::c_int = -1;
        let mut slave_fd: libc::c_int = -1;
        let size = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: valid out-pointers for both fds; no name buffer; default termios; a valid
        // winsize.
        let opened = unsafe {
            libc::openpty(
                &mut master_fd,
                &mut slave_fd,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(opened, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: openpty returned two fresh fds that nothing else owns.
        let (master, slave) = unsafe {
            (
                OwnedFd::from_raw_fd(master_fd),
                OwnedFd::from_raw_fd(slave_fd),
            )
        };
        let stdio = |fd: &OwnedFd| Stdio::from(fd.try_clone().expect("dup the terminal"));
        command
            .stdin(stdio(&slave))
            .stdout(stdio(&slave))
            .stderr(stdio(&slave))
            .env("TERM", "xterm-256color")
            .kill_on_drop(true);
        // SAFETY: only async-signal-safe calls between fork and exec: a new session whose
        // controlling terminal is the pty (stdin by now).
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("spawn on the pty");
        // Only the child holds the terminal's side now: its exit ends our reads.
        drop(slave);
        let master = File::from(master);
        let reader = master.try_clone().expect("dup the master");
        let master = Arc::new(Mutex::new(master));
        let screen = Arc::new(Mutex::new(String::new()));
        let (tick, changed) = watch::channel(0usize);
        let answerer = master.clone();
        let written = screen.clone();
        // Ends when the child's side closes (EIO); nothing to join: the reads own nothing else.
        std::thread::spawn(move || read_screen(reader, &answerer, &written, &tick));
        Pty {
            child,
            master,
            screen,
            changed,
            cursor: 0,
            size: (cols, rows),
        }
    }

    /// What the terminal shows now: everything written so far, through a terminal emulator of
    /// the pty's size (no scrollback: keep a test's text within its rows).
    pub fn visible(&self) -> vt100::Parser {
        let size = |count: u16| std::num::NonZeroU16::new(count).expect("a terminal has a size");
        let (cols, rows) = self.size;
        let mut parser = vt100::Parser::new(size(rows), size(cols), 0);
        parser.process(self.screen().as_bytes());
        parser
    }

    /// Wait until what the terminal shows passes `check` (`what` names it for the failure);
    /// that screen.
    pub async fn wait_visible(
        &mut self,
        what: &str,
        check: impl Fn(&vt100::Screen) -> bool,
    ) -> vt100::Parser {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let parser = self.visible();
            if check(parser.screen()) {
                return parser;
            }
            let more = tokio::time::timeout_at(deadline, self.changed.changed()).await;
            if !matches!(more, Ok(Ok(()))) {
                panic!(
                    "the terminal never showed {what}; it shows:\n{}",
                    parser.screen().contents()
                );
            }
        }
    }

    /// Type `bytes` (a `\r` is Enter, `\x03` Ctrl-C, `\x04` Ctrl-D, `\x1b\r` Alt+Enter).
    pub fn send(&self, bytes: &str) {
        let mut master = self.master.lock().expect("master lock");
        master.write_all(bytes.as_bytes()).expect("type on the pty");
        master.flush().expect("flush the pty");
    }

    /// Wait until `text` appears after the last match; the screen up to the end of it.
    pub async fn expect(&mut self, text: &str) -> String {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            {
                let screen = self.screen.lock().expect("screen lock");
                if let Some(at) = screen[self.cursor..].find(text) {
                    let end = self.cursor + at + text.len();
                    let seen = screen[self.cursor..end].to_owned();
                    self.cursor = end;
                    return seen;
                }
            }
            let more = tokio::time::timeout_at(deadline, self.changed.changed()).await;
            if !matches!(more, Ok(Ok(()))) {
                let screen = self.screen.lock().expect("screen lock");
                panic!(
                    "{text:?} did not appear; the screen after the last match:\n{:?}",
                    &screen[self.cursor..]
                );
            }
        }
    }

    /// Everything the program wrote so far.
    pub fn screen(&self) -> String {
        self.screen.lock().expect("screen lock").clone()
    }

    /// Wait for the program to exit (bounded by `WAIT`).
    pub async fn wait(&mut self) -> ExitStatus {
        tokio::time::timeout(WAIT, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("the program did not exit; screen:\n{}", self.screen()))
            .expect("wait for the program")
    }

    /// The program's pid.
    pub fn pid(&self) -> u32 {
        self.child.id().unwrap_or(0)
    }

    /// The master's fd (for window-size changes).
    pub fn master_fd(&self) -> i32 {
        self.master.lock().expect("master lock").as_raw_fd()
    }
}

fn read_screen(
    mut reader: File,
    answerer: &Mutex<File>,
    screen: &Mutex<String>,
    tick: &watch::Sender<usize>,
) {
    let mut buf = [0u8; 4096];
    // Bytes kept back in case a query is split across reads.
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let read = match reader.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        let mut bytes = std::mem::take(&mut tail);
        bytes.extend_from_slice(&buf[..read]);
        let queries = bytes
            .windows(CURSOR_QUERY.len())
            .filter(|window| *window == CURSOR_QUERY)
            .count();
        for _ in 0..queries {
            if let Ok(mut master) = answerer.lock() {
                let _ = master.write_all(CURSOR_ANSWER);
            }
        }
        // Keep an incomplete escape or character at the end for the next read.
        let escape = match bytes.iter().rposition(|&byte| byte == 0x1b) {
            Some(at) if bytes.len() - at < CURSOR_QUERY.len() => bytes.len() - at,
            _ => 0,
        };
        let character = match std::str::from_utf8(&bytes) {
            Err(err) if err.error_len().is_none() => bytes.len() - err.valid_up_to(),
            _ => 0,
        };
        let keep = escape.max(character);
        tail = bytes.split_off(bytes.len() - keep);
        if let Ok(mut screen) = screen.lock() {
            screen.push_str(&String::from_utf8_lossy(&bytes));
        }
        tick.send_modify(|count| *count += 1);
    }
}
