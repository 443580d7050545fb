//! Subscriptions on our own wire: `session/subscribe` (replay after `afterSeq`, then live, no
//! gap, no duplicate) and `daemon/subscribe` (lifecycle events of every session), each
//! answered `{"subscriptionId": "sub_…"}`, and their unsubscribe methods. The subscribe handler
//! registers the subscription with its connection before it answers; a forwarder task (owned
//! by the connection's `forwarders`) starts sending once that answer is queued, so no
//! notification ever comes before it. A slow subscriber never slows a run: it loses deltas,
//! gets a `lagged` marker and is re-synced from the log.

use std::sync::Arc;
use std::time::Duration;

use jsonrpsee::ResponsePayload;
use jsonrpsee::core::server::MethodResponseFuture;
use protocol::session::{
    DaemonSubscribeParams, DaemonSubscribeResult, DaemonUnsubscribeParams, DaemonUnsubscribeResult,
    SessionSubscribeParams, SessionSubscribeResult, SessionUnsubscribeParams,
    SessionUnsubscribeResult,
};
use tokio::sync::broadcast::error::RecvError;

use super::RpcResult;
use crate::server::ConnectionContext;
use crate::server::connection::{SubscriptionKind, TooManySubscriptions, TrackedSubscription};
use crate::session::actor::Session;
use crate::session::events::{Published, Subscription};
use crate::state::DaemonState;

/// How long a persisted event may wait for room in a client's queue before the subscription
/// is dropped (the client is not reading).
const PERSISTED_SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// `session/subscribe`: register the subscription, answer its id, then forward.
pub async fn session_subscribe(
    state: Arc<DaemonState>,
    params: SessionSubscribeParams,
    connection: Arc<ConnectionContext>,
) -> RpcResult<ResponsePayload<'static, SessionSubscribeResult>> {
    let session = state.sessions.get(&params.session_id).await?;
    let tracked = connection
        .open_subscription(SubscriptionKind::Session)
        .map_err(too_many)?;
    let subscription = session
        .log
        .subscribe(params.after_seq)
        .await
        .map_err(|err| super::internal(format!("cannot replay events: {err:#}")))?;
    // Counted before the answer: the client never sees an id that does not count yet.
    tracked.count_among(session.log.answerers());
    let result = SessionSubscribeResult {
        subscription_id: tracked.id().to_owned(),
    };
    let (payload, answered) = ResponsePayload::success(result).notify_on_completion();
    connection.forwarders.spawn(forward_session_events(
        answered,
        tracked,
        session,
        subscription,
        connection.clone(),
    ));
    Ok(payload)
}

/// `daemon/subscribe`: register the subscription, answer its id, then forward.
pub async fn daemon_subscribe(
    state: Arc<DaemonState>,
    _params: DaemonSubscribeParams,
    connection: Arc<ConnectionContext>,
) -> RpcResult<ResponsePayload<'static, DaemonSubscribeResult>> {
    let tracked = connection
        .open_subscription(SubscriptionKind::Daemon)
        .map_err(too_many)?;
    let live = state.sessions.subscribe_daemon_events();
    tracked.count_among(state.sessions.daemon_answerers());
    let result = DaemonSubscribeResult {
        subscription_id: tracked.id().to_owned(),
    };
    let (payload, answered) = ResponsePayload::success(result).notify_on_completion();
    connection.forwarders.spawn(forward_daemon_events(
        answered,
        tracked,
        live,
        connection.clone(),
    ));
    Ok(payload)
}

/// `session/unsubscribe`: end a session subscription of this connection; unknown ids answer
/// `unsubscribed: false`.
pub async fn session_unsubscribe(
    _state: Arc<DaemonState>,
    params: SessionUnsubscribeParams,
    connection: Arc<ConnectionContext>,
) -> RpcResult<SessionUnsubscribeResult> {
    let unsubscribed = connection.unsubscribe(SubscriptionKind::Session, &params.subscription_id);
    Ok(SessionUnsubscribeResult { unsubscribed })
}

/// `daemon/unsubscribe`: end a `daemon/subscribe` subscription of this connection.
pub async fn daemon_unsubscribe(
    _state: Arc<DaemonState>,
    params: DaemonUnsubscribeParams,
    connection: Arc<ConnectionContext>,
) -> RpcResult<DaemonUnsubscribeResult> {
    let unsubscribed = connection.unsubscribe(SubscriptionKind::Daemon, &params.subscription_id);
    Ok(DaemonUnsubscribeResult { unsubscribed })
}

fn too_many(err: TooManySubscriptions) -> jsonrpsee::types::ErrorObjectOwned {
    super::rpc_error(protocol::error::OVERLOADED, err.to_string())
}

/// Whether the subscribe call's answer was queued: wait for it (or the connection's end).
async fn answer_queued(answered: MethodResponseFuture, connection: &ConnectionContext) -> bool {
    tokio::select! {
        answered = answered => answered.is_ok(),
        _ = connection.closed.cancelled() => false,
    }
}

/// Forward a session's events to one subscriber until it unsubscribes, the connection closes
/// or the session is deleted.
async fn forward_session_events(
    answered: MethodResponseFuture,
    tracked: TrackedSubscription,
    session: Arc<Session>,
    subscription: Subscription,
    connection: Arc<ConnectionContext>,
) {
    if !answer_queued(answered, &connection).await {
        return;
    }
    let mut replay = subscription.replay;
    if send_replay(&session, &mut replay, &tracked).await.is_err() {
        return;
    }
    let mut delivered = subscription.caught_up_to;
    let mut live = subscription.live;
    loop {
        let received = tokio::select! {
            // Unsubscribing ends it at once; events already published go out before a
            // closing connection ends it (a daemon stop publishes `runFinished` just before).
            biased;
            _ = tracked.cancelled() => return,
            received = live.recv() => received,
            _ = tracked.writer_closed() => return,
            _ = connection.closed.cancelled() => return,
            _ = session.log.closed() => return,
        };
        match received {
            Ok(event) => {
                if event.persisted {
                    if event.seq <= delivered {
                        continue;
                    }
                    if send_persisted(&tracked, &event).await.is_err() {
                        return;
                    }
                    delivered = event.seq;
                } else {
                    // Best-effort: a full client queue drops the delta, and so does the line
                    // limit (the text is in the `messageCompleted` that follows, capped).
                    if event.json.get().len() + NOTIFICATION_OVERHEAD
                        <= crate::server::MAX_LINE_BYTES
                    {
                        let _ = tracked.try_send(&event.json);
                    }
                }
            }
            Err(RecvError::Lagged(missed)) => {
                tracing::debug!(
                    missed,
                    session = session.id(),
                    "subscriber lagged; re-syncing"
                );
                if let Ok(marker) = session.log.lagged_marker(delivered)
                    && send_persisted(&tracked, &marker).await.is_err()
                {
                    return;
                }
                let Ok(mut resync) = session.log.subscribe(Some(delivered)).await else {
                    return;
                };
                if send_replay(&session, &mut resync.replay, &tracked)
                    .await
                    .is_err()
                {
                    return;
                }
                delivered = resync.caught_up_to;
                live = resync.live;
            }
            Err(RecvError::Closed) => return,
        }
    }
}

/// Forward lifecycle events of every session; a client that answers approvals counts among
/// the daemon stream's answerers (for every session) while it follows.
async fn forward_daemon_events(
    answered: MethodResponseFuture,
    tracked: TrackedSubscription,
    mut live: tokio::sync::broadcast::Receiver<Arc<Published>>,
    connection: Arc<ConnectionContext>,
) {
    if !answer_queued(answered, &connection).await {
        return;
    }
    loop {
        let received = tokio::select! {
            // Unsubscribing ends it at once; published events go out before a closing
            // connection ends it.
            biased;
            _ = tracked.cancelled() => return,
            received = live.recv() => received,
            _ = tracked.writer_closed() => return,
            _ = connection.closed.cancelled() => return,
        };
        match received {
            Ok(event) => {
                if send_persisted(&tracked, &event).await.is_err() {
                    return;
                }
            }
            // Lifecycle events are advisory; a lagging client re-lists sessions.
            Err(RecvError::Lagged(missed)) => {
                tracing::debug!(missed, "daemon-event subscriber lagged");
            }
            Err(RecvError::Closed) => return,
        }
    }
}

/// Send a replay page by page (one page read and held at a time) until it is done, the
/// subscriber unsubscribes or stops reading, or the log cannot be read.
async fn send_replay(
    session: &Session,
    replay: &mut crate::session::replay::ReplayCursor,
    tracked: &TrackedSubscription,
) -> Result<(), ()> {
    while !replay.is_done() {
        let page = match session.log.replay_page(replay).await {
            Ok(page) => page,
            Err(err) => {
                tracing::warn!(session = session.id(), %err, "cannot replay events");
                return Err(());
            }
        };
        for event in &page {
            if tracked.is_cancelled() {
                return Err(());
            }
            send_persisted(tracked, event).await?;
        }
    }
    Ok(())
}

/// Room kept in a line for the notification around an event envelope.
const NOTIFICATION_OVERHEAD: usize = 1024;

/// A persisted event too long for one line (written before messages were capped) goes out as
/// an `error` event with the same seq that says so: the subscriber sees no gap in seqs, and
/// the line limit holds.
fn within_line_limit(event: &Published) -> Option<Box<serde_json::value::RawValue>> {
    let len = event.json.get().len();
    let limit = crate::server::MAX_LINE_BYTES - NOTIFICATION_OVERHEAD;
    if len <= limit {
        return None;
    }
    let session_id = serde_json::from_str::<EnvelopeHead>(event.json.get())
        .map(|head| head.session_id)
        .unwrap_or_default();
    let stand_in = protocol::event::SessionEventEnvelope {
        session_id,
        seq: event.seq,
        event: protocol::event::Event::Error {
            run_id: event.event.run_id().map(str::to_owned),
            message: format!(
                "event {} is {len} bytes, over the {limit}-byte line limit, and was left out; the session's history still has it",
                event.seq
            ),
            will_retry: false,
        },
        not_persisted: false,
    };
    serde_json::value::to_raw_value(&stand_in).ok()
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnvelopeHead {
    session_id: String,
}

async fn send_persisted(tracked: &TrackedSubscription, event: &Published) -> Result<(), ()> {
    let stand_in = within_line_limit(event);
    if stand_in.is_some() {
        tracing::warn!(
            seq = event.seq,
            "an event is over the line limit; sending a stand-in"
        );
    }
    let envelope = stand_in.as_deref().unwrap_or(&event.json);
    match tracked.send(envelope, PERSISTED_SEND_TIMEOUT).await {
        Ok(()) => Ok(()),
        Err(err) => {
            tracing::debug!(%err, "dropping a subscriber that does not read its events");
            Err(())
        }
    }
}
