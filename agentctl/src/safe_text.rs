//! Text from the model, tools and sessions on its way to a terminal: control sequences (OSC 52
//! clipboard writes, title changes, screen clears, cursor moves) are neutralised into visible
//! escapes, so nothing but agentctl itself drives the terminal. The one function every place
//! that prints untrusted text goes through; `--json` output is JSON-escaped instead and keeps
//! the exact text.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write as _;

/// `text` with every control character but `\n` and `\t` made visible: ESC as `^[`, the other
/// C0 controls and DEL in caret notation (`^G`, `^?`), C1 controls as `\x9b`. A `\r` right
/// before `\n` is dropped (Windows line ends), a lone one shown as `^M`: it would let text
/// overwrite its own line.
pub fn neutralise(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if !needs_escape(c) {
            out.push(c);
        } else if c == '\r' && chars.peek() == Some(&'\n') {
            // The `\n` follows on the next turn.
        } else if c == '\u{7f}' {
            out.push_str("^?");
        } else if (c as u32) < 0x20 {
            out.push('^');
            out.push(char::from(b'@' + c as u8));
        } else {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// `neutralise` for a stream of bytes read in chunks (a log file): ASCII controls but `\n` and
/// `\t`, DEL, and C1 controls in UTF-8 (`C2 80`…`C2 9F`) become visible; other bytes pass
/// as they are. `held` carries a trailing `C2` to the next chunk, so a control split between
/// two reads is still caught; pass an empty chunk at the end to flush it.
pub fn neutralise_bytes(chunk: &[u8], held: &mut Option<u8>) -> Vec<u8> {
    let mut bytes: Vec<u8> = held
        .take()
        .into_iter()
        .chain(chunk.iter().copied())
        .collect();
    if !chunk.is_empty() && bytes.last() == Some(&0xc2) {
        *held = bytes.pop();
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        match byte {
            b'\n' | b'\t' => out.push(byte),
            0x00..=0x1f => out.extend_from_slice(&[b'^', b'@' + byte]),
            0x7f => out.extend_from_slice(b"^?"),
            0xc2 if bytes
                .get(index + 1)
                .is_some_and(|next| (0x80..=0x9f).contains(next)) =>
            {
                index += 1;
                out.extend_from_slice(format!("\\x{:02x}", bytes[index]).as_bytes());
            }
            _ => out.push(byte),
        }
        index += 1;
    }
    out
}

/// Whether `c` must not reach the terminal as is.
fn needs_escape(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        _ => false,
    }
}

/// Write `text`, neutralised, on stdout (errors, such as a closed pipe, are ignored).
pub fn print_stdout(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(neutralise(text).as_bytes());
    let _ = stdout.flush();
}

/// Write `text`, neutralised, on stderr.
pub fn print_stderr(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(neutralise(text).as_bytes());
}

/// `println!` for text that may carry untrusted parts: neutralised on its way out.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::safe_text::print_stdout(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` through `neutralise`.
#[macro_export]
macro_rules! say_raw {
    ($($arg:tt)*) => {
        $crate::safe_text::print_stdout(&format!($($arg)*))
    };
}

/// `eprintln!` through `neutralise`.
#[macro_export]
macro_rules! warn_line {
    ($($arg:tt)*) => {
        $crate::safe_text::print_stderr(&format!("{}\n", format_args!($($arg)*)))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_sequences_become_visible() {
        let cases = [
            ("plain text\nwith\ttabs", "plain text\nwith\ttabs"),
            // OSC 52: a clipboard write.
            ("\x1b]52;c;aGVsbG8=\x07", "^[]52;c;aGVsbG8=^G"),
            // A title change, a screen clear, a cursor move.
            ("\x1b]0;pwned\x1b\\", "^[]0;pwned^[\\"),
            ("\x1b[2J\x1b[H", "^[[2J^[[H"),
            ("a\rb", "a^Mb"),
            ("line\r\nnext", "line\nnext"),
            ("\u{9b}31m", "\\x9b31m"),
            ("del\u{7f}", "del^?"),
            ("nul\0", "nul^@"),
            ("ünïcödé ✓ …", "ünïcödé ✓ …"),
        ];
        for (input, expected) in cases {
            assert_eq!(neutralise(input), expected, "{input:?}");
        }
    }

    #[test]
    fn byte_chunks_are_neutralised_across_their_boundaries() {
        let mut held = None;
        let mut out = neutralise_bytes(b"log \x1b[31mred\xc2", &mut held);
        out.extend(neutralise_bytes(b"\x9b line\r\n\xc3\xa9", &mut held));
        out.extend(neutralise_bytes(b"", &mut held));
        assert_eq!(
            String::from_utf8_lossy(&out),
            "log ^[[31mred\\x9b line^M\n\u{e9}"
        );
    }

    /// Every print of agentctl goes through `say!`/`warn_line!` (or is JSON): a new
    /// `println!` of a session's title would reach the terminal raw.
    #[test]
    fn commands_print_only_through_the_neutraliser() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = vec![root.clone()];
        let mut found = Vec::new();
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            // Allowed: this module's macros, `main`'s runtime failure, `print_json`.
            if name == "safe_text.rs" || name == "main.rs" || name == "tests.rs" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (number, line) in text.lines().enumerate() {
                let raw = ["println!(", "eprintln!(", " print!(", "eprint!("]
                    .iter()
                    .any(|call| line.contains(call));
                if raw
                    && !line.contains("println!(\"{text}\")")
                    && !line.contains("cannot encode output")
                {
                    found.push(format!(
                        "{}:{}: {}",
                        path.display(),
                        number + 1,
                        line.trim()
                    ));
                }
            }
        }
        assert!(
            found.is_empty(),
            "print through crate::say!/warn_line!: {found:#?}"
        );
    }

    #[test]
    fn clean_text_is_not_copied() {
        assert!(matches!(neutralise("nothing to do"), Cow::Borrowed(_)));
    }
}
