//! `session/fork`: a new session whose history is another's up to a seq. Its file is the
//! source's lines up to that seq under a new header (`store::fork`), taken from what the
//! source's log had written, and written whole; the new session is listed at once and loaded
//! on first use, like a session found at startup. What it keeps of its source: the header
//! (provider, model, mode, rules, MCP servers, agent, the frozen system prompt with its memory
//! and notes as they were frozen, the prompt cache key) and every `sessionUpdated`, clearing
//! and compaction up to the point. What it does not: the source's pending approvals, its
//! tasks, its usage (counted from the fork's own `sessionCreated`), its parent (a fork of a
//! subagent's session is a session of its own, run as the same agent). The `task` tool's fork
//! mode writes its child's seeded file the same way (`add_written`).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::SystemTime;

use protocol::event::Event;
use protocol::session::{ForkPoint, SessionForkParams, SessionInfo};

use super::index::{FileStamp, SummaryEntry};
use super::{SessionError, SessionManager, Slot, evict};
use crate::store::fork::{self as store_fork, ForkRefused, NewFork};
use crate::store::{self, SessionHeader};

/// A session file written whole, to be listed and found.
pub(super) struct Written {
    pub header: SessionHeader,
    /// Its summary for the listing.
    pub entry: SummaryEntry,
    /// Its own first events (`sessionCreated`, …) and the seq of the first, announced once
    /// it can be found.
    pub events: Vec<Event>,
    pub first_seq: u64,
}

impl SessionManager {
    /// Fork `params.session_id` at `params.at_seq` (default: its last seq); the new session.
    pub async fn fork(&self, params: SessionForkParams) -> Result<SessionInfo, SessionError> {
        let source = self.get(&params.session_id).await?;
        // Taken by the source's writer between two writes: the file up to `len` is whole
        // lines, whatever its run appends meanwhile.
        let written = source
            .log
            .written()
            .await
            .map_err(|err| SessionError::Internal(format!("{err:#}")))?;
        let at = params.at_seq.unwrap_or(written.last_seq);
        let source_path = source.log.path().to_owned();
        let source_id = source.id().to_owned();
        let id = new_id();
        let path = store::session_path(&self.deps.paths.sessions_dir, &id);
        let title = params.title.filter(|title| !title.trim().is_empty());
        let created_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        let made = tokio::task::spawn_blocking(move || {
            let bytes = store_fork::read_written(&source_path, written.len)
                .map_err(ForkRefused::Unreadable)?;
            let cut = store_fork::cut(&bytes, at, written.last_seq)?;
            let mut header = cut.header.clone();
            // Its requests start with the source's bytes: they share its cache.
            header.prompt_cache_key = Some(cut.header.cache_key().to_owned());
            header.id = id;
            header.created_at = created_at;
            header.forked_from = Some(ForkPoint {
                session_id: source_id,
                seq: at,
            });
            // A fork answers to no parent and runs no task.
            header.parent_session_id = None;
            header.task_id = None;
            let mut events = vec![Event::SessionCreated {
                cwd: header.cwd.clone(),
                model: cut.settings.model.clone(),
                forked_from: header.forked_from.clone(),
            }];
            if let Some(title) = title {
                events.push(Event::SessionUpdated {
                    permission_mode: None,
                    provider: None,
                    model: None,
                    title: Some(title),
                });
            }
            let file = store_fork::fork_file(
                &bytes,
                &cut,
                at,
                &NewFork {
                    header: &header,
                    events: &events,
                },
            )
            .map_err(ForkRefused::Unreadable)?;
            let mut settings = cut.settings;
            for event in &events {
                settings.apply(event);
            }
            let entry = write_whole(
                &path,
                &file,
                at + events.len() as u64,
                cut.preview,
                settings,
            )
            .map_err(ForkRefused::Unreadable)?;
            Ok::<_, ForkRefused>(Written {
                header,
                entry,
                events,
                first_seq: at + 1,
            })
        })
        .await
        .map_err(|err| SessionError::Internal(err.to_string()))?
        .map_err(refused)?;
        Ok(self.add_written(made))
    }

    /// List and announce a session whose file was just written whole; it loads on first use.
    pub(super) fn add_written(&self, written: Written) -> SessionInfo {
        let Written {
            header,
            entry,
            events,
            first_seq,
        } = written;
        let id = header.id.clone();
        let slot = Arc::new(Slot {
            header,
            file_updated_at: Some(entry.stamp.modified()),
            loaded: evict::LoadedCell::new(),
            deleted: AtomicBool::new(false),
        });
        let info = super::index::listed(&slot, &entry);
        self.summaries.insert(&id, entry);
        self.write_slots().insert(id.clone(), slot);
        self.listing.invalidate();
        // Announced once the session can be found (its lifecycle events only, as a log would).
        for (seq, event) in (first_seq..).zip(events) {
            if matches!(event, Event::SessionCreated { .. })
                && let Err(err) = self.daemon.announce(&id, seq, event)
            {
                tracing::warn!("cannot announce the new session {id}: {err:#}");
            }
        }
        info
    }
}

/// A new session id.
pub(super) fn new_id() -> String {
    format!("ses_{}", uuid::Uuid::new_v4().simple())
}

/// Write a new session file whole and summarise it for the listing (its usage starts at
/// nothing). Blocking.
pub(super) fn write_whole(
    path: &std::path::Path,
    bytes: &[u8],
    last_seq: u64,
    preview: Option<String>,
    settings: store::SessionSettings,
) -> anyhow::Result<SummaryEntry> {
    store_fork::write_new(path, bytes)
        .map_err(|err| err.context("check free space in the state directory"))?;
    Ok(SummaryEntry {
        stamp: FileStamp::of_path(path)?,
        last_seq,
        usage: Default::default(),
        preview,
        settings: Some(settings),
    })
}

/// The lines of a session file that starts with `messages` (a forked subagent's): its header,
/// the messages, then its `sessionCreated` (seq 1), which it returns.
pub(super) fn add_seeded_lines(
    header: &SessionHeader,
    messages: &[agentd_core::conversation::Message],
) -> anyhow::Result<(Vec<u8>, Vec<Event>)> {
    let mut bytes = store::encode(&store::Entry::Header(header.clone()))?.into_bytes();
    for message in messages {
        bytes.extend_from_slice(store::encode_message(message)?.as_bytes());
    }
    let events = vec![Event::SessionCreated {
        cwd: header.cwd.clone(),
        model: header.model.clone(),
        forked_from: None,
    }];
    for (seq, event) in (1..).zip(&events) {
        bytes.extend_from_slice(store::encode_event(seq, event)?.as_bytes());
    }
    Ok((bytes, events))
}

/// A refused fork point as the error the user reads.
fn refused(refusal: ForkRefused) -> SessionError {
    match refusal {
        ForkRefused::InsideRunningRun { .. } => SessionError::Conflict(refusal.to_string()),
        ForkRefused::Unreadable(err) => SessionError::Internal(format!("{err:#}")),
        ForkRefused::PastTheEnd { .. }
        | ForkRefused::InsideRun { .. }
        | ForkRefused::NotWritten { .. } => SessionError::InvalidParams(refusal.to_string()),
    }
}
