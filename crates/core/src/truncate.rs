//! Output caps: cutting long text in the middle, keeping head and tail, with a marker saying how
//! much was left out; and a byte buffer that keeps only head and tail while a process writes.

use std::borrow::Cow;
use std::collections::VecDeque;

/// Cuts `text` to about `max_chars` chars, keeping the first and last halves and putting
/// `[… N chars omitted …]` between them. Cuts on char boundaries; text within the cap is
/// returned as is.
pub fn truncate_middle(text: &str, max_chars: usize) -> Cow<'_, str> {
    let total = text.chars().count();
    if total <= max_chars {
        return Cow::Borrowed(text);
    }
    let head_chars = max_chars / 2;
    let tail_chars = max_chars - head_chars;
    let omitted = total - head_chars - tail_chars;
    let head_end = byte_offset_of_char(text, head_chars);
    let tail_start = byte_offset_of_char(text, total - tail_chars);
    Cow::Owned(format!(
        "{}\n[… {omitted} chars omitted …]\n{}",
        &text[..head_end],
        &text[tail_start..]
    ))
}

/// Keeps the first and last bytes written to it, up to a total capacity, and counts the bytes in
/// between that were dropped. Memory stays bounded however much a child process writes.
#[derive(Debug)]
pub struct HeadTailBuffer {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_capacity: usize,
    tail_capacity: usize,
    omitted: u64,
    total: u64,
    lines: u64,
}

impl HeadTailBuffer {
    pub fn new(capacity: usize) -> Self {
        let head_capacity = capacity / 2;
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_capacity,
            tail_capacity: capacity - head_capacity,
            omitted: 0,
            total: 0,
            lines: 0,
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        self.lines += bytes.iter().filter(|&&byte| byte == b'\n').count() as u64;
        let head_room = self.head_capacity - self.head.len();
        if head_room > 0 {
            let taken = head_room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..taken]);
            bytes = &bytes[taken..];
        }
        if bytes.len() >= self.tail_capacity {
            self.omitted += (self.tail.len() + bytes.len() - self.tail_capacity) as u64;
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_capacity..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_capacity);
        self.tail.drain(..overflow);
        self.omitted += overflow as u64;
        self.tail.extend(bytes);
    }

    /// Bytes written so far, kept or not.
    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    /// Newlines written so far.
    pub fn total_lines(&self) -> u64 {
        self.lines
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The kept text (invalid UTF-8 replaced), with `[… N bytes omitted …]` where bytes were
    /// dropped.
    pub fn to_text(&self) -> String {
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        if self.omitted == 0 {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let head = trim_incomplete_end(&self.head);
        let tail_start = tail
            .iter()
            .position(|&byte| !is_continuation(byte))
            .unwrap_or(tail.len());
        let omitted = self.omitted + (self.head.len() - head.len()) as u64 + tail_start as u64;
        format!(
            "{}\n[… {omitted} bytes omitted …]\n{}",
            String::from_utf8_lossy(head),
            String::from_utf8_lossy(&tail[tail_start..])
        )
    }
}

fn byte_offset_of_char(text: &str, char_index: usize) -> usize {
    text.char_indices()
        .nth(char_index)
        .map_or(text.len(), |(offset, _)| offset)
}

fn is_continuation(byte: u8) -> bool {
    byte & 0b1100_0000 == 0b1000_0000
}

/// Drops a UTF-8 sequence cut off at the end of `bytes`.
fn trim_incomplete_end(bytes: &[u8]) -> &[u8] {
    let lookback = bytes.len().saturating_sub(4);
    let Some(start) = (lookback..bytes.len())
        .rev()
        .find(|&index| !is_continuation(bytes[index]))
    else {
        return bytes;
    };
    let lead = bytes[start];
    let needed = match lead {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    };
    if bytes.len() - start < needed {
        &bytes[..start]
    } else {
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_untouched() {
        assert!(matches!(
            truncate_middle("hello", 5),
            Cow::Borrowed("hello")
        ));
    }

    #[test]
    fn long_text_keeps_head_and_tail_with_marker() {
        let text = format!("{}{}", "a".repeat(50), "b".repeat(50));
        let cut = truncate_middle(&text, 10);
        assert_eq!(cut, "aaaaa\n[… 90 chars omitted …]\nbbbbb");
    }

    #[test]
    fn cuts_on_char_boundaries() {
        let text = "é".repeat(100);
        let cut = truncate_middle(&text, 7);
        assert_eq!(cut, "ééé\n[… 93 chars omitted …]\néééé");
    }

    #[test]
    fn head_tail_buffer_within_capacity_keeps_everything() {
        let mut buffer = HeadTailBuffer::new(10);
        buffer.push(b"abc");
        buffer.push(b"de\n");
        assert_eq!(buffer.to_text(), "abcde\n");
        assert_eq!(buffer.total_lines(), 1);
    }

    #[test]
    fn head_tail_buffer_drops_the_middle() {
        let mut buffer = HeadTailBuffer::new(6);
        for chunk in [&b"0123"[..], b"4567", b"89", b"abcdef"] {
            buffer.push(chunk);
        }
        assert_eq!(buffer.total_bytes(), 16);
        assert_eq!(buffer.to_text(), "012\n[… 10 bytes omitted …]\ndef");
    }

    #[test]
    fn head_tail_buffer_small_pushes_into_tail() {
        let mut buffer = HeadTailBuffer::new(4);
        for byte in b"abcdefgh" {
            buffer.push(&[*byte]);
        }
        assert_eq!(buffer.to_text(), "ab\n[… 4 bytes omitted …]\ngh");
    }

    #[test]
    fn head_tail_buffer_does_not_split_chars() {
        let mut buffer = HeadTailBuffer::new(5);
        buffer.push("éééééé".as_bytes());
        let text = buffer.to_text();
        assert!(!text.contains('\u{fffd}'), "{text}");
        assert_eq!(text, "é\n[… 8 bytes omitted …]\né");
    }
}
