//! The outbound half of a connection: one writer task drains the connection's bounded queue
//! and writes one message per line, flushing when the queue is empty. It is also the last
//! guard of the line limit: nothing longer than `max_line_bytes` leaves the daemon. Answers
//! also count against the connection's `OutboundBudget` (and, through it, the daemon-wide
//! count of `registry`) until the writer takes them. An error answer is the last place a
//! client's value can be echoed whole: `bounded_error` cuts one that got through.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use jsonrpsee::types::{ErrorObject, Id};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use super::registry::ConnectionRegistry;
use protocol::error as codes;

/// Bytes of answers queued for one connection and not yet taken by its writer. The queue
/// holds a bounded number of messages, but one answer may be 16 MiB: an answer first takes
/// its size from here, so a client that reads nothing holds at most this much in answers.
/// Permits are bytes, found again by the address of the message text (stable while the
/// message lives, which is until the writer has taken it).
#[derive(Debug)]
pub struct OutboundBudget {
    bytes: Arc<Semaphore>,
    /// The most one message takes: the whole budget.
    capacity: usize,
    held: Mutex<HashMap<usize, OwnedSemaphorePermit>>,
    /// The daemon's connections and this one's id there: what this budget holds also counts
    /// against `ServerLimits::outbound_bytes_total`. None in tests of one connection.
    registry: Option<(Arc<ConnectionRegistry>, u64)>,
}

impl OutboundBudget {
    pub fn new(capacity: usize) -> OutboundBudget {
        let capacity = capacity.clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
        OutboundBudget {
            bytes: Arc::new(Semaphore::new(capacity)),
            capacity,
            held: Mutex::new(HashMap::new()),
            registry: None,
        }
    }

    /// This budget, counted also in `registry` as connection `connection_id`'s.
    pub fn counted_in(mut self, registry: Arc<ConnectionRegistry>, connection_id: u64) -> Self {
        self.registry = Some((registry, connection_id));
        self
    }

    /// Wait until `message` fits, and count it until the writer takes it.
    pub async fn reserve(&self, message: &RawValue) {
        let len = message.get().len().clamp(1, self.capacity);
        let Ok(permit) = self
            .bytes
            .clone()
            .acquire_many_owned(u32::try_from(len).unwrap_or(u32::MAX))
            .await
        else {
            return;
        };
        if let Some((registry, connection_id)) = &self.registry {
            registry.add_outbound(*connection_id, permit.num_permits());
        }
        self.lock().insert(address(message), permit);
    }

    /// The writer took `message`: give its bytes back (nothing for a message not counted).
    fn release(&self, message: &RawValue) {
        let permit = self.lock().remove(&address(message));
        if let (Some(permit), Some((registry, connection_id))) = (permit, &self.registry) {
            registry.release_outbound(*connection_id, permit.num_permits());
        }
    }

    /// Bytes free now (tests).
    pub fn available(&self) -> usize {
        self.bytes.available_permits()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<usize, OwnedSemaphorePermit>> {
        self.held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn address(message: &RawValue) -> usize {
    message.get().as_ptr() as usize
}

/// Writes queued messages one per line until the queue closes or `done` fires (then what is
/// already queued is written first).
pub async fn write_loop<W: AsyncWrite + Unpin>(
    write_half: W,
    mut out_rx: mpsc::Receiver<Box<RawValue>>,
    done: CancellationToken,
    max_line_bytes: usize,
    budget: Arc<OutboundBudget>,
) {
    let mut writer = BufWriter::new(write_half);
    loop {
        let message = tokio::select! {
            biased;
            message = out_rx.recv() => message,
            _ = done.cancelled() => {
                // Drain what is already queued, then stop: subscriptions still queueing
                // see the queue closed once the receiver is dropped.
                while let Ok(message) = out_rx.try_recv() {
                    if write_message(&mut writer, message, max_line_bytes, &budget).await.is_err() {
                        return;
                    }
                }
                let _ = writer.flush().await;
                let _ = writer.shutdown().await;
                return;
            }
        };
        let Some(message) = message else { break };
        if write_message(&mut writer, message, max_line_bytes, &budget)
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

/// Error answers longer than this are rebuilt with their message cut
/// (`protocol::error::echo_message`): handlers quote a client's value through
/// `protocol::error::echo` (at most `MAX_ECHOED_CHARS`), and this catches a message that
/// quotes one whole anyway, before it is queued. Our own messages are far shorter.
pub const MAX_ERROR_ANSWER_BYTES: usize = 8 * 1024;

/// `response` when it is no error, or an error within `MAX_ERROR_ANSWER_BYTES`; else the same
/// error for `id` with its message cut and its `data` dropped when that is the long part.
pub fn bounded_error(
    id: Id<'static>,
    response: jsonrpsee::MethodResponse,
) -> jsonrpsee::MethodResponse {
    if !response.is_error() || response.as_json().get().len() <= MAX_ERROR_ANSWER_BYTES {
        return response;
    }
    #[derive(Deserialize)]
    struct Answer {
        error: ErrorParts,
    }
    #[derive(Deserialize)]
    struct ErrorParts {
        code: i32,
        message: String,
        data: Option<Box<RawValue>>,
    }
    let Ok(Answer { error }) = serde_json::from_str::<Answer>(response.as_json().get()) else {
        return response;
    };
    drop(response);
    tracing::warn!(
        code = error.code,
        len = error.message.len(),
        "an error message quotes too much; cutting it"
    );
    let message = protocol::error::echo_message(&error.message).into_owned();
    let data = error
        .data
        .filter(|data| data.get().len() <= MAX_ERROR_ANSWER_BYTES / 2);
    jsonrpsee::MethodResponse::error(id, ErrorObject::owned(error.code, message, data))
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
    budget: &OutboundBudget,
) -> std::io::Result<()> {
    budget.release(&message);
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

    #[tokio::test]
    async fn an_answer_holds_its_bytes_until_the_writer_takes_it() {
        let budget = Arc::new(OutboundBudget::new(100));
        let first = raw(serde_json::json!({"id": 1, "result": "x".repeat(50)}));
        budget.reserve(&first).await;
        let taken = 100 - budget.available();
        assert_eq!(taken, first.get().len());
        let second = raw(serde_json::json!({"id": 2, "result": "y".repeat(50)}));
        {
            use futures::FutureExt as _;
            assert!(
                budget.reserve(&second).now_or_never().is_none(),
                "the second answer must wait for room"
            );
        }
        let (tx, rx) = mpsc::channel(4);
        tx.send(first).await.unwrap();
        drop(tx);
        write_loop(
            tokio::io::sink(),
            rx,
            CancellationToken::new(),
            1000,
            budget.clone(),
        )
        .await;
        assert_eq!(budget.available(), 100);
        budget.reserve(&second).await;
        assert_eq!(100 - budget.available(), second.get().len());
    }

    #[test]
    fn a_long_error_message_is_cut_and_a_short_one_kept() {
        let long = format!("no such thing: {}", "Z".repeat(100_000));
        let response = jsonrpsee::MethodResponse::error(
            Id::Number(3),
            ErrorObject::owned(
                codes::NOT_FOUND,
                long,
                Some(protocol::error::ErrorData::suggest_method("session/list")),
            ),
        );
        let cut = bounded_error(Id::Number(3), response);
        let value: serde_json::Value = serde_json::from_str(cut.as_json().get()).unwrap();
        assert_eq!(value["id"], 3);
        assert_eq!(value["error"]["code"], codes::NOT_FOUND);
        assert_eq!(value["error"]["data"]["suggest"]["method"], "session/list");
        let message = value["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("no such thing: ZZ"), "{message}");
        assert!(message.contains("characters left out"), "{message}");
        assert!(cut.as_json().get().len() < 1024, "{}", cut.as_json().get());

        let short = jsonrpsee::MethodResponse::error(
            Id::Number(4),
            ErrorObject::owned(codes::NOT_FOUND, "x".repeat(2000), None::<()>),
        );
        let text = short.as_json().get().to_owned();
        assert_eq!(bounded_error(Id::Number(4), short).as_json().get(), text);
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
