//! Finding the sessions on disk: every session file's header, read without trusting it, for
//! the listing index.

use std::collections::HashMap;

use anyhow::Context;

use super::index;
use crate::store::{self, SessionHeader};

/// Read every session header in `dir`, with the file's stamp (length and mtime, for the listing
/// index). Blocking. Only regular `<id>.jsonl` files whose header names the same, well-formed
/// id are indexed: the id builds the session's file path, so a hostile header (`../../x`) must
/// never be trusted. Anything else (a FIFO, a directory, a symlink, a foreign id) is skipped
/// with a warning and never opened in a way that blocks; so is a file of a newer format
/// (`store::NewerFormat`), which is also returned, by session id, with the reason. The temp
/// file of a session being written whole (`session/fork`) that a killed daemon left is removed.
pub(super) fn scan(dir: &std::path::Path) -> anyhow::Result<Scanned> {
    let mut found = Vec::new();
    let mut refused = HashMap::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok((found, refused)),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", dir.display())),
    };
    let mut paths = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        // A session file written whole (a fork) by a daemon killed before its rename.
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(".ses_") && agentd_core::atomic_file::is_temp_name(&name) {
            let _ = std::fs::remove_file(&path);
            continue;
        }
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        paths.push(path);
    }
    // Thousands of files, each opened and its first line read: on a few threads.
    let scanned = agentd_core::parallel::map(paths, |path| {
        let scanned = scan_one(&path);
        (path, scanned)
    });
    for (path, scanned) in scanned {
        match scanned {
            Ok(found_one) => found.push(found_one),
            Err(err) => {
                tracing::warn!("skipping session file {}: {err:#}", path.display());
                let stem = path.file_stem().and_then(|stem| stem.to_str());
                if let Some(newer) = err.downcast_ref::<store::NewerFormat>()
                    && stem == Some(newer.session_id.as_str())
                    && protocol::id::is_session_id(&newer.session_id)
                {
                    refused.insert(newer.session_id.clone(), newer.to_string());
                }
            }
        }
    }
    Ok((found, refused))
}

/// What `scan` found: the headers (with file stamps) and the sessions refused by format.
pub(super) type Scanned = (
    Vec<(SessionHeader, Option<index::FileStamp>)>,
    HashMap<String, String>,
);

/// The header and stamp (length, mtime) of one session file, if it may be indexed.
fn scan_one(path: &std::path::Path) -> anyhow::Result<(SessionHeader, Option<index::FileStamp>)> {
    let file = agentd_core::regular_file::open(path)?;
    // Stamped from the opened file itself, so the stamp describes the file whose header is read.
    let stamp = file.metadata().ok().map(|m| index::FileStamp::of(&m));
    let header = store::read_header_from(file, path)?;
    let stem = path.file_stem().and_then(|stem| stem.to_str());
    if !protocol::id::is_session_id(&header.id) || stem != Some(header.id.as_str()) {
        anyhow::bail!(
            "its header names session {:?}, which is not a valid id matching the file name",
            header.id
        );
    }
    Ok((header, stamp))
}
