//! Windows: the console API for keys, modes and widths; ctrl-c; detached processes.

use std::io;
use std::os::windows::io::IntoRawHandle;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use windows_sys::Win32::Foundation::{HANDLE, INVALID_HANDLE_VALUE, WAIT_OBJECT_0, WAIT_TIMEOUT};
use windows_sys::Win32::Storage::FileSystem::{FILE_TYPE_DISK, FILE_TYPE_PIPE, GetFileType};
use windows_sys::Win32::System::Console::{
    CONSOLE_MODE, CONSOLE_SCREEN_BUFFER_INFO, ENABLE_ECHO_INPUT, ENABLE_LINE_INPUT,
    FlushConsoleInputBuffer, GetConsoleMode, GetConsoleScreenBufferInfo, GetStdHandle,
    INPUT_RECORD, KEY_EVENT, ReadConsoleInputW, STD_ERROR_HANDLE, STD_HANDLE, STD_INPUT_HANDLE,
    STD_OUTPUT_HANDLE, SetConsoleMode, SetStdHandle,
};
use windows_sys::Win32::System::Threading::{
    CREATE_NEW_PROCESS_GROUP, DETACHED_PROCESS, WaitForSingleObject,
};

use super::{KEY_POLL_MS, Stream};

/// No uid on Windows: the pipe is named by the user name instead, so this is never used in a
/// path there.
pub fn current_uid() -> u32 {
    0
}

/// One of this process's standard handles, `None` when it has none.
fn std_handle(which: STD_HANDLE) -> Option<HANDLE> {
    // SAFETY: GetStdHandle has no preconditions.
    let handle = unsafe { GetStdHandle(which) };
    (!handle.is_null() && handle != INVALID_HANDLE_VALUE).then_some(handle)
}

/// The console mode of `handle`, `None` when it is not a console.
fn console_mode(handle: HANDLE) -> Option<CONSOLE_MODE> {
    let mut mode: CONSOLE_MODE = 0;
    // SAFETY: `mode` is valid and writable; a non-console handle makes the call fail.
    (unsafe { GetConsoleMode(handle, &mut mode) } != 0).then_some(mode)
}

/// The console's input mode before prompting; restored on drop. Only line input and echo are
/// cleared: processed input stays, so Ctrl-C still reaches the event loop as a ctrl-c event.
pub struct RawKeys {
    input: HANDLE,
    saved: CONSOLE_MODE,
}

impl RawKeys {
    /// Put the console in single-key, no-echo mode and discard keys typed before the prompt
    /// appeared (a stray `y` must not approve anything).
    pub fn enable() -> io::Result<RawKeys> {
        let not_console = || io::Error::other("stdin is not a console");
        let input = std_handle(STD_INPUT_HANDLE).ok_or_else(not_console)?;
        let saved = console_mode(input).ok_or_else(not_console)?;
        // SAFETY: `input` is this process's console input handle.
        if unsafe { SetConsoleMode(input, saved & !(ENABLE_LINE_INPUT | ENABLE_ECHO_INPUT)) } == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: as above.
        unsafe { FlushConsoleInputBuffer(input) };
        Ok(RawKeys { input, saved })
    }
}

impl Drop for RawKeys {
    fn drop(&mut self) {
        // SAFETY: the handle and mode came from the console in `enable`.
        unsafe { SetConsoleMode(self.input, self.saved) };
    }
}

/// Characters typed at the console (UTF-8, Enter as `\n`), handed to `deliver` until it
/// returns false, input fails, or `stop` is set (noticed within `KEY_POLL_MS`). Blocking: runs
/// on its own thread. Non-key events (focus, mouse, resize) are read and dropped.
pub fn read_keys(stop: &AtomicBool, deliver: &mut dyn FnMut(&[u8]) -> bool) {
    let Some(input) = std_handle(STD_INPUT_HANDLE) else {
        return;
    };
    let mut records = [INPUT_RECORD::default(); 16];
    let mut units: Vec<u16> = Vec::with_capacity(records.len());
    let mut bytes = Vec::with_capacity(4 * records.len());
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: `input` is a valid handle for the life of the process.
        match unsafe { WaitForSingleObject(input, KEY_POLL_MS) } {
            WAIT_OBJECT_0 => {}
            WAIT_TIMEOUT => continue,
            _ => return,
        }
        if stop.load(Ordering::Relaxed) {
            continue;
        }
        let mut read = 0u32;
        // SAFETY: `records` is valid for its length; `read` is writable.
        let ok = unsafe {
            ReadConsoleInputW(input, records.as_mut_ptr(), records.len() as u32, &mut read)
        } != 0;
        if !ok {
            return;
        }
        units.clear();
        bytes.clear();
        for record in records.iter().take(read as usize) {
            if u32::from(record.EventType) != KEY_EVENT {
                continue;
            }
            // SAFETY: EventType says the union holds a key event.
            let key = unsafe { record.Event.KeyEvent };
            // SAFETY: UnicodeChar is the member ReadConsoleInputW (the W form) fills.
            let unit = unsafe { key.uChar.UnicodeChar };
            if key.bKeyDown == 0 {
                continue;
            }
            let repeat = usize::from(key.wRepeatCount.max(1));
            if unit == 0 {
                // Arrows, pages: as a terminal sends them, after the text typed before.
                if let Some(sequence) = super::console_key_sequence(key.wVirtualKeyCode) {
                    decode_units(&mut units, &mut bytes);
                    for _ in 0..repeat {
                        bytes.extend_from_slice(sequence);
                    }
                }
                continue;
            }
            let unit = if unit == u16::from(b'\r') {
                u16::from(b'\n')
            } else {
                unit
            };
            units.extend(std::iter::repeat_n(unit, repeat));
        }
        decode_units(&mut units, &mut bytes);
        if !bytes.is_empty() && !deliver(&bytes) {
            return;
        }
    }
}

/// The UTF-16 `units` typed, as UTF-8 after `bytes`; `units` is emptied.
fn decode_units(units: &mut Vec<u16>, bytes: &mut Vec<u8>) {
    for decoded in char::decode_utf16(units.drain(..)).flatten() {
        let mut utf8 = [0u8; 4];
        bytes.extend_from_slice(decoded.encode_utf8(&mut utf8).as_bytes());
    }
}

/// The columns of the console window `stream` writes to, if it is one.
pub fn columns(stream: Stream) -> Option<usize> {
    let handle = std_handle(match stream {
        Stream::Stdout => STD_OUTPUT_HANDLE,
        Stream::Stderr => STD_ERROR_HANDLE,
    })?;
    let mut info = CONSOLE_SCREEN_BUFFER_INFO::default();
    // SAFETY: `info` is valid and writable; a non-console handle makes the call fail.
    if unsafe { GetConsoleScreenBufferInfo(handle, &mut info) } == 0 {
        return None;
    }
    let width = i32::from(info.srWindow.Right) - i32::from(info.srWindow.Left) + 1;
    usize::try_from(width).ok().filter(|width| *width > 0)
}

/// The console's input mode when a chat started, put back on drop even if the line editor
/// was still reading a line.
pub struct SavedTerminal {
    saved: Option<(HANDLE, CONSOLE_MODE)>,
}

impl SavedTerminal {
    pub fn save() -> SavedTerminal {
        let saved = std_handle(STD_INPUT_HANDLE)
            .and_then(|input| console_mode(input).map(|mode| (input, mode)));
        SavedTerminal { saved }
    }
}

impl Drop for SavedTerminal {
    fn drop(&mut self) {
        if let Some((input, mode)) = self.saved {
            // SAFETY: the handle and mode came from the console in `save`.
            unsafe { SetConsoleMode(input, mode) };
        }
    }
}

/// Whether stdin is a pipe or a file (not a console, not `NUL`).
pub fn stdin_is_piped() -> bool {
    std_handle(STD_INPUT_HANDLE).is_some_and(|input| {
        // SAFETY: `input` is a valid handle.
        let kind = unsafe { GetFileType(input) };
        kind == FILE_TYPE_PIPE || kind == FILE_TYPE_DISK
    })
}

/// Make the console stdin again (after stdin was a pipe). False when there is none.
pub fn reattach_terminal_to_stdin() -> bool {
    let Ok(console) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("CONIN$")
    else {
        return false;
    };
    // Kept open for the rest of the process: it is stdin from now on.
    let handle = console.into_raw_handle();
    // SAFETY: `handle` is an open console input handle owned by nobody else.
    unsafe { SetStdHandle(STD_INPUT_HANDLE, handle) != 0 }
}

/// Start `command` with no console and in its own process group, so Ctrl-C here never
/// reaches it and closing this window does not end it.
pub fn detach(command: &mut Command) {
    use std::os::windows::process::CommandExt;
    command.creation_flags(DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP);
}

/// Where a detached daemon starts: the system drive's root, else the temp directory.
pub fn detached_dir() -> PathBuf {
    std::env::var_os("SystemDrive")
        .map(|drive| {
            let mut root = PathBuf::from(drive);
            root.push("\\");
            root
        })
        .filter(|root| root.is_dir())
        .unwrap_or_else(std::env::temp_dir)
}

/// Create `dir` (and its parents). Under the user's profile, where agentctl keeps its files,
/// the inherited ACL already limits it to this user.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// Open `path` for appending, created when missing (private by the inherited ACL, as above).
pub fn open_private_append(path: &Path) -> io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
}

/// Ctrl-C at the console, as a stream of wake-ups.
pub struct Interrupts(tokio::signal::windows::CtrlC);

impl Interrupts {
    pub fn listen() -> io::Result<Interrupts> {
        tokio::signal::windows::ctrl_c().map(Interrupts)
    }

    /// The next Ctrl-C; `None` once no more can arrive.
    pub async fn recv(&mut self) -> Option<()> {
        self.0.recv().await
    }
}
