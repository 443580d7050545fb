//! jsonrpsee's client over the daemon's NDJSON framing: one JSON message per line on a local
//! socket.

use std::sync::{Arc, OnceLock};

use interprocess::local_socket::tokio::Stream;
use jsonrpsee::core::client::{ReceivedMessage, TransportReceiverT, TransportSenderT};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, ReadHalf, WriteHalf};

/// Largest line the client accepts from the daemon (the daemon's own limit).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("connection to agentd failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("agentd closed the connection")]
    Closed,
    #[error("agentd sent a line longer than {MAX_LINE_BYTES} bytes")]
    TooLong,
}

/// Writes each message as one line.
pub struct LineSender {
    pub(crate) inner: WriteHalf<Stream>,
}

/// Reads one message per line.
pub struct LineReceiver {
    pub(crate) inner: BufReader<ReadHalf<Stream>>,
    pub(crate) buf: Vec<u8>,
    /// The first error the daemon sent without an id (it refused or is closing the
    /// connection: busy, another user, no `initialize`), kept for the caller to report.
    pub(crate) refusal: Arc<OnceLock<Refusal>>,
}

/// An error the daemon sent about the connection itself (`"id": null`).
#[derive(Clone, Debug)]
pub struct Refusal {
    pub code: i32,
    pub message: String,
}

/// The refusal in `line`, if it is an error response with a null id.
fn refusal_in(line: &str) -> Option<Refusal> {
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    if !value.get("id").is_some_and(serde_json::Value::is_null) {
        return None;
    }
    let error = value.get("error")?;
    Some(Refusal {
        code: i32::try_from(error.get("code")?.as_i64()?).ok()?,
        message: error.get("message")?.as_str()?.to_owned(),
    })
}

impl TransportSenderT for LineSender {
    type Error = TransportError;

    async fn send(&mut self, mut msg: String) -> Result<(), Self::Error> {
        msg.push('\n');
        self.inner.write_all(msg.as_bytes()).await?;
        self.inner.flush().await?;
        Ok(())
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.shutdown().await?;
        Ok(())
    }
}

impl TransportReceiverT for LineReceiver {
    type Error = TransportError;

    async fn receive(&mut self) -> Result<ReceivedMessage, Self::Error> {
        loop {
            self.buf.clear();
            let read = (&mut self.inner)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut self.buf)
                .await?;
            if read == 0 {
                return Err(TransportError::Closed);
            }
            if self.buf.len() > MAX_LINE_BYTES {
                return Err(TransportError::TooLong);
            }
            while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
                self.buf.pop();
            }
            if self.buf.is_empty() {
                continue;
            }
            let text = String::from_utf8(std::mem::take(&mut self.buf))
                .map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidData, err))?;
            if self.refusal.get().is_none()
                && text.contains("\"id\":null")
                && let Some(refusal) = refusal_in(&text)
            {
                let _ = self.refusal.set(refusal);
            }
            return Ok(ReceivedMessage::Text(text));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_without_id_is_a_refusal() {
        let refusal = refusal_in(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"agentd is busy"}}"#,
        )
        .unwrap();
        assert_eq!(refusal.code, -32001);
        assert_eq!(refusal.message, "agentd is busy");
        assert!(
            refusal_in(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"x"}}"#)
                .is_none()
        );
        assert!(refusal_in(r#"{"jsonrpc":"2.0","id":null,"result":1}"#).is_none());
    }
}
