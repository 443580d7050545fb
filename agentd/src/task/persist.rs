//! How a task's record reaches the disk: one write at a time per task (striped locks), a
//! write with nothing new skipped, the file replaced whole on the blocking pool, and a task's
//! end retried a few times before it is announced without being on disk.

use super::{TaskManager, store};

/// Waits between the attempts to write a task's end: four attempts within about a second,
/// enough to ride out a moment's trouble of the disk, short enough for a shutdown.
pub const FINAL_WRITE_RETRY_DELAYS: [std::time::Duration; 3] = [
    std::time::Duration::from_millis(50),
    std::time::Duration::from_millis(200),
    std::time::Duration::from_millis(800),
];

/// Calls `write` until it succeeds, once more after each of `delays`; the last error.
pub(super) async fn write_with_retries<F, Fut>(
    delays: &[std::time::Duration],
    mut write: F,
) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let mut result = write().await;
    for delay in delays {
        if result.is_ok() {
            break;
        }
        tokio::time::sleep(*delay).await;
        result = write().await;
    }
    result
}

impl TaskManager {
    /// Writes the current record of `task_id` (the latest one wins whatever the order of
    /// concurrent updates: the record is read under the write lock).
    pub(super) async fn persist(&self, task_id: &str) -> Result<(), String> {
        let stripe = task_id.bytes().fold(0usize, |hash, byte| {
            hash.wrapping_mul(31).wrapping_add(usize::from(byte))
        }) % self.writes.len().max(1);
        let Some(lock) = self.writes.get(stripe) else {
            return Err("no record writer".to_owned());
        };
        let _writing = lock.lock().await;
        let (record, version) = {
            let records = self.lock();
            let Some(record) = records.by_id.get(task_id) else {
                return Ok(());
            };
            let versions = records.versions.get(task_id).copied().unwrap_or_default();
            if versions.changed > 0 && versions.written >= versions.changed {
                // An earlier write (this stripe's lock held it) took every change in.
                return Ok(());
            }
            (record.clone(), versions.changed)
        };
        let dir = self.dir.clone();
        let finished = record.status.is_finished();
        tokio::task::spawn_blocking(move || store::write_record(&dir, &record))
            .await
            .map_err(|err| format!("the writer stopped: {err}"))?
            .map_err(|err| format!("{err:#}"))?;
        let mut records = self.lock();
        if let Some(versions) = records.versions.get_mut(task_id) {
            versions.written = versions.written.max(version);
            if finished && versions.written >= versions.changed {
                records.versions.remove(task_id);
            }
        }
        Ok(())
    }
}
