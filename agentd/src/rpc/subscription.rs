//! Subscriptions: `session/subscribe` (replay after `afterSeq`, then live, no gap, no
//! duplicate) and `daemon/subscribe` (lifecycle events of every session). A slow subscriber
//! never slows a run: it loses deltas, gets a `lagged` marker and is re-synced from the log.

use std::sync::Arc;
use std::time::Duration;

use jsonrpsee::{PendingSubscriptionSink, SubscriptionMessage, SubscriptionSink};
use tokio::sync::broadcast::error::RecvError;

use crate::answerers::Answerers;
use crate::server::ConnectionContext;
use crate::session::actor::Session;
use crate::session::events::Published;

/// How long a persisted event may wait for room in a client's queue before the subscription
/// is dropped (the client is not reading).
const PERSISTED_SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// Forward a session's events to one subscriber until it unsubscribes, the connection closes
/// or the session is deleted.
pub async fn forward_session_events(
    pending: PendingSubscriptionSink,
    session: Arc<Session>,
    after_seq: Option<u64>,
    connection: Arc<ConnectionContext>,
) {
    let _running = connection.forwarders.token();
    let tracked = connection.track_subscription(&pending.subscription_id());
    let subscription = match session.log.subscribe(after_seq).await {
        Ok(subscription) => subscription,
        Err(err) => {
            pending
                .reject(crate::rpc::internal(format!(
                    "cannot replay events: {err:#}"
                )))
                .await;
            return;
        }
    };
    tracked.count_among(session.log.answerers());
    let Ok(sink) = pending.accept().await else {
        return;
    };
    let mut replay = subscription.replay;
    if send_replay(&sink, &session, &mut replay, &tracked)
        .await
        .is_err()
    {
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
            _ = sink.closed() => return,
            _ = connection.closed.cancelled() => return,
            _ = session.log.closed() => return,
        };
        match received {
            Ok(event) => {
                if event.persisted {
                    if event.seq <= delivered {
                        continue;
                    }
                    if send_persisted(&sink, &event).await.is_err() {
                        return;
                    }
                    delivered = event.seq;
                } else {
                    // Best-effort: a full client queue drops the delta, and so does the line
                    // limit (the text is in the `messageCompleted` that follows, capped).
                    if event.json.get().len() + NOTIFICATION_OVERHEAD
                        <= crate::server::MAX_LINE_BYTES
                    {
                        let _ = sink.send_timeout(message(&event), Duration::ZERO).await;
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
                    && send_persisted(&sink, &marker).await.is_err()
                {
                    return;
                }
                let Ok(mut resync) = session.log.subscribe(Some(delivered)).await else {
                    return;
                };
                if send_replay(&sink, &session, &mut resync.replay, &tracked)
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
/// `answerers` (for every session) while it follows.
pub async fn forward_daemon_events(
    pending: PendingSubscriptionSink,
    mut live: tokio::sync::broadcast::Receiver<Arc<Published>>,
    answerers: &Answerers,
    connection: Arc<ConnectionContext>,
) {
    let _running = connection.forwarders.token();
    let tracked = connection.track_subscription(&pending.subscription_id());
    tracked.count_among(answerers);
    let Ok(sink) = pending.accept().await else {
        return;
    };
    loop {
        let received = tokio::select! {
            // Unsubscribing ends it at once; published events go out before a closing
            // connection ends it.
            biased;
            _ = tracked.cancelled() => return,
            received = live.recv() => received,
            _ = sink.closed() => return,
            _ = connection.closed.cancelled() => return,
        };
        match received {
            Ok(event) => {
                if send_persisted(&sink, &event).await.is_err() {
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
    sink: &SubscriptionSink,
    session: &Session,
    replay: &mut crate::session::replay::ReplayCursor,
    tracked: &crate::server::connection::TrackedSubscription,
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
            send_persisted(sink, event).await?;
        }
    }
    Ok(())
}

fn message(event: &Published) -> SubscriptionMessage {
    SubscriptionMessage::from(event.json.clone())
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
                "event {} is {len} bytes, over the {limit}-byte line limit, and was left out; `session/get` has the conversation",
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

async fn send_persisted(sink: &SubscriptionSink, event: &Published) -> Result<(), ()> {
    let message = match within_line_limit(event) {
        Some(stand_in) => {
            tracing::warn!(
                seq = event.seq,
                "an event is over the line limit; sending a stand-in"
            );
            SubscriptionMessage::from(stand_in)
        }
        None => message(event),
    };
    match sink.send_timeout(message, PERSISTED_SEND_TIMEOUT).await {
        Ok(()) => Ok(()),
        Err(err) => {
            tracing::debug!(%err, "dropping a subscriber that does not read its events");
            Err(())
        }
    }
}
