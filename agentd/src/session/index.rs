//! The listing index: what `session/list` shows of a session that is not loaded (last seq,
//! usage), kept in memory and in `sessions/index.json` so listing never re-reads session files.
//! An entry is valid while its file's length and mtime are those recorded; at startup stale or
//! missing entries are dropped and re-summarised from the files when first listed. The file is
//! written whole (`atomic_file::replace_atomically`) by one writer at a time.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::{SessionManager, Slot, header_info};
use agentd_core::conversation::Usage;
use protocol::session::SessionInfo;

/// The index file's name in the sessions dir (not `*.jsonl`, so never taken for a session).
pub const INDEX_FILE: &str = "index.json";
/// Format version of the index file; another version is ignored and rebuilt (2: entries carry
/// the first prompt's preview and the settings `session/update` left).
const INDEX_VERSION: u32 = 2;
/// A larger index file is not read (it cannot be ours): rebuilt from the session files.
const MAX_INDEX_BYTES: u64 = 256 * 1024 * 1024;

/// Which version of a session file an entry describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileStamp {
    pub len: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub modified_ns: u64,
}

/// What the listing shows of a session that is not loaded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryEntry {
    pub stamp: FileStamp,
    pub last_seq: u64,
    pub usage: Usage,
    /// The first prompt's preview.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    /// The settings `session/update` left (absent in entries of older daemons: the header's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<crate::store::SessionSettings>,
}

/// Summaries of sessions, by id.
pub struct SummaryIndex {
    path: PathBuf,
    entries: Mutex<HashMap<String, SummaryEntry>>,
    /// Entries changed since the file was last written.
    dirty: AtomicBool,
    /// One writer of the file at a time.
    writing: tokio::sync::Mutex<()>,
}

/// Sessions in listing order (newest first, then by id), kept until a session comes or goes.
#[derive(Default)]
pub struct ListingOrder {
    cached: Mutex<Option<Arc<Ordered>>>,
}

/// One listing order and where each id is in it (cursors).
pub struct Ordered {
    pub slots: Vec<Arc<Slot>>,
    positions: HashMap<String, usize>,
}

/// `index.json` as written.
#[derive(Serialize, Deserialize)]
struct IndexFile {
    version: u32,
    sessions: HashMap<String, SummaryEntry>,
}

impl FileStamp {
    pub fn of(metadata: &std::fs::Metadata) -> FileStamp {
        let modified_ns = metadata
            .modified()
            .ok()
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        FileStamp {
            len: metadata.len(),
            modified_ns,
        }
    }

    /// The stamp of the file at `path` now. Blocking.
    pub fn of_path(path: &Path) -> Result<FileStamp> {
        let metadata = std::fs::symlink_metadata(path)
            .with_context(|| format!("cannot stat {}", path.display()))?;
        Ok(FileStamp::of(&metadata))
    }

    pub fn modified(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_nanos(self.modified_ns)
    }
}

impl SummaryIndex {
    /// Read the index of `sessions_dir`, keeping only entries of `files` whose stamp still
    /// matches (a newer file is re-summarised later). A missing or unreadable index is empty.
    /// Blocking.
    pub fn load(sessions_dir: &Path, files: &[(String, FileStamp)]) -> SummaryIndex {
        let path = sessions_dir.join(INDEX_FILE);
        remove_stale_temps(sessions_dir);
        let stored = match read_index(&path) {
            Ok(stored) => stored,
            Err(err) => {
                tracing::info!("rebuilding the session index: {err:#}");
                HashMap::new()
            }
        };
        let mut entries = HashMap::with_capacity(files.len());
        for (id, stamp) in files {
            if let Some(entry) = stored.get(id).filter(|entry| entry.stamp == *stamp) {
                entries.insert(id.clone(), entry.clone());
            }
        }
        let dirty = entries.len() != stored.len() || entries.len() != files.len();
        SummaryIndex {
            path,
            entries: Mutex::new(entries),
            dirty: AtomicBool::new(dirty),
            writing: tokio::sync::Mutex::new(()),
        }
    }

    pub fn get(&self, id: &str) -> Option<SummaryEntry> {
        self.lock_entries().get(id).cloned()
    }

    pub fn insert(&self, id: &str, entry: SummaryEntry) {
        self.lock_entries().insert(id.to_owned(), entry);
        self.dirty.store(true, Ordering::Release);
    }

    pub fn remove(&self, id: &str) {
        if self.lock_entries().remove(id).is_some() {
            self.dirty.store(true, Ordering::Release);
        }
    }

    /// Write the index file if entries changed since the last write.
    pub async fn flush(&self) -> Result<()> {
        let _writing = self.writing.lock().await;
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let file = IndexFile {
            version: INDEX_VERSION,
            sessions: self.lock_entries().clone(),
        };
        let path = self.path.clone();
        let written = tokio::task::spawn_blocking(move || write_index(&path, &file))
            .await
            .context("index writer task failed")
            .and_then(|written| written);
        if written.is_err() {
            // Try again at the next flush.
            self.dirty.store(true, Ordering::Release);
        }
        written
    }

    fn lock_entries(&self) -> MutexGuard<'_, HashMap<String, SummaryEntry>> {
        // Entries are replaced whole under this lock: a poisoned map is still consistent.
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl ListingOrder {
    /// Forget the order; call after every insert into or removal from the slots.
    pub fn invalidate(&self) {
        *self.lock() = None;
    }

    fn lock(&self) -> MutexGuard<'_, Option<Arc<Ordered>>> {
        // Replaced whole under this lock: a poisoned value is still consistent.
        self.cached
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Ordered {
    pub fn position(&self, id: &str) -> Option<usize> {
        self.positions.get(id).copied()
    }
}

impl SessionManager {
    /// The listing order, sorted now if sessions came or went since the last listing. Built
    /// and stored under the slots' read lock, so an insert or removal (under the write lock,
    /// then `invalidate`) is never missed.
    pub(super) fn listing_order(&self) -> Arc<Ordered> {
        if let Some(order) = self.listing.lock().clone() {
            return order;
        }
        let slots_by_id = self.read_slots();
        let mut slots: Vec<Arc<Slot>> = slots_by_id.values().cloned().collect();
        slots.sort_by(|a, b| {
            b.header
                .created_at
                .cmp(&a.header.created_at)
                .then_with(|| b.header.id.cmp(&a.header.id))
        });
        let positions = slots
            .iter()
            .enumerate()
            .map(|(position, slot)| (slot.header.id.clone(), position))
            .collect();
        let order = Arc::new(Ordered { slots, positions });
        *self.listing.lock() = Some(order.clone());
        drop(slots_by_id);
        order
    }

    /// A page of sessions as listed: loaded ones from memory, the others from the index.
    /// Sessions the index does not know yet are summarised from their files in one blocking
    /// pass (the end of the file; the whole file only when the end does not tell), and
    /// remembered: each file is read at most once while the daemon runs.
    pub(super) async fn infos_of(&self, page: &[std::sync::Arc<Slot>]) -> Vec<SessionInfo> {
        let mut infos = Vec::with_capacity(page.len());
        let mut unknown = Vec::new();
        for slot in page {
            if let Some(session) = slot.loaded.get() {
                infos.push(Some(session.info()));
            } else if let Some(entry) = self.summaries.get(&slot.header.id) {
                infos.push(Some(listed(slot, &entry)));
            } else {
                infos.push(None);
                unknown.push(slot.header.id.clone());
            }
        }
        if !unknown.is_empty() {
            let dir = self.deps.paths.sessions_dir.clone();
            let summarised = tokio::task::spawn_blocking(move || {
                agentd_core::parallel::map(unknown, |id| {
                    let summary = summarise(&crate::store::session_path(&dir, &id));
                    (id, summary)
                })
            })
            .await
            .unwrap_or_default();
            for (id, summary) in summarised {
                match summary {
                    Ok(entry) => self.summaries.insert(&id, entry),
                    Err(err) => tracing::warn!(session = %id, "cannot summarise session: {err:#}"),
                }
            }
        }
        page.iter()
            .zip(infos)
            .map(|(slot, info)| {
                info.unwrap_or_else(|| match self.summaries.get(&slot.header.id) {
                    Some(entry) => listed(slot, &entry),
                    None => header_info(&slot.header, slot.file_updated_at),
                })
            })
            .collect()
    }
}

/// A session not loaded, as listed from its summary.
pub(super) fn listed(slot: &Slot, entry: &SummaryEntry) -> SessionInfo {
    let mut info = header_info(&slot.header, Some(entry.stamp.modified()));
    info.last_seq = entry.last_seq;
    info.usage = agentd_core::conversation::wire::usage(&entry.usage);
    info.preview.clone_from(&entry.preview);
    if let Some(settings) = &entry.settings {
        info.provider.clone_from(&settings.provider);
        info.model.clone_from(&settings.model);
        info.permission_mode = settings.permission_mode;
        info.title.clone_from(&settings.title);
    }
    info
}

/// The summary of the session file at `path`, stamped with the file it was read from. Blocking.
fn summarise(path: &Path) -> Result<SummaryEntry> {
    let stamp = FileStamp::of_path(path)?;
    let (last_seq, usage) = match crate::store::read_summary(path)? {
        Some(summary) => (summary.last_seq, summary.usage),
        None => {
            let loaded = crate::store::load(path)?;
            (loaded.last_seq, loaded.usage)
        }
    };
    let (preview, settings) = crate::store::read_listing_facts(path)?;
    Ok(SummaryEntry {
        stamp,
        last_seq,
        usage,
        preview,
        settings: Some(settings),
    })
}

/// Read `index.json`: a regular file only, opened without blocking (a FIFO put there must not
/// hang the daemon), of bounded size, of our version. Blocking.
fn read_index(path: &Path) -> Result<HashMap<String, SummaryEntry>> {
    use std::io::Read;
    let file = agentd_core::regular_file::open(path)?;
    let metadata = file
        .metadata()
        .with_context(|| format!("cannot inspect {}", path.display()))?;
    anyhow::ensure!(
        metadata.len() <= MAX_INDEX_BYTES,
        "{} is too large",
        path.display()
    );
    let mut text = Vec::with_capacity(metadata.len() as usize);
    file.take(MAX_INDEX_BYTES).read_to_end(&mut text)?;
    let index: IndexFile = serde_json::from_slice(&text)
        .with_context(|| format!("{} does not parse", path.display()))?;
    anyhow::ensure!(
        index.version == INDEX_VERSION,
        "{} has version {}, not {INDEX_VERSION}",
        path.display(),
        index.version
    );
    Ok(index.sessions)
}

/// Remove temp files a writer left when the daemon died mid-write. Blocking.
fn remove_stale_temps(sessions_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(sessions_dir) else {
        return;
    };
    let prefix = format!(".{INDEX_FILE}.");
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Replace `index.json` atomically (`atomic_file`). Blocking.
fn write_index(path: &Path, index: &IndexFile) -> Result<()> {
    let bytes = serde_json::to_vec(index).context("cannot encode the session index")?;
    agentd_core::atomic_file::replace_atomically(path, &bytes, 0o600)
        .with_context(|| format!("cannot replace {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(len: u64, last_seq: u64) -> SummaryEntry {
        SummaryEntry {
            stamp: FileStamp {
                len,
                modified_ns: 7,
            },
            last_seq,
            usage: Usage::default(),
            preview: None,
            settings: None,
        }
    }

    #[tokio::test]
    async fn entries_survive_a_write_and_stale_ones_are_dropped_on_load() {
        let dir = tempfile::tempdir().unwrap();
        let index = SummaryIndex::load(dir.path(), &[]);
        index.insert("a", entry(10, 1));
        index.insert("b", entry(20, 2));
        index.insert("gone", entry(30, 3));
        index.flush().await.unwrap();
        assert!(!index.dirty.load(Ordering::Acquire));

        // "b" grew since; "gone" has no file any more; "c" was never summarised.
        let files = [
            ("a".to_owned(), entry(10, 0).stamp),
            ("b".to_owned(), entry(25, 0).stamp),
            ("c".to_owned(), entry(5, 0).stamp),
        ];
        let reloaded = SummaryIndex::load(dir.path(), &files);
        assert_eq!(reloaded.get("a"), Some(entry(10, 1)));
        assert_eq!(reloaded.get("b"), None);
        assert_eq!(reloaded.get("gone"), None);
        assert!(reloaded.dirty.load(Ordering::Acquire));
        // No temp file is left behind.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec![INDEX_FILE.to_owned()]);

        // A temp file left by a writer that died is removed at the next load.
        let stale = dir.path().join(format!(".{INDEX_FILE}.dead"));
        std::fs::write(&stale, "{").unwrap();
        SummaryIndex::load(dir.path(), &files);
        assert!(!stale.exists());
    }

    #[test]
    fn a_corrupt_index_or_a_fifo_is_rebuilt_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(INDEX_FILE), "{not json").unwrap();
        let files = [("a".to_owned(), entry(10, 0).stamp)];
        assert_eq!(SummaryIndex::load(dir.path(), &files).get("a"), None);

        std::fs::remove_file(dir.path().join(INDEX_FILE)).unwrap();
        agentd_core::test_support::mkfifo(&dir.path().join(INDEX_FILE));
        assert_eq!(SummaryIndex::load(dir.path(), &files).get("a"), None);
    }
}
