//! One client connection: newline-delimited JSON-RPC 2.0 in both directions, dispatched into
//! the jsonrpsee method table. Requests run concurrently (responses may come back out of
//! order; clients match by id), except `initialize`, which is handled before the next line is
//! read so that a pipelined request after it sees the connection initialised. At most
//! `ServerLimits::max_in_flight_per_connection` run at once: at the cap the connection is not
//! read until one finishes, so its client waits on its own socket.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use jsonrpsee::types::{ErrorObject, Id, Params};
use jsonrpsee::{ConnectionId, Extensions, MethodCallback, MethodResponse, MethodSink, Methods};
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::ServerLimits;
use super::line::{Frame, FrameBudget, Line, LineReader};
use super::outbound::{OutboundBudget, bounded_error, response_too_big_message, write_loop};
use super::registry::{ConnectionRegistry, Eviction};
use super::request::{IncomingCall, VerbatimId, error_response, parse_call};
use super::subscriptions::SubscriptionTable;
pub use super::subscriptions::{
    SendFailed, SubscriptionKind, TooManySubscriptions, TrackedSubscription,
};
use protocol::Method;
use protocol::error::{self as codes, echo, echo_message};

/// Per-connection state that handlers reach through the request `Extensions`.
#[derive(Debug)]
pub struct ConnectionContext {
    pub connection_id: u64,
    /// Set by `initialize`; every other method is refused until then.
    pub initialized: AtomicBool,
    /// The client's name from `initialize` (approvals record who decided).
    pub client_name: std::sync::OnceLock<String>,
    /// Whether the client declared `capabilities.approvals` in `initialize` (the first one
    /// wins, like the name): only then do its subscriptions count as someone who may answer.
    pub approvals_capability: std::sync::OnceLock<bool>,
    /// The protocol version `initialize` agreed on (the lower of the client's and ours, same
    /// major; the first `initialize` wins): behaviour a minor version adds that an older client
    /// could misread is gated on it.
    pub protocol_version: std::sync::OnceLock<protocol::version::ProtocolVersion>,
    /// Cancelled when the connection ends, so subscriptions tied to it stop.
    pub closed: CancellationToken,
    /// Owns the subscription forwarders (`rpc::subscription`): the connection waits for them
    /// (they flush events already published, e.g. the `runFinished` of a daemon stop) before
    /// it stops its writer.
    pub forwarders: tokio_util::task::TaskTracker,
    /// Live subscriptions of this connection (`subscriptions`).
    pub(super) subscriptions: SubscriptionTable,
    /// The connection's bounded outbound queue: subscriptions queue their notifications here,
    /// behind the answers already queued (so never before their subscribe call's answer).
    pub(super) outbound: mpsc::Sender<Box<RawValue>>,
    /// Whether the client declared `capabilities.extensions` in `initialize` (it answers the
    /// daemon's requests; the first `initialize` decides).
    pub extensions_capability: std::sync::OnceLock<bool>,
    /// The requests the daemon sends this client (an extension's calls and events) and the
    /// answers routed back to them; closed as soon as the connection ends.
    pub peer: Arc<super::peer::Peer>,
}

impl ConnectionContext {
    /// The context of a new connection: not initialised, no subscriptions (at most
    /// `max_subscriptions`), notifications queued on `outbound`.
    pub fn new(
        connection_id: u64,
        outbound: mpsc::Sender<Box<RawValue>>,
        max_subscriptions: usize,
    ) -> ConnectionContext {
        ConnectionContext {
            connection_id,
            initialized: AtomicBool::new(false),
            client_name: std::sync::OnceLock::new(),
            approvals_capability: std::sync::OnceLock::new(),
            protocol_version: std::sync::OnceLock::new(),
            closed: CancellationToken::new(),
            forwarders: tokio_util::task::TaskTracker::new(),
            subscriptions: SubscriptionTable::new(max_subscriptions),
            extensions_capability: std::sync::OnceLock::new(),
            peer: Arc::new(super::peer::Peer::new(
                outbound.clone(),
                super::MAX_LINE_BYTES,
            )),
            outbound,
        }
    }

    /// Whether this client answers approvals (`capabilities.approvals` in `initialize`).
    pub fn answers_approvals(&self) -> bool {
        self.approvals_capability.get().copied().unwrap_or(false)
    }

    /// Open a subscription of `kind` under a fresh id, before its subscribe call is answered;
    /// it ends when the returned guard drops. Refused past `max_subscriptions_per_connection`.
    pub fn open_subscription(
        self: &Arc<Self>,
        kind: SubscriptionKind,
    ) -> Result<TrackedSubscription, TooManySubscriptions> {
        TrackedSubscription::register(self.clone(), kind)
    }

    /// End this connection's subscription of `kind` with `id`; false when there is none.
    pub fn unsubscribe(&self, kind: SubscriptionKind, id: &str) -> bool {
        self.subscriptions.cancel(kind, id)
    }
}

/// Serve one connection until the client hangs up, does not `initialize` in time
/// (`limits.initialize_deadline`), `shutdown` fires or `registry` evicts it, then finish
/// in-flight requests and flush what is queued, within one deadline
/// (`limits.stop_flush_deadline` when the daemon stops or evicted it as idle,
/// `limits.drain_deadline` after a hang-up, none when evicted for what it does not read); the
/// writer is then aborted. `frame_budget` is shared by every connection: the bytes of big
/// lines (`limits.frame_memory_budget`).
pub async fn serve_connection<S>(
    stream: S,
    connection_id: u64,
    methods: Methods,
    limits: ServerLimits,
    frame_budget: Arc<Semaphore>,
    registry: Arc<ConnectionRegistry>,
    shutdown: CancellationToken,
) where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (read_half, write_half) = tokio::io::split(stream);
    let (out_tx, out_rx) = mpsc::channel::<Box<RawValue>>(limits.outbound_queue);
    let writer_done = CancellationToken::new();
    let outbound = Arc::new(
        OutboundBudget::new(limits.outbound_bytes.max(limits.max_line_bytes))
            .counted_in(registry.clone(), connection_id),
    );
    let mut writer = tokio::spawn(write_loop(
        write_half,
        out_rx,
        writer_done.clone(),
        limits.max_line_bytes,
        outbound.clone(),
    ));

    let ctx = Arc::new(ConnectionContext::new(
        connection_id,
        out_tx.clone(),
        limits.max_subscriptions_per_connection as usize,
    ));
    let registered = registry.register(connection_id, ctx.clone());
    let activity = registered.activity.clone();
    let dispatcher = Arc::new(Dispatcher {
        methods,
        sink: MethodSink::new_with_limit(out_tx.clone(), limits.max_line_bytes as u32),
        outbound,
        ctx: ctx.clone(),
        heavy_answers: Arc::new(tokio::sync::Semaphore::new(
            limits.heavy_answers_per_connection.max(1),
        )),
        limits: limits.clone(),
    });

    let budget = FrameBudget {
        semaphore: frame_budget,
        big_line_bytes: limits.big_line_bytes,
    };
    let mut reader = LineReader::new(BufReader::new(read_half), limits.max_line_bytes, budget);
    let mut in_flight = JoinSet::new();
    let initialize_deadline = tokio::time::sleep(limits.initialize_deadline);
    tokio::pin!(initialize_deadline);
    loop {
        let uninitialized = !ctx.initialized.load(Ordering::Acquire);
        activity.set_in_flight(in_flight.len());
        tokio::select! {
            _ = shutdown.cancelled() => break,
            () = activity.evicted() => {
                if activity.eviction() == Some(Eviction::Idle) {
                    let message = format!(
                        "agentd is full ({} connections) and this connection was the longest idle one, with no subscription and no request; closing it: reconnect when needed",
                        limits.max_connections
                    );
                    let error = MethodResponse::error(
                        Id::Null,
                        ErrorObject::owned(codes::OVERLOADED, message, None::<()>),
                    );
                    let _ = dispatcher
                        .sink
                        .send_timeout(error.into_json(), std::time::Duration::ZERO)
                        .await;
                }
                break;
            }
            Some(_) = in_flight.join_next(), if !in_flight.is_empty() => {}
            _ = &mut initialize_deadline, if uninitialized => {
                tracing::debug!(connection_id, "no initialize in time; closing the connection");
                let message = format!(
                    "no `initialize` within {} ms; closing the connection",
                    limits.initialize_deadline.as_millis()
                );
                // Best effort: a client that reads nothing must not hold the close up.
                let error = MethodResponse::error(
                    Id::Null,
                    ErrorObject::owned(codes::NOT_INITIALIZED, message, None::<()>),
                );
                let _ = dispatcher
                    .sink
                    .send_timeout(error.into_json(), std::time::Duration::ZERO)
                    .await;
                break;
            }
            // At the cap the connection is not read: its client waits, nobody else does.
            frame = reader.next_frame(), if in_flight.len() < limits.max_in_flight_per_connection => match frame {
                Ok(Some(Frame::Line(line))) => {
                    activity.touch();
                    dispatcher.clone().handle_line(line, &mut in_flight).await;
                }
                Ok(Some(Frame::TooLong(len))) => {
                    let err = ErrorObject::owned(
                        codes::PARSE_ERROR,
                        format!(
                            "message too long: {len} bytes, the limit is {} bytes per line",
                            limits.max_line_bytes
                        ),
                        None::<()>,
                    );
                    dispatcher.send(MethodResponse::error(Id::Null, err)).await;
                }
                Ok(None) => break,
                Err(err) => {
                    tracing::debug!(connection_id, %err, "connection read failed");
                    break;
                }
            },
        }
    }

    // The daemon's own requests to this client cannot be answered any more: they fail now
    // (an extension's tools leave its sessions), not after the drain.
    ctx.peer.close();
    // Finish what the client already asked for, then stop the writer after it flushed, all
    // within one deadline: a short one when the daemon stops (its whole stop has a budget),
    // the drain deadline when the client hung up.
    let budget = match activity.eviction() {
        // It does not read: nothing it was sent would reach it.
        Some(Eviction::OutboundBytes) => std::time::Duration::ZERO,
        Some(Eviction::Idle) => limits.stop_flush_deadline,
        None if shutdown.is_cancelled() => limits.stop_flush_deadline,
        None => limits.drain_deadline,
    };
    let drain_until = tokio::time::Instant::now() + budget;
    let drained = tokio::time::timeout_at(drain_until, async {
        while in_flight.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            connection_id,
            "in-flight requests did not finish in time; aborting them"
        );
        in_flight.abort_all();
    }
    ctx.closed.cancel();
    // Let subscriptions send what was already published before the writer stops.
    ctx.forwarders.close();
    if tokio::time::timeout_at(drain_until, ctx.forwarders.wait())
        .await
        .is_err()
    {
        tracing::warn!(connection_id, "subscriptions did not stop in time");
    }
    drop(dispatcher);
    drop(out_tx);
    writer_done.cancel();
    if tokio::time::timeout_at(drain_until, &mut writer)
        .await
        .is_err()
    {
        tracing::warn!(
            connection_id,
            "client did not read its last messages in time; closing the connection"
        );
        writer.abort();
    }
    drop(registered);
    tracing::debug!(connection_id, "connection closed");
}

struct Dispatcher {
    methods: Methods,
    sink: MethodSink,
    /// Answers take their bytes from it before they are queued.
    outbound: Arc<OutboundBudget>,
    ctx: Arc<ConnectionContext>,
    /// Calls that may build a line-long answer (`ServerLimits::heavy_answer_methods`, and
    /// batches) hold a permit from their start until their answer is queued.
    heavy_answers: Arc<tokio::sync::Semaphore>,
    limits: ServerLimits,
}

impl Dispatcher {
    async fn handle_line(self: Arc<Self>, line: Line, in_flight: &mut JoinSet<()>) {
        // A big line's share of the frame budget stays with what was parsed from it until its
        // handler returns (not while the answer waits for room: a client that reads nothing
        // must not keep the budget from other connections).
        let Line { bytes, budget } = line;
        let text = match std::str::from_utf8(&bytes) {
            Ok(text) => text.trim(),
            Err(_) => {
                self.send_error(Id::Null, codes::PARSE_ERROR, "message is not valid UTF-8")
                    .await;
                return;
            }
        };
        if text.is_empty() {
            return;
        }
        if text.starts_with('[') {
            self.handle_batch(text, budget, in_flight).await;
            return;
        }
        let parsed = parse_call(text);
        if matches!(parsed, Ok(None)) {
            // A response to one of the daemon's requests (or a client's notification).
            self.ctx.peer.accept_answer(text);
            return;
        }
        drop(bytes);
        match parsed {
            Ok(Some(call)) if call.method == protocol::methods::Initialize::NAME => {
                // Inline, so the next request on this connection sees the result.
                let (response, id) = self.call(call).await;
                self.send_answer(response, &id).await;
            }
            Ok(Some(call)) => {
                in_flight.spawn(async move {
                    // A big line already holds a share of the frame budget, which bounds it
                    // (and it must not wait on this client's reading while holding it).
                    let heavy = match budget {
                        None => self.heavy_permit(&call.method).await,
                        Some(_) => None,
                    };
                    let (response, id) = self.call(call).await;
                    drop(budget);
                    self.send_answer(response, &id).await;
                    drop(heavy);
                });
            }
            Ok(None) => {}
            Err(refusal) => {
                self.send_answer(refusal.response, &refusal.verbatim_id)
                    .await
            }
        }
    }

    async fn handle_batch(
        self: Arc<Self>,
        text: &str,
        budget: Option<OwnedSemaphorePermit>,
        in_flight: &mut JoinSet<()>,
    ) {
        let items: Vec<Box<RawValue>> = match serde_json::from_str(text) {
            Ok(items) => items,
            Err(err) => {
                self.send_error(
                    Id::Null,
                    codes::PARSE_ERROR,
                    &format!("invalid JSON: {}", echo_message(&err.to_string())),
                )
                .await;
                return;
            }
        };
        if items.is_empty() {
            self.send_error(Id::Null, codes::INVALID_REQUEST, "empty batch")
                .await;
            return;
        }
        if items.len() > self.limits.max_batch_len {
            let message = format!(
                "batch too long: {} requests, the limit is {}; send fewer per batch",
                items.len(),
                self.limits.max_batch_len
            );
            self.send_error(Id::Null, codes::INVALID_REQUEST, &message)
                .await;
            return;
        }
        in_flight.spawn(async move {
            // A batch collects its answers in memory: it counts as one heavy call (unless its
            // big line already holds a share of the frame budget, which bounds it), and stops
            // running its requests once their answers cannot fit in one line anyway.
            let _heavy = match budget {
                None => self.heavy_answers.clone().acquire_owned().await.ok(),
                Some(_) => None,
            };
            let requests = items.len();
            let mut responses = Vec::with_capacity(requests);
            let mut answered_bytes = 0usize;
            for (index, item) in items.into_iter().enumerate() {
                let response = match parse_call(item.get()) {
                    Ok(Some(call)) => self.call(call).await,
                    Ok(None) => {
                        self.ctx.peer.accept_answer(item.get());
                        continue;
                    }
                    Err(refusal) => (refusal.response, refusal.verbatim_id),
                };
                answered_bytes = answered_bytes.saturating_add(response.0.as_json().get().len());
                responses.push(response);
                if answered_bytes > self.limits.max_line_bytes {
                    drop(responses);
                    let message = response_too_big_message(
                        &format!(
                            "the batch's answer (over {answered_bytes} bytes after {} of its {requests} requests; the rest were not run)",
                            index + 1
                        ),
                        self.limits.max_line_bytes,
                    );
                    self.send_error(Id::Null, codes::RESPONSE_TOO_BIG, &message)
                        .await;
                    return;
                }
            }
            drop(budget);
            let mut parts = Vec::with_capacity(responses.len());
            // Told once the batch's answer is queued (or not): a subscription's first
            // notification waits for it.
            let mut notifies = Vec::new();
            for (response, id) in responses {
                let (json, notify, _) = response.into_parts();
                notifies.extend(notify);
                parts.push(id.restore(json));
            }
            if parts.is_empty() {
                return;
            }
            match serde_json::value::to_raw_value(&parts) {
                Ok(batch) if batch.get().len() > self.limits.max_line_bytes => {
                    let message = response_too_big_message(
                        &format!("the batch's answer ({} bytes)", batch.get().len()),
                        self.limits.max_line_bytes,
                    );
                    drop(batch);
                    self.send_error(Id::Null, codes::RESPONSE_TOO_BIG, &message)
                        .await;
                    notifies.into_iter().for_each(|notify| notify.notify(false));
                }
                Ok(batch) => {
                    self.outbound.reserve(&batch).await;
                    let sent = self.sink.send(batch).await.is_ok();
                    notifies.into_iter().for_each(|notify| notify.notify(sent));
                }
                Err(err) => {
                    tracing::error!(%err, "cannot serialise a batch response");
                    notifies.into_iter().for_each(|notify| notify.notify(false));
                }
            }
        });
    }

    /// A permit of `heavy_answers` for a call of `method` when its answer can be line-long,
    /// held until the answer is queued; `None` for other methods.
    async fn heavy_permit(&self, method: &str) -> Option<tokio::sync::OwnedSemaphorePermit> {
        if !self.limits.heavy_answer_methods.contains(&method) {
            return None;
        }
        self.heavy_answers.clone().acquire_owned().await.ok()
    }

    /// Run one call through the method table. A handler that panics is answered -32603 (the
    /// panic hook has logged it with a backtrace): the client never waits for an answer that
    /// cannot come. An answer over the line limit becomes a "response too big" error.
    /// The answer goes back with the call's `VerbatimId`, returned beside it.
    async fn call(&self, call: IncomingCall) -> (MethodResponse, VerbatimId) {
        use futures::FutureExt;
        let id = call.id.clone();
        let verbatim_id = call.verbatim_id.clone();
        let method = call.method.clone();
        let response = match std::panic::AssertUnwindSafe(self.dispatch(call))
            .catch_unwind()
            .await
        {
            Ok(response) => response,
            Err(payload) => {
                let message = agentd_core::logging::panic_message(&*payload);
                tracing::error!(connection_id = self.ctx.connection_id, %method, "the handler panicked: {message}");
                let response = error_response(
                    id,
                    codes::INTERNAL_ERROR,
                    format!(
                        "internal error: the daemon failed handling {method} ({message}); it keeps serving and logged the details, please report this bug"
                    ),
                );
                return (response, verbatim_id);
            }
        };
        let response = bounded_error(id.clone(), response);
        (self.within_line_limit(id, &method, response), verbatim_id)
    }
    /// jsonrpsee stops encoding an answer at the limit and answers its own "oversized" error,
    /// whose code (-32008) is ours for "already decided": give it our code and a message that
    /// says what to do.
    fn within_line_limit(
        &self,
        id: Id<'static>,
        method: &str,
        response: MethodResponse,
    ) -> MethodResponse {
        let oversized = response.as_error_code()
            == Some(jsonrpsee::types::error::OVERSIZED_RESPONSE_CODE)
            && response
                .as_json()
                .get()
                .contains(jsonrpsee::types::error::OVERSIZED_RESPONSE_MSG);
        if !oversized {
            return response;
        }
        tracing::warn!(method, "an answer is over the line limit");
        let message = response_too_big_message(
            &format!("the answer to `{method}`"),
            self.limits.max_line_bytes,
        );
        MethodResponse::error(
            id,
            ErrorObject::owned(codes::RESPONSE_TOO_BIG, message, None::<()>),
        )
    }

    /// Dispatch one call to its handler.
    async fn dispatch(&self, call: IncomingCall) -> MethodResponse {
        let IncomingCall {
            id,
            verbatim_id: _,
            method,
            params,
        } = call;
        let is_initialize = method == protocol::methods::Initialize::NAME;
        if !is_initialize && !self.ctx.initialized.load(Ordering::Acquire) {
            return MethodResponse::error(
                id,
                ErrorObject::owned(
                    codes::NOT_INITIALIZED,
                    "not initialized: call `initialize` first on this connection",
                    None::<()>,
                ),
            );
        }
        let Some((_, callback)) = self.methods.method_with_name(&method) else {
            return MethodResponse::error(
                id,
                ErrorObject::owned(
                    codes::METHOD_NOT_FOUND,
                    format!("method not found: {}", echo(&method)),
                    None::<()>,
                ),
            );
        };
        let params = Params::new(params.as_deref().map(RawValue::get)).into_owned();
        let mut extensions = Extensions::new();
        extensions.insert(self.ctx.clone());
        let connection_id = ConnectionId(self.ctx.connection_id as usize);
        let max = self.limits.max_line_bytes;
        match callback {
            MethodCallback::Sync(cb) => cb(id, params, max, extensions),
            MethodCallback::Async(cb) => cb(id, params, connection_id, max, extensions).await,
            // Subscriptions are ours (`rpc::subscription`), registered as plain methods.
            MethodCallback::Subscription(_) | MethodCallback::Unsubscription(_) => {
                MethodResponse::error(
                    id,
                    ErrorObject::owned(
                        codes::INTERNAL_ERROR,
                        format!("internal error: {method} is registered the wrong way"),
                        None::<()>,
                    ),
                )
            }
        }
    }

    /// Queue a response.
    async fn send(&self, response: MethodResponse) {
        self.send_answer(response, &VerbatimId::default()).await;
    }

    /// Queue a response with its id put back as the client wrote it.
    async fn send_answer(&self, response: MethodResponse, verbatim_id: &VerbatimId) {
        let (json, notify, _) = response.into_parts();
        let json = verbatim_id.restore(json);
        self.outbound.reserve(&json).await;
        let sent = self.sink.send(json).await.is_ok();
        if let Some(notify) = notify {
            notify.notify(sent);
        }
    }

    async fn send_error(&self, id: Id<'static>, code: i32, message: &str) {
        self.send(MethodResponse::error(
            id,
            ErrorObject::owned(code, message.to_owned(), None::<()>),
        ))
        .await;
    }
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;
