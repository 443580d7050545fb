//! Task records on disk: one JSON file per task under `<state>/tasks/` (the dir 0700, files
//! 0600), each replaced whole (unique temp file, fsync, rename, directory fsync). Read once at
//! startup; the manager keeps every record in memory afterwards. All functions here block.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use protocol::task::TaskInfo;

/// Suffix of a task record's file.
const RECORD_SUFFIX: &str = ".json";
/// Prefix of the temp files a write goes through (a leftover one is removed at load).
const TEMP_PREFIX: &str = ".tmp.";
/// A record bigger than this is not a task record (results are capped well below it).
pub const MAX_RECORD_BYTES: usize = 4 * 1024 * 1024;

/// What `load_records` found.
#[derive(Debug, Default)]
pub struct Loaded {
    pub records: Vec<TaskInfo>,
    /// Files that could not be read as records (kept on disk, logged).
    pub unreadable: Vec<(PathBuf, String)>,
}

/// Creates the tasks dir (0700) and reads every record in it, oldest first. Temp files a
/// writer left behind are removed.
pub fn load_records(dir: &Path) -> Result<Loaded> {
    crate::paths::prepare_private_dir(dir)?;
    let mut loaded = Loaded::default();
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if name.starts_with(TEMP_PREFIX) {
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
pub fn write_record(dir: &Path, record: &TaskInfo) -> Result<()> {
    let path = record_path(dir, &record.task_id);
    let bytes = serde_json::to_vec(record).context("cannot encode the task record")?;
    let temp = dir.join(format!("{TEMP_PREFIX}{}", uuid::Uuid::new_v4().simple()));
    let written = crate::regular_file::open_with(
        &temp,
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600),
    )
    .and_then(|mut file| {
        file.write_all(&bytes)?;
        file.sync_all()?;
        Ok(())
    })
    .and_then(|()| Ok(std::fs::rename(&temp, &path)?));
    if let Err(err) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(err).with_context(|| format!("cannot replace {}", path.display()));
    }
    std::fs::File::open(dir)
        .and_then(|dir| dir.sync_all())
        .with_context(|| format!("cannot sync {}", dir.display()))?;
    Ok(())
}

/// Where the record of `task_id` is kept.
pub fn record_path(dir: &Path, task_id: &str) -> PathBuf {
    dir.join(format!("{task_id}{RECORD_SUFFIX}"))
}

fn read_record(path: &Path) -> Result<TaskInfo> {
    use std::io::Read;
    let file = crate::regular_file::open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_RECORD_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    anyhow::ensure!(
        bytes.len() <= MAX_RECORD_BYTES,
        "{} is bigger than {MAX_RECORD_BYTES} bytes",
        path.display()
    );
    serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a task record", path.display()))
}
