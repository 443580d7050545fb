//! The editor's end of the bridge: ACP messages as lines on stdin and stdout, bounded both
//! ways. A line from the editor is read up to `MAX_LINE_BYTES` (a longer one, or one that is
//! not UTF-8, is answered `-32700` and skipped); `session/update`s wait for
//! room once `UPDATES_IN_FLIGHT` of them are queued for an editor that does not read, so a
//! busy session cannot fill the bridge's memory (the daemon's own bounds then apply to the
//! subscription).

use std::sync::Arc;

use agent_client_protocol::Lines;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::SessionNotification;
use agent_client_protocol::{Client, Error};
use futures::{Sink, Stream};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};
use tokio::sync::{Mutex, Semaphore};

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
    let stdout = Arc::new(Mutex::new(tokio::io::stdout()));
    Lines::new(
        outgoing_lines(stdout.clone(), window),
        incoming_lines(tokio::io::stdin(), stdout),
    )
}

/// One message per line to `writer`, flushed each; updates give their room back. The writer
/// is shared with `incoming_lines`, which answers lines it cannot pass on; the lock keeps
/// each line whole.
fn outgoing_lines<W: AsyncWrite + Unpin + Send + 'static>(
    writer: Arc<Mutex<W>>,
    window: Arc<UpdateWindow>,
) -> impl Sink<String, Error = std::io::Error> + Send + 'static {
    Box::pin(futures::sink::unfold(
        (writer, window),
        async |(writer, window), line: String| {
            write_line(&writer, &line).await?;
            window.written(&line);
            Ok::<_, std::io::Error>((writer, window))
        },
    ))
}

async fn write_line<W: AsyncWrite + Unpin>(writer: &Mutex<W>, line: &str) -> std::io::Result<()> {
    let mut writer = writer.lock().await;
    writer.write_all(line.as_bytes()).await?;
    writer.write_all(b"\n").await?;
    writer.flush().await
}

/// The lines of `reader` (blank ones skipped). A line over `MAX_LINE_BYTES` (read no
/// further than the limit, the rest skipped) or not UTF-8 is answered `-32700` on `writer`
/// with `id: null`, as JSON-RPC answers a message it cannot parse, and reading goes on; only
/// a read or write failure ends the stream.
fn incoming_lines<R, W>(
    reader: R,
    writer: Arc<Mutex<W>>,
) -> impl Stream<Item = std::io::Result<String>> + Send + 'static
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    futures::stream::unfold(Some((BufReader::new(reader), writer)), async |state| {
        let (mut reader, writer) = state?;
        loop {
            let mut line = Vec::new();
            let read = (&mut reader)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut line)
                .await;
            match read {
                Ok(0) => return None,
                Ok(_) => {}
                Err(err) => return Some((Err(err), None)),
            }
            let refusal = if line.len() > MAX_LINE_BYTES {
                let ended = line.last() == Some(&b'\n');
                drop(line);
                if !ended && let Err(err) = skip_line(&mut reader).await {
                    return Some((Err(err), None));
                }
                format!(
                    "the editor sent a message longer than {MAX_LINE_BYTES} bytes; \
                         attach less context to the prompt"
                )
            } else {
                while matches!(line.last(), Some(b'\n' | b'\r')) {
                    line.pop();
                }
                if line.is_empty() {
                    continue;
                }
                match String::from_utf8(line) {
                    Ok(text) => return Some((Ok(text), Some((reader, writer)))),
                    Err(_) => "the editor sent a line that is not UTF-8; \
                                   JSON-RPC messages are UTF-8 text"
                        .to_owned(),
                }
            };
            let answer = serde_json::json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": {"code": protocol::error::PARSE_ERROR, "message": refusal},
            });
            if let Err(err) = write_line(&writer, &answer.to_string()).await {
                return Some((Err(err), None));
            }
        }
    })
}

/// Read and drop the rest of a line, a buffer at a time, through its newline (or the end).
async fn skip_line<R: AsyncBufRead + Unpin>(reader: &mut R) -> std::io::Result<()> {
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(());
        }
        match buffer.iter().position(|byte| *byte == b'\n') {
            Some(at) => {
                reader.consume(at + 1);
                return Ok(());
            }
            None => {
                let len = buffer.len();
                reader.consume(len);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::{SinkExt, StreamExt};

    /// The lines `incoming_lines` passes on from `input`, and what it answered itself.
    async fn read_all(input: Vec<u8>) -> (Vec<String>, Vec<serde_json::Value>) {
        let answers = Arc::new(Mutex::new(Vec::new()));
        let lines: Vec<_> = incoming_lines(std::io::Cursor::new(input), answers.clone())
            .collect()
            .await;
        let lines = lines.into_iter().map(Result::unwrap).collect();
        let answers = answers.lock().await;
        let answers = String::from_utf8(answers.clone())
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        (lines, answers)
    }

    #[tokio::test]
    async fn lines_are_read_and_blank_ones_skipped() {
        let (lines, answers) = read_all(b"{\"a\":1}\r\n\n{\"b\":2}".to_vec()).await;
        assert_eq!(lines, ["{\"a\":1}", "{\"b\":2}"]);
        assert!(answers.is_empty(), "{answers:?}");
    }

    #[tokio::test]
    async fn long_and_non_utf8_lines_are_answered_parse_error_and_reading_goes_on() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 10];
        input.extend_from_slice(b"\n{\"a\":1}\n\xff\xfe{}\n{\"b\":2}\n");
        input.extend(vec![b'y'; MAX_LINE_BYTES * 2]);
        let (lines, answers) = read_all(input).await;
        assert_eq!(lines, ["{\"a\":1}", "{\"b\":2}"]);
        assert_eq!(answers.len(), 3, "{answers:?}");
        for answer in &answers {
            assert_eq!(answer["error"]["code"], protocol::error::PARSE_ERROR);
            assert!(answer["id"].is_null(), "{answer}");
        }
        let message = |n: usize| answers[n]["error"]["message"].as_str().unwrap().to_owned();
        assert!(message(0).contains("longer than"), "{}", message(0));
        assert!(message(1).contains("not UTF-8"), "{}", message(1));
        assert!(message(2).contains("longer than"), "{}", message(2));
    }

    #[tokio::test]
    async fn written_updates_give_their_room_back() {
        let window = Arc::new(UpdateWindow::default());
        for _ in 0..UPDATES_IN_FLIGHT {
            window.room.acquire().await.unwrap().forget();
        }
        assert_eq!(window.room.available_permits(), 0);
        let mut sink = outgoing_lines(Arc::new(Mutex::new(Vec::new())), window.clone());
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
