//! The keys a picker reads, decoded from the bytes a terminal sends in its raw mode: arrows
//! and page keys as their escape sequences (both the normal and the application forms), Enter,
//! Escape, Tab, Backspace, Ctrl-N/Ctrl-P/Ctrl-U, and the characters typed (UTF-8). Pure.

/// One key press.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    Enter,
    Escape,
    Tab,
    Backspace,
    /// Ctrl-U: the filter is cleared.
    ClearFilter,
    Char(char),
}

/// Bytes to keys. An escape sequence or a character cut by the end of the bytes given waits
/// for more; an ESC held alone is the Escape key once no more bytes come soon (`flush`): a
/// terminal sends a sequence's bytes together.
#[derive(Debug, Default)]
pub struct KeyDecoder {
    held: Vec<u8>,
}

impl KeyDecoder {
    /// The keys `bytes` (one read) complete.
    pub fn keys(&mut self, bytes: &[u8]) -> Vec<Key> {
        let mut input = std::mem::take(&mut self.held);
        input.extend_from_slice(bytes);
        let mut keys = Vec::new();
        let mut at = 0;
        while at < input.len() {
            match decode_one(&input[at..]) {
                Decoded::Key(key, used) => {
                    keys.extend(key);
                    at += used;
                }
                Decoded::Incomplete => {
                    self.held = input[at..].to_vec();
                    break;
                }
            }
        }
        keys
    }

    /// Whether bytes wait for more (a lone ESC, a sequence or a character begun).
    pub fn holds(&self) -> bool {
        !self.held.is_empty()
    }

    /// No more bytes came: a held ESC is the Escape key, anything else held is dropped.
    pub fn flush(&mut self) -> Vec<Key> {
        match std::mem::take(&mut self.held).as_slice() {
            [0x1b] => vec![Key::Escape],
            _ => Vec::new(),
        }
    }
}

enum Decoded {
    /// A key (or bytes that mean none) and the bytes it took.
    Key(Option<Key>, usize),
    /// More bytes are needed.
    Incomplete,
}

fn decode_one(bytes: &[u8]) -> Decoded {
    let key = |key: Key, used: usize| Decoded::Key(Some(key), used);
    match bytes[0] {
        b'\r' | b'\n' => key(Key::Enter, 1),
        b'\t' => key(Key::Tab, 1),
        0x7f | 0x08 => key(Key::Backspace, 1),
        0x0e => key(Key::Down, 1),
        0x10 => key(Key::Up, 1),
        0x15 => key(Key::ClearFilter, 1),
        // Ctrl-C where the terminal delivers it as a byte (no ISIG).
        0x03 => key(Key::Escape, 1),
        0x1b => escape(bytes),
        byte if byte < 0x20 => Decoded::Key(None, 1),
        _ => character(bytes),
    }
}

/// An escape sequence: CSI (`ESC [ … final`) or SS3 (`ESC O x`); ESC ESC is Escape.
fn escape(bytes: &[u8]) -> Decoded {
    let Some(&kind) = bytes.get(1) else {
        return Decoded::Incomplete;
    };
    match kind {
        b'[' => {
            // Parameters and intermediates, then one final byte in 0x40..=0x7e.
            let Some(end) = bytes[2..]
                .iter()
                .position(|byte| (0x40..=0x7e).contains(byte))
            else {
                return Decoded::Incomplete;
            };
            let body = &bytes[2..2 + end + 1];
            let key = match body {
                b"A" => Some(Key::Up),
                b"B" => Some(Key::Down),
                b"H" | b"1~" | b"7~" => Some(Key::Home),
                b"F" | b"4~" | b"8~" => Some(Key::End),
                b"5~" => Some(Key::PageUp),
                b"6~" => Some(Key::PageDown),
                _ => None,
            };
            Decoded::Key(key, 2 + end + 1)
        }
        b'O' => match bytes.get(2) {
            None => Decoded::Incomplete,
            Some(b'A') => Decoded::Key(Some(Key::Up), 3),
            Some(b'B') => Decoded::Key(Some(Key::Down), 3),
            Some(b'H') => Decoded::Key(Some(Key::Home), 3),
            Some(b'F') => Decoded::Key(Some(Key::End), 3),
            Some(_) => Decoded::Key(None, 3),
        },
        0x1b => Decoded::Key(Some(Key::Escape), 1),
        // Alt+key: the key alone.
        _ => Decoded::Key(None, 1),
    }
}

/// One UTF-8 character (an invalid byte is skipped).
fn character(bytes: &[u8]) -> Decoded {
    let len = match bytes[0] {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => return Decoded::Key(None, 1),
    };
    if bytes.len() < len {
        return Decoded::Incomplete;
    }
    match std::str::from_utf8(&bytes[..len]) {
        Ok(text) => match text.chars().next() {
            Some(c) => Decoded::Key(Some(Key::Char(c)), len),
            None => Decoded::Key(None, len),
        },
        Err(_) => Decoded::Key(None, 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(reads: &[&[u8]], expected: &[Key]) {
        let mut decoder = KeyDecoder::default();
        let mut keys: Vec<Key> = reads.iter().flat_map(|read| decoder.keys(read)).collect();
        keys.extend(decoder.flush());
        assert_eq!(keys, expected, "{reads:?}");
    }

    #[test]
    fn arrows_pages_and_typed_text() {
        check(
            &[b"\x1b[A\x1b[B\x1bOA\x1b[5~\x1b[6~"],
            &[Key::Up, Key::Down, Key::Up, Key::PageUp, Key::PageDown],
        );
        check(&[b"ab\r"], &[Key::Char('a'), Key::Char('b'), Key::Enter]);
        check(&["é日".as_bytes()], &[Key::Char('é'), Key::Char('日')]);
        check(
            &[b"\x7f\t\x15"],
            &[Key::Backspace, Key::Tab, Key::ClearFilter],
        );
        // An unknown sequence means nothing.
        check(&[b"\x1b[1;5C"], &[]);
    }

    #[test]
    fn a_lone_escape_is_the_key_and_a_split_sequence_waits() {
        check(&[b"\x1b"], &[Key::Escape]);
        check(&[b"\x1b[", b"A"], &[Key::Up]);
        check(&[b"\x1b", b"[B"], &[Key::Down]);
        let e_acute = "é".as_bytes();
        check(&[&e_acute[..1], &e_acute[1..]], &[Key::Char('é')]);
    }
}
