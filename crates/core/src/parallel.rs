//! Blocking work over many independent items spread over a few threads: reading thousands of
//! session files at start or for a listing, where one thread waits on each file in turn.

/// Items per thread below which spreading the work costs more than it saves.
const MIN_ITEMS_PER_THREAD: usize = 64;
/// Threads at most, whatever the machine has: the work is file reads, and the daemon's
/// runtime needs the cores too.
const MAX_THREADS: usize = 4;

/// `f` of every item, in the items' order, computed on up to [`MAX_THREADS`] scoped threads
/// (this one among them). Blocking: call from a blocking context. A panic in `f` is passed on.
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
    let mut chunks: Vec<Vec<T>> = Vec::with_capacity(threads);
    let mut items = items.into_iter();
    for _ in 0..threads {
        chunks.push(items.by_ref().take(per_thread).collect());
    }
    let f = &f;
    std::thread::scope(|scope| {
        let mut chunks = chunks.into_iter();
        let first = chunks.next().unwrap_or_default();
        let others: Vec<_> = chunks
            .map(|chunk| scope.spawn(move || chunk.into_iter().map(f).collect::<Vec<R>>()))
            .collect();
        let mut results: Vec<R> = first.into_iter().map(f).collect();
        for other in others {
            match other.join() {
                Ok(part) => results.extend(part),
                Err(payload) => std::panic::resume_unwind(payload),
            }
        }
        results
    })
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
