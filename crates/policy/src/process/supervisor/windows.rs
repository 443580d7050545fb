//! Windows: each child's Job Object (kill-on-close, see `process::platform`) ends its whole
//! tree when the child is dropped or the daemon is gone, so nothing is recorded, scanned or
//! reaped here.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio_util::sync::CancellationToken;

use super::MARKER_VAR;

/// Numbers the processes started by this daemon, for their markers.
static NEXT_SPAWN: AtomicU64 = AtomicU64::new(1);

/// Nothing to set up: a previous daemon's children died with its job handles. Returns 0
/// (processes killed).
pub fn install(_state_dir: &Path, _socket: &Path) -> io::Result<usize> {
    Ok(0)
}

/// A new marker entry (`AGENTD_PROCESS=pid<daemon>.<n>`) for a process about to be started:
/// kept so tools see the same variable on every platform.
pub(crate) fn new_marker() -> (String, String) {
    let spawn = NEXT_SPAWN.fetch_add(1, Ordering::Relaxed);
    (
        MARKER_VAR.to_owned(),
        format!("pid{}.{spawn}", std::process::id()),
    )
}

/// No orphans to reap: waits for `stop`.
pub async fn reap_orphans(stop: CancellationToken) {
    stop.cancelled().await;
}
