//! The `session/event` notification envelope. Event payloads are defined alongside the session
//! methods; the envelope is stable.

use serde::{Deserialize, Serialize};

/// Notification method carrying session events to subscribers.
pub const SESSION_EVENT: &str = "session/event";

/// Params of a `session/event` notification (inside jsonrpsee's subscription `result`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEventEnvelope<E> {
    pub session_id: String,
    /// Monotonic per session, persisted; `messageDelta` events share the seq of the last
    /// persisted event and are never replayed.
    pub seq: u64,
    pub event: E,
}
