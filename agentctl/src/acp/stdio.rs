//! The editor's end of the bridge: ACP messages as lines on stdin and stdout, bounded both
//! ways. A line from the editor is read up to `MAX_LINE_BYTES`; `session/update`s wait for
//! room once `UPDATES_IN_FLIGHT` of them are queued for an editor that does not read, so a
//! busy session cannot fill the bridge's memory (the daemon's own bounds then apply to the
//! subscription).

use std::sync::Arc;

use agent_client_protocol::Lines;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::SessionNotification;
use agent_client_protocol::{Client, Error};
use futures::{Sink, Stream};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Semaphore;

pub use crate::transport::MAX_LINE_BYTES;

/// `session/update` notifications sent but not yet written to stdout, at most: plenty for
/// a burst of deltas, small enough that a stalled editor costs little memory.
pub const UPDATES_IN_FLIGHT: usize = 1024;

/// Room for `session/update`s on the way to the editor: taken before each is sent, given
/// back when its line is written.
pub struct UpdateWindow {
    room: Semaphore,
}

impl Default for UpdateWindow {
    fn default() -> Self {
        UpdateWindow {
            room: Semaphore::new(UPDATES_IN_FLIGHT),
        }
    }
}

impl UpdateWindow {
    /// Send `notification` once there is room. Fails only when the editor connection is gone.
    pub async fn send(
        &self,
        editor: &ConnectionTo<Client>,
        notification: SessionNotification,
    ) -> Result<(), Error> {
        // The semaphore is never closed; a closed one would only mean sending without waiting.
        if let Ok(permit) = self.room.acquire().await {
            permit.forget();
        }
        editor.send_notification(notification)
    }

    /// A line went out: give its room back when it was an update.
    fn written(&self, line: &str) {
        if is_update(line) && self.room.available_permits() < UPDATES_IN_FLIGHT {
            self.room.add_permits(1);
        }
    }
}

/// Whether a written line is a `session/update` notification (the method comes right after
/// `jsonrpc` in what the crate writes; looking at the head is enough and costs nothing).
fn is_update(line: &str) -> bool {
    let head = line.get(..64).unwrap_or(line);
    head.contains("\"method\":\"session/update\"")
}

/// The ACP transport on stdin and stdout.
pub fn transport(
    window: Arc<UpdateWindow>,
) -> Lines<
    impl Sink<String, Error = std::io::Error> + Send + 'static,
    impl Stream<Item = std::io::Result<String>> + Send + 'static,
> {
    Lines::new(
        outgoing_lines(tokio::io::stdout(), window),
        incoming_lines(tokio::io::stdin()),
    )
}

/// One message per line to `writer`, flushed each; updates give their room back.
fn outgoing_lines<W: AsyncWrite + Unpin + Send + 'static>(
    writer: W,
    window: Arc<UpdateWindow>,
) -> impl Sink<String, Error = std::io::Error> + Send + 'static {
    Box::pin(futures::sink::unfold(
        (writer, window),
        async |(mut writer, window), line: String| {
            writer.write_all(line.as_bytes()).await?;
            writer.write_all(b"\n").await?;
            writer.flush().await?;
            window.written(&line);
            Ok::<_, std::io::Error>((writer, window))
        },
    ))
}

/// The lines of `reader` (blank ones skipped); a line over `MAX_LINE_BYTES` is an error,
/// which ends the connection, never a growing buffer.
fn incoming_lines<R: AsyncRead + Unpin + Send + 'static>(
    reader: R,
) -> impl Stream<Item = std::io::Result<String>> + Send + 'static {
    futures::stream::unfold(Some(BufReader::new(reader)), async |reader| {
        let mut reader = reader?;
        loop {
            let mut line = Vec::new();
            let read = (&mut reader)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut line)
                .await;
            let error = |message: String| {
                Some((
                    Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        message,
                    )),
                    None,
                ))
            };
            match read {
                Ok(0) => return None,
                Ok(_) if line.len() > MAX_LINE_BYTES => {
                    return error(format!(
                        "the editor sent a message longer than {MAX_LINE_BYTES} bytes; \
                         attach less context to the prompt"
                    ));
                }
                Ok(_) => {}
                Err(err) => return Some((Err(err), None)),
            }
            while matches!(line.last(), Some(b'\n' | b'\r')) {
                line.pop();
            }
            if line.is_empty() {
                continue;
            }
            return match String::from_utf8(line) {
                Ok(text) => Some((Ok(text), Some(reader))),
                Err(_) => error("the editor sent a line that is not UTF-8".to_owned()),
            };
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::{SinkExt, StreamExt};

    #[tokio::test]
    async fn lines_are_read_blank_ones_skipped_and_long_ones_refused() {
        let lines: Vec<_> = incoming_lines(&b"{\"a\":1}\r\n\n{\"b\":2}"[..])
            .collect()
            .await;
        let lines: Vec<String> = lines.into_iter().map(Result::unwrap).collect();
        assert_eq!(lines, ["{\"a\":1}", "{\"b\":2}"]);

        let long = vec![b'x'; MAX_LINE_BYTES + 10];
        let mut stream = Box::pin(incoming_lines(std::io::Cursor::new(long)));
        let first = stream.next().await.unwrap();
        assert!(first.unwrap_err().to_string().contains("longer than"));
        assert!(
            stream.next().await.is_none(),
            "the stream ends after the error"
        );
    }

    #[tokio::test]
    async fn written_updates_give_their_room_back() {
        let window = Arc::new(UpdateWindow::default());
        for _ in 0..UPDATES_IN_FLIGHT {
            window.room.acquire().await.unwrap().forget();
        }
        assert_eq!(window.room.available_permits(), 0);
        let mut sink = outgoing_lines(Vec::new(), window.clone());
        sink.send(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_owned())
            .await
            .unwrap();
        assert_eq!(
            window.room.available_permits(),
            0,
            "an answer is not an update"
        );
        sink.send(r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#.to_owned())
            .await
            .unwrap();
        assert_eq!(window.room.available_permits(), 1);
    }
}
