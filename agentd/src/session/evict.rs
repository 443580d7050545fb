//! Unloading idle sessions: a loaded session that nobody uses (no request holding it, no
//! subscriber, no run, no approval, nothing queued) for `[sessions] idle_unload_secs` is closed
//! and dropped from memory once its actor and log writer have stopped; its summary goes to the
//! listing index, and the next request on it loads it again from its file (clientRequestIds
//! and "allow for session" answers are read back from it: only memory is given up).

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::actor::{Session, SessionError};
use super::index::{FileStamp, SummaryEntry};
use super::{SessionManager, Slot};

/// The shortest pause between two sweeps (a tiny idle time in tests must not spin).
const MIN_SWEEP_PERIOD: Duration = Duration::from_millis(100);
/// The longest pause between two sweeps: an idle session goes at most this late.
const MAX_SWEEP_PERIOD: Duration = Duration::from_secs(60);

/// The loaded session of a slot, if any: loaded on first use, taken out again when idle.
pub(super) struct LoadedCell {
    current: Mutex<Option<Arc<Session>>>,
    /// Held while loading, so one request loads and the others wait for it.
    loading: tokio::sync::Mutex<()>,
    /// The last time the session was asked for or seen busy.
    last_used: Mutex<Instant>,
}

impl LoadedCell {
    pub(super) fn new() -> LoadedCell {
        LoadedCell {
            current: Mutex::new(None),
            loading: tokio::sync::Mutex::new(()),
            last_used: Mutex::new(Instant::now()),
        }
    }

    /// A cell holding `session`, just created.
    pub(super) fn with(session: Arc<Session>) -> LoadedCell {
        let cell = LoadedCell::new();
        *cell.lock_current() = Some(session);
        cell
    }

    /// The session, if it is loaded now.
    pub(super) fn get(&self) -> Option<Arc<Session>> {
        self.lock_current().clone()
    }

    pub(super) fn is_loaded(&self) -> bool {
        self.lock_current().is_some()
    }

    /// The session, loaded with `load` unless it already is.
    pub(super) async fn get_or_load<F, Fut>(&self, load: F) -> Result<Arc<Session>, SessionError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Session, SessionError>>,
    {
        self.touch();
        if let Some(session) = self.get() {
            return Ok(session);
        }
        let _loading = self.loading.lock().await;
        if let Some(session) = self.get() {
            return Ok(session);
        }
        let session = Arc::new(load().await?);
        *self.lock_current() = Some(session.clone());
        self.touch();
        Ok(session)
    }

    /// Take the session out when it is loaded, idle, and has not been used for `idle_for`.
    /// Checked under the same lock `get` clones under, so a session handed to a request is
    /// never taken: the request's reference counts as use. The caller holds `loading` (see
    /// [`LoadedCell::lock_loading`]) until the session taken has stopped.
    fn take_if_idle(
        &self,
        now: Instant,
        idle_for: Duration,
        busy_elsewhere: bool,
    ) -> Option<Arc<Session>> {
        let mut current = self.lock_current();
        let session = current.as_ref()?;
        let held = Arc::strong_count(session) > 1;
        // Pairs with the release of a dropped reference: what its holder did is seen here.
        std::sync::atomic::fence(Ordering::Acquire);
        if held || busy_elsewhere || !session.is_idle() {
            *self.lock_last_used() = now;
            return None;
        }
        if now.saturating_duration_since(*self.lock_last_used()) < idle_for {
            return None;
        }
        current.take()
    }

    /// The loading lock, unless a load is under way (then the session is in use anyway).
    /// Held while an unloaded session stops, so a request for it waits, then loads it again
    /// from a file nothing else writes to any more.
    fn lock_loading(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        self.loading.try_lock().ok()
    }

    fn touch(&self) {
        *self.lock_last_used() = Instant::now();
    }

    fn lock_current(&self) -> MutexGuard<'_, Option<Arc<Session>>> {
        // Only ever replaced whole under this lock: a poisoned value is still consistent.
        self.current
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lock_last_used(&self) -> MutexGuard<'_, Instant> {
        self.last_used
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl SessionManager {
    /// Start the task that unloads idle sessions: owned by the manager's tracker, it stops
    /// when the manager shuts down (or is dropped).
    pub fn start_evictor(self: &Arc<Self>) {
        let manager = Arc::downgrade(self);
        let stop = self.evictor_stop.clone();
        let idle_for = self.idle_unload_after();
        self.tasks.spawn(async move {
            let mut ticks = tokio::time::interval(sweep_period(idle_for));
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = ticks.tick() => {}
                }
                let Some(manager) = manager.upgrade() else {
                    return;
                };
                // The idle time is the configuration's now (a reload applies at the next sweep;
                // the sweep period stays the start's).
                manager.unload_idle(manager.idle_unload_after()).await;
                if let Err(err) = manager.summaries.flush().await {
                    tracing::warn!("cannot write the session index: {err:#}");
                }
            }
        });
    }

    /// Sessions loaded in memory now.
    pub fn loaded_count(&self) -> usize {
        self.read_slots()
            .values()
            .filter(|slot| slot.loaded.is_loaded())
            .count()
    }

    /// The configured idle time, or the default when the configuration is unusable.
    fn idle_unload_after(&self) -> Duration {
        self.deps.config.snapshot().map_or(
            Duration::from_secs(crate::config::DEFAULT_SESSION_IDLE_UNLOAD_SECS),
            |config| config.session_idle_unload,
        )
    }

    /// Unload every session idle for `idle_for`; its summary goes to the listing index.
    async fn unload_idle(&self, idle_for: Duration) {
        let slots: Vec<Arc<Slot>> = self.read_slots().values().cloned().collect();
        let now = Instant::now();
        for slot in slots {
            if slot.deleted.load(Ordering::Acquire) || !slot.loaded.is_loaded() {
                continue;
            }
            let id = slot.header.id.as_str();
            let waiting_approval = !self.deps.approvals.list(Some(id)).is_empty();
            let Some(_loading) = slot.loaded.lock_loading() else {
                continue;
            };
            let Some(session) = slot.loaded.take_if_idle(now, idle_for, waiting_approval) else {
                continue;
            };
            // Its actor and log writer stop (what was queued is written) before anyone may
            // load it again: two writers never append to one file. Then the file is final
            // and its stamp goes into the index.
            session.close_and_wait().await;
            self.remember_summary(&session).await;
            session.log.announce_unloaded();
            drop(session);
            tracing::debug!(session = id, "unloaded an idle session");
        }
    }
}

impl SessionManager {
    /// Put what the listing shows of `session` (closed, nothing writes to it any more) into
    /// the index, stamped with its file as it is now.
    pub(super) async fn remember_summary(&self, session: &Session) {
        let id = session.id();
        let (last_seq, usage) = (session.log.last_seq(), session.shared.lock().usage);
        let (preview, settings) = (session.preview(), Some(session.settings()));
        let path = crate::store::session_path(&self.deps.paths.sessions_dir, id);
        match tokio::task::spawn_blocking(move || FileStamp::of_path(&path)).await {
            Ok(Ok(stamp)) => self.summaries.insert(
                id,
                SummaryEntry {
                    stamp,
                    last_seq,
                    usage,
                    preview,
                    settings,
                },
            ),
            Ok(Err(err)) => tracing::debug!(session = id, "no summary kept: {err:#}"),
            Err(err) => tracing::debug!(session = id, "no summary kept: {err}"),
        }
    }
}

/// Sweep often enough that a session goes soon after its idle time.
fn sweep_period(idle_for: Duration) -> Duration {
    (idle_for / 4).clamp(MIN_SWEEP_PERIOD, MAX_SWEEP_PERIOD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_are_neither_tight_nor_rare() {
        assert_eq!(
            sweep_period(Duration::from_secs(1)),
            Duration::from_millis(250)
        );
        assert_eq!(sweep_period(Duration::from_millis(1)), MIN_SWEEP_PERIOD);
        assert_eq!(sweep_period(Duration::from_secs(600)), MAX_SWEEP_PERIOD);
    }
}
