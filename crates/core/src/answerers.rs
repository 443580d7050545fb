//! Who may answer an approval right now: a count of live subscriptions whose client declared
//! `capabilities.approvals` in `initialize`. Each such subscription holds an `AnswererGuard`
//! from before its subscribe call is answered until it ends (unsubscribe, connection close, a
//! subscriber dropped for not reading), so the count is exact whichever way it ends. A waiter
//! can also learn when the last one has gone (`Answerers::all_left`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

/// A shared count of answering subscriptions: one per session (`session/subscribe`) and one for
/// the daemon-wide stream (`daemon/subscribe`). Cloning shares the count.
#[derive(Clone, Debug, Default)]
pub struct Answerers {
    count: Arc<AtomicUsize>,
    /// Woken whenever an answering subscription ends.
    left: Arc<Notify>,
}

/// One answering subscription, counted while the guard lives.
#[derive(Debug)]
pub struct AnswererGuard {
    count: Arc<AtomicUsize>,
    left: Arc<Notify>,
}

impl Answerers {
    pub fn new() -> Answerers {
        Answerers::default()
    }

    /// Count one more answering subscription until the returned guard is dropped.
    pub fn join(&self) -> AnswererGuard {
        self.count.fetch_add(1, Ordering::AcqRel);
        AnswererGuard {
            count: self.count.clone(),
            left: self.left.clone(),
        }
    }

    /// Answering subscriptions now.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Whether at least one answering subscription is live.
    pub fn any(&self) -> bool {
        self.count() > 0
    }

    /// Resolves once none of `counts` has an answering subscription (at once if none has).
    pub async fn all_left(counts: Vec<Answerers>) {
        loop {
            // Registered before the counts are read, so an end in between is not missed.
            let mut ended: Vec<_> = counts
                .iter()
                .map(|answerers| Box::pin(answerers.left.notified()))
                .collect();
            for notified in &mut ended {
                notified.as_mut().enable();
            }
            if !counts.iter().any(|answerers| answerers.any()) {
                return;
            }
            futures::future::select_all(ended).await;
        }
    }
}

impl Drop for AnswererGuard {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
        self.left.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_follows_the_guards_and_clones_share_it() {
        let answerers = Answerers::new();
        assert!(!answerers.any());
        let shared = answerers.clone();
        let first = answerers.join();
        let second = shared.join();
        assert_eq!(answerers.count(), 2);
        drop(first);
        assert_eq!(shared.count(), 1);
        assert!(answerers.any());
        drop(second);
        assert_eq!(answerers.count(), 0);
        assert!(!shared.any());
    }

    #[tokio::test]
    async fn all_left_waits_for_the_last_guard_of_every_count() {
        let own = Answerers::new();
        let parent = Answerers::new();
        Answerers::all_left(vec![own.clone(), parent.clone()]).await;
        let first = own.join();
        let second = parent.join();
        let mut waiting = std::pin::pin!(Answerers::all_left(vec![own.clone(), parent.clone()]));
        assert!(futures::poll!(waiting.as_mut()).is_pending());
        drop(first);
        assert!(futures::poll!(waiting.as_mut()).is_pending());
        drop(second);
        assert!(futures::poll!(waiting.as_mut()).is_ready());
    }
}
