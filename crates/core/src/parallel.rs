//! Blocking work over many independent items spread over a few threads: reading thousands of
//! session files at start or for a listing, where one thread waits on each file in turn.

use std::sync::{Mutex, PoisonError};

/// Items per thread below which spreading the work costs more than it saves.
const MIN_ITEMS_PER_THREAD: usize = 64;
/// Threads at most, whatever the machine has: the work is file reads, and the daemon's
/// runtime needs the cores too.
const MAX_THREADS: usize = 4;

/// `f` of every item, in the items' order, computed on up to [`MAX_THREADS`] scoped threads
/// (this one among them). Blocking: call from a blocking context. A panic in `f` is passed on.
/// A thread the system refuses (a process or thread limit) leaves its share to this one: the
/// work is slower, never lost.
pub fn map<T, R, F>(items: Vec<T>, f: F) -> Vec<R>
where
    T: Send,
    R: Send,
    F: Fn(T) -> R + Sync,
{
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let threads = cores
        .min(MAX_THREADS)
        .min(items.len() / MIN_ITEMS_PER_THREAD)
        .max(1);
    if threads == 1 {
        return items.into_iter().map(f).collect();
    }
    let per_thread = items.len().div_ceil(threads);
    let mut items = items.into_iter();
    let first: Vec<T> = items.by_ref().take(per_thread).collect();
    // Each other share waits in its slot until its thread takes it: a thread the system refuses
    // leaves its share there for this one.
    let shares: Vec<Mutex<Vec<T>>> = (1..threads)
        .map(|_| Mutex::new(items.by_ref().take(per_thread).collect()))
        .collect();
    let f = &f;
    std::thread::scope(|scope| {
        let others: Vec<_> = shares
            .iter()
            .map(|share| {
                let spawned = std::thread::Builder::new().spawn_scoped(scope, move || {
                    take(share).into_iter().map(f).collect::<Vec<R>>()
                });
                (share, spawned.ok())
            })
            .collect();
        let mut results: Vec<R> = first.into_iter().map(f).collect();
        for (share, thread) in others {
            match thread.map(std::thread::ScopedJoinHandle::join) {
                Some(Ok(part)) => results.extend(part),
                Some(Err(payload)) => std::panic::resume_unwind(payload),
                None => results.extend(take(share).into_iter().map(f)),
            }
        }
        results
    })
}

/// The share in `slot`, leaving it empty.
fn take<T>(slot: &Mutex<Vec<T>>) -> Vec<T> {
    std::mem::take(&mut *slot.lock().unwrap_or_else(PoisonError::into_inner))
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_the_items_order_however_many_threads() {
        for count in [0, 1, 63, 64, 200, 1001] {
            let items: Vec<usize> = (0..count).collect();
            let doubled = super::map(items, |i| i * 2);
            assert_eq!(doubled, (0..count).map(|i| i * 2).collect::<Vec<_>>());
        }
    }
}
