//! A global allocator that counts what it hands out, for the deterministic performance guard
//! (`tests/perf/main.rs`): the calls that return memory (`alloc`, `alloc_zeroed`, `realloc`)
//! and the bytes they asked for (a `realloc` counts what it grows by), and the bytes held now
//! (allocated minus freed, by counted threads). Threads that called
//! [`exclude_this_thread`] are not counted: the guard hosts the daemon in its own process, and
//! its own side (the client, the mock LLM) must not count as the daemon's work.
//!
//! Only a binary that declares `#[global_allocator] static A: CountingAllocator = …;` counts;
//! elsewhere the type is unused.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// The system allocator, counting.
pub struct CountingAllocator;

/// Allocations since the process started, of every counted thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Calls that returned memory.
    pub allocations: u64,
    /// Bytes those calls asked for.
    pub bytes: u64,
    /// Bytes held: allocated minus freed by counted threads (memory handed between a counted
    /// and an uncounted thread makes it drift; the guard's daemon shares none with its client).
    pub live: i64,
}

impl Counts {
    /// What was allocated from `earlier` to `self`.
    pub fn since(self, earlier: Counts) -> Counts {
        Counts {
            allocations: self.allocations - earlier.allocations,
            bytes: self.bytes - earlier.bytes,
            live: self.live - earlier.live,
        }
    }
}

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicI64 = AtomicI64::new(0);

thread_local! {
    /// Set on threads whose allocations are not counted. A const-initialised `Cell<bool>` has
    /// no destructor, so reading it never allocates (which would recurse into the allocator).
    static EXCLUDED: Cell<bool> = const { Cell::new(false) };
}

/// The counts so far.
pub fn counts() -> Counts {
    Counts {
        allocations: ALLOCATIONS.load(Ordering::SeqCst),
        bytes: BYTES.load(Ordering::SeqCst),
        live: LIVE.load(Ordering::SeqCst),
    }
}

/// From now on, allocations of the calling thread are not counted.
pub fn exclude_this_thread() {
    EXCLUDED.with(|excluded| excluded.set(true));
}

fn counted() -> bool {
    // A thread being torn down may have lost its locals: it counts, as it is nobody's side.
    !EXCLUDED.try_with(Cell::get).unwrap_or(false)
}

fn count(bytes: usize) {
    if !counted() {
        return;
    }
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
    LIVE.fetch_add(bytes as i64, Ordering::Relaxed);
}

fn count_free(bytes: usize) {
    if counted() {
        LIVE.fetch_sub(bytes as i64, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded unchanged to the system allocator; counting touches only
// atomics and a destructor-free thread local, and never allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller's contract for `alloc` is passed on as it is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count_free(layout.size());
        // SAFETY: `ptr` came from this allocator, that is from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size.saturating_sub(layout.size()));
        count_free(layout.size().saturating_sub(new_size));
        // SAFETY: as for `dealloc`; `new_size` is the caller's, checked by its contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
