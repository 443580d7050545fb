//! Reading newline-delimited frames with a size cap: a line over the cap is skipped up to its
//! newline and reported, so the connection survives it.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// One frame read from the socket.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete line without its `\n` (and without a trailing `\r`).
    Line(Vec<u8>),
    /// A line longer than the cap; its bytes were discarded. Holds the length seen.
    TooLong(usize),
}

/// Reads frames of at most `max_len` bytes from a buffered reader.
pub struct LineReader<R> {
    reader: R,
    max_len: usize,
    /// Bytes of the current line kept so far (empty once it overflowed).
    buf: Vec<u8>,
    /// Bytes of the current line seen so far, discarded ones included.
    seen: usize,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub fn new(reader: R, max_len: usize) -> Self {
        LineReader {
            reader,
            max_len,
            buf: Vec::new(),
            seen: 0,
        }
    }

    /// The next frame, or `None` at end of stream. A partial last line (no `\n` before EOF) is
    /// returned as a line. Cancel-safe: the state of a partly read line lives in `self`.
    pub async fn next_frame(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                if self.seen == 0 {
                    return Ok(None);
                }
                return Ok(Some(self.finish()));
            }
            let (chunk, found_newline) = match available.iter().position(|&b| b == b'\n') {
                Some(pos) => (&available[..pos], true),
                None => (available, false),
            };
            let chunk_len = chunk.len();
            self.seen += chunk_len;
            if self.seen > self.max_len {
                if !self.buf.is_empty() {
                    self.buf = Vec::new();
                }
            } else {
                self.buf.extend_from_slice(chunk);
            }
            self.reader.consume(chunk_len + usize::from(found_newline));
            if found_newline {
                return Ok(Some(self.finish()));
            }
        }
    }

    fn finish(&mut self) -> Frame {
        let seen = std::mem::take(&mut self.seen);
        if seen > self.max_len {
            return Frame::TooLong(seen);
        }
        let mut line = std::mem::take(&mut self.buf);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Frame::Line(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        let mut reader = LineReader::new(tokio::io::BufReader::with_capacity(4, input), max);
        let mut out = Vec::new();
        while let Some(frame) = reader.next_frame().await.unwrap() {
            out.push(frame);
        }
        out
    }

    #[tokio::test]
    async fn splits_lines_and_strips_carriage_returns() {
        assert_eq!(
            frames(b"abc\r\n\nlonger line\nlast", 100).await,
            vec![
                Frame::Line(b"abc".to_vec()),
                Frame::Line(Vec::new()),
                Frame::Line(b"longer line".to_vec()),
                Frame::Line(b"last".to_vec()),
            ]
        );
    }

    #[tokio::test]
    async fn an_oversized_line_is_reported_and_the_next_one_still_read() {
        assert_eq!(
            frames(b"0123456789abcdef\nok\n", 8).await,
            vec![Frame::TooLong(16), Frame::Line(b"ok".to_vec())]
        );
    }

    #[tokio::test]
    async fn a_line_of_exactly_the_cap_is_accepted() {
        assert_eq!(
            frames(b"12345678\n", 8).await,
            vec![Frame::Line(b"12345678".to_vec())]
        );
    }
}
