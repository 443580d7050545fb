//! Requests the daemon sends a client on its connection (an extension's tool calls, commands
//! and events), and the client's answers routed back to them. Ids are the daemon's own
//! (`agentd-N`); a bounded table holds the calls waiting; each waits at most its deadline,
//! sending into the connection's bounded queue included (a client that does not read gets
//! its requests timed out, like its notifications); all of them fail at once when the
//! connection ends. An answer whose id
//! the table does not hold (late, never issued, junk) is dropped.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::extension::{ExtensionPeer, PeerError};

/// Requests waiting for an answer on one connection: an extension that never answers fills
/// this, and then further requests fail at once instead of growing the table.
pub const MAX_PENDING_REQUESTS: usize = 256;
/// What the daemon's request ids start with (`agentd-17`): a client's answer carries it back.
const ID_PREFIX: &str = "agentd-";

type Answer = Result<serde_json::Value, PeerError>;

/// The daemon's side of the requests it sends on one connection.
pub struct Peer {
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<Answer>>>,
    outbound: mpsc::Sender<Box<RawValue>>,
    /// Cancelled when the connection ends: every call waiting fails then.
    gone: CancellationToken,
    max_line_bytes: usize,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer")
            .field("pending", &self.lock().len())
            .field("gone", &self.gone.is_cancelled())
            .finish()
    }
}

/// Removes a call from the table when its waiter goes (answered, late or dropped).
struct PendingGuard<'a> {
    peer: &'a Peer,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.peer.lock().remove(&self.id);
    }
}

impl Peer {
    pub fn new(outbound: mpsc::Sender<Box<RawValue>>, max_line_bytes: usize) -> Peer {
        Peer {
            next_id: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            outbound,
            gone: CancellationToken::new(),
            max_line_bytes,
        }
    }

    /// The connection ended: every call waiting fails now, and later ones at once.
    pub fn close(&self) {
        self.gone.cancel();
        let waiting: Vec<_> = self.lock().drain().collect();
        for (_, waiter) in waiting {
            let _ = waiter.send(Err(PeerError::Gone));
        }
    }

    /// Takes `text` as an answer to one of our requests if it is one (a message with no
    /// `method`, a `result` or an `error`, and an id we issued and still wait for); true when
    /// it was an answer at all (so it needs no reply), whatever became of it.
    pub fn accept_answer(&self, text: &str) -> bool {
        #[derive(Deserialize)]
        struct Incoming<'a> {
            #[serde(borrow)]
            id: Option<&'a RawValue>,
            method: Option<serde::de::IgnoredAny>,
            result: Option<serde_json::Value>,
            error: Option<ErrorObject>,
        }
        #[derive(Deserialize)]
        struct ErrorObject {
            #[serde(default)]
            code: i64,
            #[serde(default)]
            message: String,
        }
        let Ok(incoming) = serde_json::from_str::<Incoming>(text) else {
            return false;
        };
        if incoming.method.is_some() || (incoming.result.is_none() && incoming.error.is_none()) {
            return false;
        }
        let id = incoming
            .id
            .and_then(|id| serde_json::from_str::<String>(id.get()).ok())
            .and_then(|id| {
                id.strip_prefix(ID_PREFIX)
                    .and_then(|n| n.parse::<u64>().ok())
            });
        let Some(waiter) = id.and_then(|id| self.lock().remove(&id)) else {
            tracing::debug!("dropped an answer to no request of ours");
            return true;
        };
        let answer = match (incoming.error, incoming.result) {
            (Some(error), _) => Err(PeerError::Refused(format!(
                "{} ({})",
                protocol::error::echo_message(&error.message),
                error.code
            ))),
            (None, Some(result)) => Ok(result),
            (None, None) => Err(PeerError::BadAnswer("no result".to_owned())),
        };
        let _ = waiter.send(answer);
        true
    }

    async fn send_request(
        &self,
        method: &'static str,
        params: serde_json::Value,
        deadline: Duration,
    ) -> Answer {
        if self.gone.is_cancelled() {
            return Err(PeerError::Gone);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let message = serde_json::json!({
            "jsonrpc": "2.0",
            "id": format!("{ID_PREFIX}{id}"),
            "method": method,
            "params": params,
        });
        let message = serde_json::value::to_raw_value(&message)
            .map_err(|err| PeerError::BadAnswer(err.to_string()))?;
        if message.get().len() > self.max_line_bytes {
            return Err(PeerError::TooBig(message.get().len()));
        }
        let (waiter, answer) = oneshot::channel();
        {
            let mut pending = self.lock();
            if pending.len() >= MAX_PENDING_REQUESTS {
                return Err(PeerError::TooMany(pending.len()));
            }
            pending.insert(id, waiter);
        }
        let _guard = PendingGuard { peer: self, id };
        let exchange = async {
            self.outbound
                .send(message)
                .await
                .map_err(|_| PeerError::Gone)?;
            answer.await.unwrap_or(Err(PeerError::Gone))
        };
        tokio::select! {
            answer = tokio::time::timeout(deadline, exchange) => {
                answer.unwrap_or(Err(PeerError::Timeout(deadline)))
            }
            () = self.gone.cancelled() => Err(PeerError::Gone),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Answer>>> {
        self.pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl ExtensionPeer for Peer {
    fn request(
        &self,
        method: &'static str,
        params: serde_json::Value,
        deadline: Duration,
    ) -> BoxFuture<'_, Result<serde_json::Value, PeerError>> {
        Box::pin(self.send_request(method, params, deadline))
    }

    fn is_gone(&self) -> bool {
        self.gone.is_cancelled()
    }
}

#[cfg(test)]
#[path = "peer_tests.rs"]
mod tests;
