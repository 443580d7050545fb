//! Reading newline-delimited frames with a size cap: a line over the cap is skipped up to its
//! newline and reported, so the connection survives it. Lines past a small size draw on a
//! budget shared by every connection (`FrameBudget`), so many big lines at once wait instead
//! of multiplying the daemon's memory.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::io::{AsyncBufRead, AsyncBufReadExt};
use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore};

/// One frame read from the socket.
#[derive(Debug)]
pub enum Frame {
    /// A complete line.
    Line(Line),
    /// A line longer than the cap; its bytes were discarded. Holds the length seen.
    TooLong(usize),
}

/// A complete line without its `\n` (and without a trailing `\r`).
#[derive(Debug)]
pub struct Line {
    pub bytes: Vec<u8>,
    /// The share of the frame budget a big line holds; keep it while the line (or what was
    /// parsed from it) is alive, drop it to let other big lines be read.
    pub budget: Option<OwnedSemaphorePermit>,
}

/// Memory all connections together may hold in big lines: a line that grows past
/// `big_line_bytes` takes `max_len` bytes of `semaphore` (permits are bytes) before more of
/// it is buffered, and waits while the budget is spent.
#[derive(Clone, Debug)]
pub struct FrameBudget {
    pub semaphore: Arc<Semaphore>,
    pub big_line_bytes: usize,
}

/// Reads frames of at most `max_len` bytes from a buffered reader.
pub struct LineReader<R> {
    reader: R,
    max_len: usize,
    budget: FrameBudget,
    /// Bytes of the current line kept so far (empty once it overflowed).
    buf: Vec<u8>,
    /// Bytes of the current line seen so far, discarded ones included.
    seen: usize,
    /// The budget the current line holds once it grew big.
    permit: Option<OwnedSemaphorePermit>,
    /// The wait for that budget, kept across calls: the caller's `select!` may drop
    /// `next_frame` while it waits, and the line must not lose its place in the queue.
    acquiring: Option<Acquire>,
}

type Acquire = Pin<Box<dyn Future<Output = Result<OwnedSemaphorePermit, AcquireError>> + Send>>;

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub fn new(reader: R, max_len: usize, budget: FrameBudget) -> Self {
        LineReader {
            reader,
            max_len,
            budget,
            buf: Vec::new(),
            seen: 0,
            permit: None,
            acquiring: None,
        }
    }

    /// The next frame, or `None` at end of stream. A partial last line (no `\n` before EOF) is
    /// returned as a line. Cancel-safe: the state of a partly read line (and the budget it
    /// holds) lives in `self`.
    pub async fn next_frame(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                if self.seen == 0 {
                    return Ok(None);
                }
                return Ok(Some(self.finish()));
            }
            let (chunk_len, found_newline) = match available.iter().position(|&b| b == b'\n') {
                Some(pos) => (pos, true),
                None => (available.len(), false),
            };
            let keeps = self.seen + chunk_len <= self.max_len;
            if keeps
                && self.permit.is_none()
                && self.buf.len() + chunk_len > self.budget.big_line_bytes
            {
                // Nothing is consumed until the budget is ours: the same bytes are offered
                // again by `fill_buf` on the next pass.
                self.permit = Some(self.acquire_budget().await?);
                continue;
            }
            let chunk = &available[..chunk_len];
            self.seen += chunk_len;
            if keeps {
                grow_within(&mut self.buf, chunk_len, self.max_len);
                self.buf.extend_from_slice(chunk);
            } else if !self.buf.is_empty() || self.permit.is_some() {
                self.buf = Vec::new();
                self.permit = None;
            }
            self.reader.consume(chunk_len + usize::from(found_newline));
            if found_newline {
                return Ok(Some(self.finish()));
            }
        }
    }

    async fn acquire_budget(&mut self) -> std::io::Result<OwnedSemaphorePermit> {
        let bytes = u32::try_from(self.max_len).unwrap_or(u32::MAX);
        let semaphore = self.budget.semaphore.clone();
        let acquiring = self
            .acquiring
            .get_or_insert_with(|| Box::pin(semaphore.acquire_many_owned(bytes)));
        let acquired = acquiring.await;
        self.acquiring = None;
        acquired.map_err(|_| std::io::Error::other("the frame memory budget is closed"))
    }

    fn finish(&mut self) -> Frame {
        let seen = std::mem::take(&mut self.seen);
        let budget = self.permit.take();
        if seen > self.max_len {
            return Frame::TooLong(seen);
        }
        let mut bytes = std::mem::take(&mut self.buf);
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        Frame::Line(Line { bytes, budget })
    }
}

/// Make room for `more` bytes without the capacity passing `max_len` (doubling would reach
/// twice the largest line, memory the budget does not count).
fn grow_within(buf: &mut Vec<u8>, more: usize, max_len: usize) {
    let needed = buf.len() + more;
    if needed <= buf.capacity() {
        return;
    }
    let target = needed.max(buf.capacity().saturating_mul(2).min(max_len));
    buf.reserve_exact(target - buf.len());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(bytes: usize, big_line_bytes: usize) -> FrameBudget {
        FrameBudget {
            semaphore: Arc::new(Semaphore::new(bytes)),
            big_line_bytes,
        }
    }

    /// Lines as text, `TooLong(n)` as `"<too long: n>"`.
    async fn frames(input: &[u8], max: usize) -> Vec<String> {
        let mut reader = LineReader::new(
            tokio::io::BufReader::with_capacity(4, input),
            max,
            budget(max, 4),
        );
        let mut out = Vec::new();
        while let Some(frame) = reader.next_frame().await.unwrap() {
            out.push(match frame {
                Frame::Line(line) => String::from_utf8(line.bytes).unwrap(),
                Frame::TooLong(len) => format!("<too long: {len}>"),
            });
        }
        out
    }

    #[tokio::test]
    async fn splits_lines_and_strips_carriage_returns() {
        assert_eq!(
            frames(b"abc\r\n\nlonger line\nlast", 100).await,
            vec!["abc", "", "longer line", "last"]
        );
    }

    #[tokio::test]
    async fn an_oversized_line_is_reported_and_the_next_one_still_read() {
        assert_eq!(
            frames(b"0123456789abcdef\nok\n", 8).await,
            vec!["<too long: 16>", "ok"]
        );
    }

    #[tokio::test]
    async fn a_line_of_exactly_the_cap_is_accepted() {
        assert_eq!(frames(b"12345678\n", 8).await, vec!["12345678"]);
    }

    #[tokio::test]
    async fn a_big_line_holds_the_budget_until_it_is_dropped() {
        let shared = budget(8, 4);
        let input: &[u8] = b"small\n12345678\nab\n";
        let mut reader = LineReader::new(
            tokio::io::BufReader::with_capacity(4, input),
            8,
            shared.clone(),
        );
        let Some(Frame::Line(first)) = reader.next_frame().await.unwrap() else {
            panic!("expected a line")
        };
        assert_eq!(first.bytes, b"small");
        drop(first);
        assert_eq!(shared.semaphore.available_permits(), 8);
        let Some(Frame::Line(big)) = reader.next_frame().await.unwrap() else {
            panic!("expected a line")
        };
        assert!(big.budget.is_some());
        assert_eq!(shared.semaphore.available_permits(), 0);
        // Another connection's big line waits while this one holds the budget.
        let mut other = LineReader::new(
            tokio::io::BufReader::with_capacity(4, &b"abcdefgh\n"[..]),
            8,
            shared.clone(),
        );
        {
            use futures::FutureExt as _;
            assert!(
                other.next_frame().now_or_never().is_none(),
                "the second big line must wait"
            );
        }
        // A third waits behind it; a waiter dropped by its caller keeps its place.
        let mut third = LineReader::new(
            tokio::io::BufReader::with_capacity(4, &b"ijklmnop\n"[..]),
            8,
            shared.clone(),
        );
        {
            use futures::FutureExt as _;
            assert!(third.next_frame().now_or_never().is_none());
            drop(big);
            assert!(
                third.next_frame().now_or_never().is_none(),
                "the second line was waiting first"
            );
        }
        let Some(Frame::Line(line)) = other.next_frame().await.unwrap() else {
            panic!("expected a line")
        };
        assert_eq!(line.bytes, b"abcdefgh");
        assert!(line.budget.is_some());
        drop(line);
        let Some(Frame::Line(line)) = third.next_frame().await.unwrap() else {
            panic!("expected a line")
        };
        assert_eq!(line.bytes, b"ijklmnop");
        drop(line);
        assert_eq!(shared.semaphore.available_permits(), 8);
        let Some(Frame::Line(small)) = reader.next_frame().await.unwrap() else {
            panic!("expected a line")
        };
        assert!(small.budget.is_none());
    }

    #[tokio::test]
    async fn an_oversized_line_gives_its_budget_back() {
        let shared = budget(8, 4);
        let input: &[u8] = b"0123456789abcdef\n";
        let mut reader = LineReader::new(
            tokio::io::BufReader::with_capacity(4, input),
            8,
            shared.clone(),
        );
        assert!(matches!(
            reader.next_frame().await.unwrap(),
            Some(Frame::TooLong(16))
        ));
        assert_eq!(shared.semaphore.available_permits(), 8);
    }
}
