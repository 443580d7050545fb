//! Task records on disk: one JSON file per task under `<state>/tasks/` (the dir 0700, files
//! 0600), each replaced whole (`atomic_file`). A file is a [`TaskRecord`]'s fields with the
//! format's `version` beside them; a file without one is format 1 (written before records had
//! a version), a file of a newer format is refused ([`NewerRecordFormat`]) and left alone. Read
//! once at startup; the manager keeps every record in memory afterwards. All functions here
//! block.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::TaskRecord;

/// The format of the record files this daemon writes (`version` in each). A file of a higher
/// version is refused on load, never read as if it were this one.
pub const RECORD_FORMAT_VERSION: u32 = 1;

/// Suffix of a task record's file.
const RECORD_SUFFIX: &str = ".json";
/// Prefix of the temp files writes went through before `atomic_file` (a leftover one is
/// removed at load, as the writer's own temp files are).
const OLD_TEMP_PREFIX: &str = ".tmp.";
/// A record bigger than this is not a task record (results are capped well below it).
pub const MAX_RECORD_BYTES: usize = 4 * 1024 * 1024;

/// What `load_records` found.
#[derive(Debug, Default)]
pub struct Loaded {
    pub records: Vec<TaskRecord>,
    /// Files that could not be read as records (kept on disk, logged).
    pub unreadable: Vec<(PathBuf, String)>,
}

/// Creates the tasks dir (0700) and reads every record in it, oldest first. Temp files a
/// writer left behind are removed.
pub fn load_records(dir: &Path) -> Result<Loaded> {
    agentd_core::paths::prepare_private_dir(dir)?;
    let mut loaded = Loaded::default();
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if name.starts_with(OLD_TEMP_PREFIX) || agentd_core::atomic_file::is_temp_name(&name) {
            let _ = std::fs::remove_file(&path);
            continue;
        }
        if !name.starts_with("task_") || !name.ends_with(RECORD_SUFFIX) {
            continue;
        }
        match read_record(&path) {
            Ok(record) => loaded.records.push(record),
            Err(err) => loaded.unreadable.push((path, format!("{err:#}"))),
        }
    }
    loaded.records.sort_by(|a, b| {
        (a.created_at.as_str(), a.task_id.as_str()).cmp(&(b.created_at.as_str(), &b.task_id))
    });
    Ok(loaded)
}

/// Replaces the record of `record.task_id` atomically.
pub fn write_record(dir: &Path, record: &TaskRecord) -> Result<()> {
    let path = record_path(dir, &record.task_id);
    let bytes = encode_record(record)?;
    if let Some(fault) = agentd_core::test_seam::task_write_fault(&bytes) {
        return Err(fault).with_context(|| format!("cannot replace {}", path.display()));
    }
    agentd_core::atomic_file::replace_atomically(&path, &bytes, 0o600)
        .with_context(|| format!("cannot replace {}", path.display()))
}

/// A record's file content: its fields and the format's version.
pub fn encode_record(record: &TaskRecord) -> Result<Vec<u8>> {
    let file = RecordFile {
        version: RECORD_FORMAT_VERSION,
        record,
    };
    serde_json::to_vec(&file).context("cannot encode the task record")
}

/// A record file written in a format newer than [`RECORD_FORMAT_VERSION`], by a newer agentd.
#[derive(Debug, thiserror::Error)]
#[error(
    "{} is in task record format {version}, written by a newer agentd; this daemon reads format {RECORD_FORMAT_VERSION} and older, so it leaves the task alone: upgrade agentd to see it",
    path.display()
)]
pub struct NewerRecordFormat {
    pub path: PathBuf,
    pub version: u32,
}

/// Where the record of `task_id` is kept.
pub fn record_path(dir: &Path, task_id: &str) -> PathBuf {
    dir.join(format!("{task_id}{RECORD_SUFFIX}"))
}

/// What a record file holds: the format's version, then the record's fields.
#[derive(Serialize)]
struct RecordFile<'a> {
    version: u32,
    #[serde(flatten)]
    record: &'a TaskRecord,
}

/// The format version of a record file, read before the record (a file without one is
/// format 1).
#[derive(Deserialize)]
struct RecordVersion {
    #[serde(default = "first_format")]
    version: u32,
}

fn first_format() -> u32 {
    1
}

fn read_record(path: &Path) -> Result<TaskRecord> {
    use std::io::Read;
    let file = agentd_core::regular_file::open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_RECORD_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    anyhow::ensure!(
        bytes.len() <= MAX_RECORD_BYTES,
        "{} is bigger than {MAX_RECORD_BYTES} bytes",
        path.display()
    );
    let not_a_record = || format!("{} is not a task record", path.display());
    let RecordVersion { version } = serde_json::from_slice(&bytes).with_context(not_a_record)?;
    if version > RECORD_FORMAT_VERSION {
        return Err(NewerRecordFormat {
            path: path.to_path_buf(),
            version,
        }
        .into());
    }
    serde_json::from_slice(&bytes).with_context(not_a_record)
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
