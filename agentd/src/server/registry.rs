//! The daemon's open connections seen together, for the two limits no single connection can
//! keep: when a new connection finds every slot taken, the longest idle connection with no
//! subscription and no request in flight is evicted to make room (`evict_idle`); and the
//! bytes of answers queued on every connection together stay near
//! `ServerLimits::outbound_bytes_total`: past it, the connection holding the most is closed at
//! once, as a reader that does not read (`add_outbound`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::connection::ConnectionContext;

/// Every open connection of the daemon, with what eviction looks at.
#[derive(Debug)]
pub struct ConnectionRegistry {
    inner: Mutex<Inner>,
    /// Most bytes of answers queued on all connections together before the biggest holder
    /// is closed (`ServerLimits::outbound_bytes_total`).
    outbound_cap: usize,
    /// What `Activity::last_read` counts from.
    epoch: Instant,
}

/// Why a connection was closed by the registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eviction {
    /// The daemon was full and this was the longest idle connection with nothing going on.
    Idle,
    /// The answers queued on all connections passed their cap and this one held the most.
    OutboundBytes,
}

/// One connection's entry, shared with its loop.
#[derive(Debug)]
pub struct Activity {
    connection_id: u64,
    connection: Arc<ConnectionContext>,
    /// Milliseconds after the registry's epoch when the connection last sent a line.
    last_read: AtomicU64,
    /// Requests of the connection being handled now, as its loop last counted them.
    in_flight: AtomicUsize,
    /// Cancelled when the registry evicts the connection; `reason` says why.
    evicted: CancellationToken,
    reason: OnceLock<Eviction>,
    epoch: Instant,
}

/// A connection's place in the registry: leaving it (on drop) takes its queued bytes out of
/// the daemon-wide count.
#[derive(Debug)]
pub struct Registered {
    registry: Arc<ConnectionRegistry>,
    pub activity: Arc<Activity>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<u64, Entry>,
    /// Bytes of answers queued on all connections still counted.
    outbound_total: usize,
}

#[derive(Debug)]
struct Entry {
    activity: Arc<Activity>,
    /// Bytes of answers queued on this connection and not yet taken by its writer.
    outbound_held: usize,
    /// False once the connection was evicted for its queue: its bytes are no longer in
    /// `outbound_total` (they go when its queue is dropped, an instant later), so the next
    /// answer does not evict another connection for the same bytes.
    counted: bool,
}

impl ConnectionRegistry {
    /// An empty registry whose connections may queue `outbound_cap` bytes of answers together.
    pub fn new(outbound_cap: usize) -> Arc<ConnectionRegistry> {
        Arc::new(ConnectionRegistry {
            inner: Mutex::new(Inner::default()),
            outbound_cap: outbound_cap.max(1),
            epoch: Instant::now(),
        })
    }

    /// Add a connection; it leaves when the returned guard drops.
    pub fn register(
        self: &Arc<Self>,
        connection_id: u64,
        connection: Arc<ConnectionContext>,
    ) -> Registered {
        let activity = Arc::new(Activity {
            connection_id,
            connection,
            last_read: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            evicted: CancellationToken::new(),
            reason: OnceLock::new(),
            epoch: self.epoch,
        });
        activity.touch();
        self.lock().entries.insert(
            connection_id,
            Entry {
                activity: activity.clone(),
                outbound_held: 0,
                counted: true,
            },
        );
        Registered {
            registry: self.clone(),
            activity,
        }
    }

    /// Evict the connection that sent nothing for longest among those with no subscription
    /// and no request in flight (not one evicted already); false when there is none.
    pub fn evict_idle(&self) -> bool {
        let inner = self.lock();
        let idlest = inner
            .entries
            .values()
            .map(|entry| &entry.activity)
            .filter(|activity| {
                !activity.evicted.is_cancelled()
                    && activity.in_flight.load(Ordering::Acquire) == 0
                    && activity.connection.subscriptions.is_empty()
            })
            // Reads are timed to the millisecond: of connections that last read in the same
            // one, the oldest (the lowest id) goes, so the order is that of the connections.
            .min_by_key(|activity| {
                (
                    activity.last_read.load(Ordering::Acquire),
                    activity.connection_id,
                )
            });
        match idlest {
            Some(activity) => {
                tracing::info!(
                    connection_id = activity.connection_id,
                    "the daemon is full; evicting the longest idle connection"
                );
                activity.evict(Eviction::Idle);
                true
            }
            None => false,
        }
    }

    /// Connection `connection_id` queued an answer of `len` bytes. Past the daemon-wide cap,
    /// the connection holding the most (perhaps this one) is evicted and its bytes no longer
    /// counted.
    pub fn add_outbound(&self, connection_id: u64, len: usize) {
        let mut inner = self.lock();
        let Some(entry) = inner.entries.get_mut(&connection_id) else {
            return;
        };
        entry.outbound_held += len;
        if !entry.counted {
            return;
        }
        inner.outbound_total += len;
        if inner.outbound_total <= self.outbound_cap {
            return;
        }
        let biggest = inner
            .entries
            .values_mut()
            .filter(|entry| entry.counted)
            .max_by_key(|entry| entry.outbound_held);
        let Some(biggest) = biggest else { return };
        biggest.counted = false;
        let freed = biggest.outbound_held;
        let activity = biggest.activity.clone();
        inner.outbound_total = inner.outbound_total.saturating_sub(freed);
        drop(inner);
        tracing::warn!(
            connection_id = activity.connection_id,
            queued = freed,
            cap = self.outbound_cap,
            "the answers queued on all connections passed their cap; closing the connection that holds the most (it does not read them)"
        );
        activity.evict(Eviction::OutboundBytes);
    }

    /// Connection `connection_id`'s writer took `len` bytes of answers.
    pub fn release_outbound(&self, connection_id: u64, len: usize) {
        let mut inner = self.lock();
        let Some(entry) = inner.entries.get_mut(&connection_id) else {
            return;
        };
        entry.outbound_held = entry.outbound_held.saturating_sub(len);
        if entry.counted {
            inner.outbound_total = inner.outbound_total.saturating_sub(len);
        }
    }

    /// Bytes of answers queued on all connections and counted now (tests).
    pub fn outbound_total(&self) -> usize {
        self.lock().outbound_total
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Activity {
    /// The connection sent a line.
    pub fn touch(&self) {
        let millis = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_read.store(millis, Ordering::Release);
    }

    /// The connection's loop counted `count` requests being handled.
    pub fn set_in_flight(&self, count: usize) {
        self.in_flight.store(count, Ordering::Release);
    }

    /// Resolves once the registry evicted the connection; then `eviction` says why.
    pub async fn evicted(&self) {
        self.evicted.cancelled().await;
    }

    pub fn eviction(&self) -> Option<Eviction> {
        self.reason.get().copied()
    }

    fn evict(&self, reason: Eviction) {
        let _ = self.reason.set(reason);
        self.evicted.cancel();
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut inner = self.registry.lock();
        if let Some(entry) = inner.entries.remove(&self.activity.connection_id)
            && entry.counted
        {
            inner.outbound_total = inner.outbound_total.saturating_sub(entry.outbound_held);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection(id: u64) -> Arc<ConnectionContext> {
        let (tx, _rx) = tokio::sync::mpsc::channel(1);
        Arc::new(ConnectionContext::new(id, tx, 4))
    }

    #[test]
    fn the_biggest_holder_is_evicted_past_the_cap_and_its_bytes_no_longer_count() {
        let registry = ConnectionRegistry::new(100);
        let small = registry.register(1, connection(1));
        let big = registry.register(2, connection(2));
        registry.add_outbound(1, 30);
        registry.add_outbound(2, 60);
        assert_eq!(registry.outbound_total(), 90);
        assert_eq!(big.activity.eviction(), None);
        registry.add_outbound(1, 20);
        assert_eq!(big.activity.eviction(), Some(Eviction::OutboundBytes));
        assert_eq!(small.activity.eviction(), None);
        assert_eq!(registry.outbound_total(), 50);
        // The evicted one's bytes going away does not count twice.
        registry.release_outbound(2, 60);
        assert_eq!(registry.outbound_total(), 50);
        registry.release_outbound(1, 50);
        assert_eq!(registry.outbound_total(), 0);
        registry.add_outbound(1, 40);
        drop(small);
        assert_eq!(registry.outbound_total(), 0);
    }

    #[test]
    fn the_longest_idle_connection_without_work_or_subscriptions_is_evicted() {
        let registry = ConnectionRegistry::new(100);
        let subscribed = registry.register(1, connection(1));
        let _subscription = subscribed
            .activity
            .connection
            .open_subscription(super::super::connection::SubscriptionKind::Daemon)
            .unwrap();
        let busy = registry.register(2, connection(2));
        busy.activity.set_in_flight(1);
        let idle = registry.register(3, connection(3));
        let newer = registry.register(4, connection(4));
        // Read "later" than `idle`.
        newer.activity.last_read.store(u64::MAX, Ordering::Release);
        assert!(registry.evict_idle());
        assert_eq!(idle.activity.eviction(), Some(Eviction::Idle));
        assert!(registry.evict_idle());
        assert_eq!(newer.activity.eviction(), Some(Eviction::Idle));
        assert!(
            !registry.evict_idle(),
            "only busy or subscribed ones are left"
        );
        assert_eq!(subscribed.activity.eviction(), None);
        assert_eq!(busy.activity.eviction(), None);
    }

    /// Connections that last read in the same millisecond go oldest first, whatever order the
    /// registry keeps them in.
    #[test]
    fn of_connections_idle_since_the_same_millisecond_the_oldest_is_evicted() {
        let registry = ConnectionRegistry::new(100);
        let connections: Vec<_> = (1..=40)
            .map(|id| registry.register(id, connection(id)))
            .collect();
        for registered in &connections {
            registered.activity.last_read.store(7, Ordering::Release);
        }
        for registered in &connections {
            assert!(registry.evict_idle());
            assert_eq!(registered.activity.eviction(), Some(Eviction::Idle));
        }
    }
}
