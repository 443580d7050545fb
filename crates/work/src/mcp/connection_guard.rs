//! What a server sends, watched before rmcp parses it: a stdio server's messages are held
//! to [`McpLimits::max_result_bytes`](crate::mcp::McpLimits) each ([`SizeGuard`]: a longer
//! line is read and dropped, and a response becomes an error response for the same id that
//! names the limit, so its call ends with a size error at once rather than at its timeout),
//! and every transport counts `notifications/tools/list_changed` as it arrives
//! ([`Watched`]), before the responses behind it, so a run knows the tool list is stale
//! before it sees the result of the call that changed it.

use std::borrow::Cow;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncRead, ReadBuf};

use crate::mcp::server::ToolListFreshness;

/// The key of the `data` of the error response [`SizeGuard`] puts in place of a message over
/// the limit: `{"agentdResultTooLarge": {"bytes": N, "limit": L}}`.
pub(super) const TOO_LARGE_KEY: &str = "agentdResultTooLarge";

/// Bytes read from the server per step.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// A stdio server's stdout, one line (one JSON-RPC message) at most `limit` bytes.
pub(super) struct SizeGuard<R> {
    inner: R,
    limit: usize,
    server: String,
    /// The line being read, passed on once its newline comes.
    line: Vec<u8>,
    /// Over the limit: the rest of the line is read and dropped, its top level scanned.
    dropping: Option<Dropping>,
    /// Bytes ready for the reader (`out[out_at..]`).
    out: Vec<u8>,
    out_at: usize,
    chunk: Box<[u8]>,
    eof: bool,
}

/// A line over the limit, being dropped.
struct Dropping {
    bytes: u64,
    scan: TopLevel,
}

impl<R: AsyncRead + Unpin> SizeGuard<R> {
    pub(super) fn new(inner: R, limit: usize, server: &str) -> Self {
        Self {
            inner,
            limit,
            server: server.to_owned(),
            line: Vec::new(),
            dropping: None,
            out: Vec::new(),
            out_at: 0,
            chunk: vec![0; READ_CHUNK_BYTES].into_boxed_slice(),
            eof: false,
        }
    }

    /// Takes `data` in: complete lines within the limit go to `out`.
    fn take_in(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let newline = data.iter().position(|&byte| byte == b'\n');
            let (piece, rest) = match newline {
                Some(at) => (&data[..=at], &data[at + 1..]),
                None => (data, &[][..]),
            };
            data = rest;
            if let Some(dropping) = self.dropping.as_mut() {
                dropping.bytes += piece.len() as u64;
                dropping.scan.feed(piece);
            } else if self.line.len() + piece.len() > self.limit {
                let mut scan = TopLevel::default();
                scan.feed(&self.line);
                scan.feed(piece);
                self.dropping = Some(Dropping {
                    bytes: (self.line.len() + piece.len()) as u64,
                    scan,
                });
                self.line = Vec::new();
            } else {
                self.line.extend_from_slice(piece);
            }
            if newline.is_some() {
                match self.dropping.take() {
                    Some(dropping) => self.replace(dropping),
                    None if self.out.is_empty() => std::mem::swap(&mut self.out, &mut self.line),
                    None => self.out.append(&mut self.line),
                }
            }
        }
    }

    /// What takes the place of a dropped line: an error response for its id, or nothing (a
    /// request or notification of the server's, or no id found).
    fn replace(&mut self, dropping: Dropping) {
        let bytes = dropping.bytes.saturating_sub(1);
        match dropping.scan.response_id() {
            Some(id) => {
                tracing::warn!(server = %self.server, bytes, limit = self.limit, "an MCP result over the size limit was dropped");
                let error = serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": {
                        "code": -32603,
                        "message": format!("the result is {bytes} bytes, over the limit of {} bytes", self.limit),
                        "data": { TOO_LARGE_KEY: { "bytes": bytes, "limit": self.limit } },
                    },
                });
                self.out.extend_from_slice(error.to_string().as_bytes());
                self.out.push(b'\n');
            }
            None => {
                tracing::warn!(server = %self.server, bytes, limit = self.limit, "a message of the MCP server over the size limit was dropped");
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for SizeGuard<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.out_at < this.out.len() {
                let take = buf.remaining().min(this.out.len() - this.out_at);
                buf.put_slice(&this.out[this.out_at..this.out_at + take]);
                this.out_at += take;
                if this.out_at == this.out.len() {
                    this.out.clear();
                    this.out_at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            let mut chunk = ReadBuf::new(&mut this.chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut chunk) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                Poll::Ready(Ok(())) => {}
            }
            let read = chunk.filled().len();
            if read == 0 {
                // The stream ended: an unfinished line is passed on as it is (rmcp drops it).
                this.eof = true;
                this.out.append(&mut this.line);
                continue;
            }
            let chunk = std::mem::take(&mut this.chunk);
            this.take_in(&chunk[..read]);
            this.chunk = chunk;
        }
    }
}

/// Scans a JSON object's top level for its `id` and whether it has a `method`, byte by byte,
/// without holding the object.
#[derive(Default)]
struct TopLevel {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// A key at depth 1 is being read (its bytes, up to [`MAX_KEY_BYTES`]).
    key: Option<Vec<u8>>,
    expecting_key: bool,
    last_key: Vec<u8>,
    /// The raw value of `id`, being read (None once it ended or was too long).
    id_value: Option<Vec<u8>>,
    reading_id: bool,
    id: Option<Vec<u8>>,
    has_method: bool,
}

/// Keys of interest are short; a longer key is none of them.
const MAX_KEY_BYTES: usize = 16;
/// An id is a number or a short string.
const MAX_ID_BYTES: usize = 128;

impl TopLevel {
    fn feed(&mut self, data: &[u8]) {
        for &byte in data {
            self.byte(byte);
        }
    }

    fn byte(&mut self, byte: u8) {
        if self.reading_id {
            let ends = !self.in_string && self.depth == 1 && (byte == b',' || byte == b'}');
            if ends {
                self.reading_id = false;
                self.id = self.id_value.take();
            } else if let Some(value) = self.id_value.as_mut() {
                if value.len() < MAX_ID_BYTES {
                    value.push(byte);
                } else {
                    self.id_value = None;
                }
            }
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
                if let Some(key) = self.key.take() {
                    if key == b"method" {
                        self.has_method = true;
                    }
                    self.last_key = key;
                }
                return;
            }
            if let Some(key) = self.key.as_mut()
                && key.len() <= MAX_KEY_BYTES
            {
                key.push(byte);
            }
            return;
        }
        match byte {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expecting_key {
                    self.key = Some(Vec::new());
                    self.expecting_key = false;
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 {
                    self.expecting_key = true;
                }
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b':' if self.depth == 1 && self.last_key == b"id" => {
                self.reading_id = true;
                self.id_value = Some(Vec::new());
            }
            b',' if self.depth == 1 => self.expecting_key = true,
            _ => {}
        }
    }

    /// The id of a response (no `method`): a number or a string.
    fn response_id(&self) -> Option<serde_json::Value> {
        if self.has_method {
            return None;
        }
        let id: serde_json::Value = serde_json::from_slice(self.id.as_deref()?).ok()?;
        (id.is_number() || id.is_string()).then_some(id)
    }
}

/// A transport that counts `notifications/tools/list_changed` as they arrive, and names
/// itself in words in rmcp's errors.
pub(super) struct Watched<T> {
    pub(super) inner: T,
    pub(super) tools: Arc<ToolListFreshness>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        "the connection to the MCP server".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if let Some(JsonRpcMessage::Notification(notification)) = &message
            && matches!(
                notification.notification,
                ServerNotification::ToolListChangedNotification(_)
            )
        {
            self.tools.changed();
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn guarded(input: &[u8], limit: usize) -> String {
        let mut guard = SizeGuard::new(input, limit, "s");
        let mut out = String::new();
        guard.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn lines_within_the_limit_pass_and_a_longer_response_becomes_a_size_error() {
        let big = format!(
            "{{\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{}\",\"id\":7}}]}},\"jsonrpc\":\"2.0\",\"id\":3}}\n",
            "x".repeat(200)
        );
        let input = format!("{{\"id\":1}}\n{big}{{\"id\":2}}\n");
        let out = guarded(input.as_bytes(), 100).await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert_eq!(lines[0], "{\"id\":1}");
        assert_eq!(lines[2], "{\"id\":2}");
        let error: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(error["id"], 3, "the top-level id, not the nested one");
        let size = &error["error"]["data"][TOO_LARGE_KEY];
        assert_eq!(size["bytes"], big.len() - 1);
        assert_eq!(size["limit"], 100);
    }

    #[tokio::test]
    async fn a_long_request_or_notification_is_dropped_and_string_ids_are_kept() {
        let notification = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"data\":\"{}\"}}}}\n",
            "y".repeat(200)
        );
        let response = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"a,}}\",\"result\":\"{}\"}}\n",
            "z".repeat(200)
        );
        let out = guarded(format!("{notification}{response}").as_bytes(), 100).await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 1, "{out}");
        let error: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(error["id"], "a,}");
    }
}
