//! Allocator settings that make memory go back to the system after a burst of big messages.
//!
//! glibc serves a large allocation with its own mapping, returned at `free`, but it raises that
//! threshold to the size of every such block freed (up to 32 MiB): after one 15 MiB request,
//! later big buffers come from the heap arenas and stay with the process after they are freed.
//! A fixed threshold keeps every big buffer (a long line, its parsed params, a long reply) in
//! its own mapping, so the memory of a burst is given back when it ends.

/// Allocations at least this big get their own mapping (returned to the system when freed);
/// fixed, so glibc does not raise it after the first big message.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD_BYTES: libc::c_int = 256 * 1024;

/// Apply the settings; call once, early at startup.
pub fn configure() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes allocator tuning (under glibc's own lock); it has no
        // memory-safety preconditions.
        let applied = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) };
        if applied != 1 {
            tracing::debug!("the allocator did not take a fixed mmap threshold");
        }
    }
}
