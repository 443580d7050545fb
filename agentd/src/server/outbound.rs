//! The outbound half of a connection: one writer task drains the connection's bounded queue
//! and writes one message per line, flushing when the queue is empty. It is also the last
//! guard of the line limit: nothing longer than `max_line_bytes` leaves the daemon.

use jsonrpsee::types::{ErrorObject, Id};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use protocol::error as codes;

/// Writes queued messages one per line until the queue closes or `done` fires (then what is
/// already queued is written first).
pub async fn write_loop<W: AsyncWrite + Unpin>(
    write_half: W,
    mut out_rx: mpsc::Receiver<Box<RawValue>>,
    done: CancellationToken,
    max_line_bytes: usize,
) {
    let mut writer = BufWriter::new(write_half);
    loop {
        let message = tokio::select! {
            biased;
            message = out_rx.recv() => message,
            _ = done.cancelled() => {
                // Drain what is already queued, then stop: subscriptions still holding a
                // sink see it closed once the receiver is dropped.
                while let Ok(message) = out_rx.try_recv() {
                    if write_message(&mut writer, message, max_line_bytes).await.is_err() {
                        return;
                    }
                }
                let _ = writer.flush().await;
                let _ = writer.shutdown().await;
                return;
            }
        };
        let Some(message) = message else { break };
        if write_message(&mut writer, message, max_line_bytes)
            .await
            .is_err()
        {
            return;
        }
        if out_rx.is_empty() && writer.flush().await.is_err() {
            return;
        }
    }
    let _ = writer.flush().await;
}

/// The error text of an answer that did not fit in one line.
pub fn response_too_big_message(what: &str, max_line_bytes: usize) -> String {
    format!(
        "response too big: {what} is over the {max_line_bytes}-byte line limit; ask for less (e.g. `session/get` without `includeHistory`)"
    )
}

async fn write_message<W: AsyncWrite + Unpin>(
    writer: &mut BufWriter<W>,
    message: Box<RawValue>,
    max_line_bytes: usize,
) -> std::io::Result<()> {
    let Some(message) = within_line_limit(message, max_line_bytes) else {
        return Ok(());
    };
    writer.write_all(message.get().as_bytes()).await?;
    writer.write_all(b"\n").await
}

/// `message` when it fits in a line; else, for an answer, a "response too big" error with the
/// same id, and for a notification nothing (it is logged). Handlers and subscriptions keep
/// their messages in bounds themselves; this catches what slipped through.
fn within_line_limit(message: Box<RawValue>, max_line_bytes: usize) -> Option<Box<RawValue>> {
    let len = message.get().len();
    if len <= max_line_bytes {
        return Some(message);
    }
    #[derive(Deserialize)]
    struct Head {
        id: Option<Box<RawValue>>,
        method: Option<serde::de::IgnoredAny>,
    }
    let head: Option<Head> = serde_json::from_str(message.get()).ok();
    drop(message);
    match head {
        Some(Head {
            id: Some(id),
            method: None,
        }) => {
            tracing::warn!(
                len,
                "an answer is over the line limit; sending an error instead"
            );
            let id: Id<'static> = serde_json::from_str::<Id>(id.get())
                .map(Id::into_owned)
                .unwrap_or(Id::Null);
            let error = ErrorObject::owned(
                codes::RESPONSE_TOO_BIG,
                response_too_big_message(&format!("the answer ({len} bytes)"), max_line_bytes),
                None::<()>,
            );
            let response = jsonrpsee::MethodResponse::error(id, error);
            Some(response.into_json())
        }
        _ => {
            tracing::warn!(len, "dropped a notification over the line limit");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(value: serde_json::Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(&value).unwrap()
    }

    #[test]
    fn messages_within_the_limit_pass_unchanged() {
        let message = raw(serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": "ok"}));
        let text = message.get().to_owned();
        let out = within_line_limit(message, text.len()).unwrap();
        assert_eq!(out.get(), text);
    }

    #[test]
    fn an_answer_over_the_limit_becomes_a_response_too_big_error_for_its_id() {
        let message =
            raw(serde_json::json!({"jsonrpc": "2.0", "id": "a-7", "result": "x".repeat(500)}));
        let out = within_line_limit(message, 200).unwrap();
        let value: serde_json::Value = serde_json::from_str(out.get()).unwrap();
        assert_eq!(value["id"], "a-7");
        assert_eq!(value["error"]["code"], codes::RESPONSE_TOO_BIG);
        assert!(out.get().len() <= 400, "{}", out.get());
    }

    #[test]
    fn a_notification_over_the_limit_is_dropped() {
        let message = raw(
            serde_json::json!({"jsonrpc": "2.0", "method": "session/event", "params": {"result": "x".repeat(500)}}),
        );
        assert!(within_line_limit(message, 200).is_none());
    }
}
