//! Who may answer an approval right now: a count of live subscriptions whose client declared
//! `capabilities.approvals` in `initialize`. Each such subscription holds an `AnswererGuard`
//! from before its subscribe call is answered until it ends (unsubscribe, connection close, a
//! subscriber dropped for not reading), so the count is exact whichever way it ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A shared count of answering subscriptions: one per session (`session/subscribe`) and one for
/// the daemon-wide stream (`daemon/subscribe`). Cloning shares the count.
#[derive(Clone, Debug, Default)]
pub struct Answerers {
    count: Arc<AtomicUsize>,
}

/// One answering subscription, counted while the guard lives.
#[derive(Debug)]
pub struct AnswererGuard {
    count: Arc<AtomicUsize>,
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
}

impl Drop for AnswererGuard {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
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
}
