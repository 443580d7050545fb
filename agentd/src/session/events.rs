//! A session's event log: assigns each event its `seq`, appends it (and conversation messages)
//! to the session file **before** publishing it, and lets subscribers replay persisted events
//! after a seq and then follow live ones with no gap and no duplicate.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};
use serde_json::value::RawValue;
use tokio::io::AsyncWriteExt;
use tokio::sync::{Mutex, broadcast};

use super::replay::{self, ReplayCursor, SeqIndex};
use crate::conversation::Message;
use crate::store;
use protocol::event::{Event, SessionEventEnvelope};

/// Live events buffered per session before a slow subscriber lags (and re-syncs from the file).
pub const LIVE_EVENT_BUFFER: usize = 256;

/// One event ready to send: encoded once, shared by every subscriber.
#[derive(Debug)]
pub struct Published {
    pub seq: u64,
    /// False for `messageDelta` (best-effort, shares the seq of the last persisted event).
    pub persisted: bool,
    /// The encoded `SessionEventEnvelope`.
    pub json: Box<RawValue>,
    pub event: Event,
}

/// The log of one session.
#[derive(Debug)]
pub struct EventLog {
    session_id: Arc<str>,
    path: PathBuf,
    writer: Mutex<tokio::fs::File>,
    /// Seq of the last persisted event; written only under the `writer` lock.
    last_seq: AtomicU64,
    /// Where events are in the file, for replay; updated only under the `writer` lock.
    index: std::sync::Mutex<SeqIndex>,
    live: broadcast::Sender<Arc<Published>>,
    /// Lifecycle events of all sessions (daemon/subscribe).
    daemon_events: broadcast::Sender<Arc<Published>>,
    /// Cancelled when the session is deleted or the daemon stops: subscriptions end.
    closed: tokio_util::sync::CancellationToken,
}

/// What a new subscriber gets: persisted events to replay (read page by page with
/// [`EventLog::replay_page`]), then the live receiver.
pub struct Subscription {
    pub replay: ReplayCursor,
    pub live: broadcast::Receiver<Arc<Published>>,
    /// Seq of the last replayed (or already known) event: live events at or below it are
    /// duplicates and must be skipped.
    pub caught_up_to: u64,
}

impl EventLog {
    /// Open the log of an existing session file for appending.
    pub async fn open(
        session_id: &str,
        path: PathBuf,
        last_seq: u64,
        daemon_events: broadcast::Sender<Arc<Published>>,
    ) -> Result<EventLog> {
        let file = tokio::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .await
            .with_context(|| format!("cannot open session log {}", path.display()))?;
        let index_path = path.clone();
        let index = tokio::task::spawn_blocking(move || SeqIndex::build(&index_path))
            .await
            .context("indexing task failed")??;
        let (live, _) = broadcast::channel(LIVE_EVENT_BUFFER);
        Ok(EventLog {
            session_id: session_id.into(),
            path,
            writer: Mutex::new(file),
            last_seq: AtomicU64::new(last_seq),
            index: std::sync::Mutex::new(index),
            live,
            daemon_events,
            closed: tokio_util::sync::CancellationToken::new(),
        })
    }

    /// End every subscription once it has sent what was already published.
    pub fn close(&self) {
        self.closed.cancel();
    }

    /// Resolves once the log is closed.
    pub async fn closed(&self) {
        self.closed.cancelled().await;
    }

    pub fn last_seq(&self) -> u64 {
        self.last_seq.load(Ordering::Acquire)
    }

    /// Persist `event`, then publish it. Returns its seq.
    pub async fn append(&self, event: Event) -> Result<u64> {
        let mut writer = self.writer.lock().await;
        let seq = self.last_seq.load(Ordering::Acquire) + 1;
        let line = store::encode_event(seq, &event)?;
        write_line(&mut writer, &line).await?;
        self.lock_index().note_event(seq, line.len() as u64);
        self.last_seq.store(seq, Ordering::Release);
        let published = Arc::new(self.encode(seq, true, event)?);
        if is_lifecycle(&published.event) {
            let _ = self.daemon_events.send(published.clone());
        }
        // No subscribers is fine: the event is in the file for later replay.
        let _ = self.live.send(published);
        Ok(seq)
    }

    /// Persist a conversation message (no event; the caller publishes one).
    pub async fn append_message(&self, message: &Message) -> Result<()> {
        let mut writer = self.writer.lock().await;
        let line = store::encode_message(message)?;
        write_line(&mut writer, &line).await?;
        self.lock_index().note_line(line.len() as u64);
        Ok(())
    }

    /// Publish a best-effort event (a delta) without persisting it.
    pub fn publish_transient(&self, event: Event) {
        if self.live.receiver_count() == 0 {
            return;
        }
        match self.encode(self.last_seq(), false, event) {
            Ok(published) => {
                let _ = self.live.send(Arc::new(published));
            }
            Err(err) => tracing::warn!(%err, "cannot encode a transient event"),
        }
    }

    /// Start following this log: persisted events with seq > `after_seq` are replayed (none
    /// when `after_seq` is `None`), then live ones. The replay starts at the index mark nearest
    /// before `after_seq` and is read page by page, bounded in memory whatever the log's size.
    pub async fn subscribe(&self, after_seq: Option<u64>) -> Result<Subscription> {
        // Under the writer lock no event is between "persisted" and "published", so the
        // receiver sees exactly the events after `last`, and the file up to the index's end
        // holds every line up to `last`, complete.
        let (live, last, replay) = {
            let _writer = self.writer.lock().await;
            let last = self.last_seq();
            let after = after_seq.filter(|after| *after < last).unwrap_or(last);
            (
                self.live.subscribe(),
                last,
                self.lock_index().cursor(after, last),
            )
        };
        Ok(Subscription {
            replay,
            live,
            caught_up_to: last,
        })
    }

    /// The next page of a replay, encoded; empty once the replay is done.
    pub async fn replay_page(&self, cursor: &mut ReplayCursor) -> Result<Vec<Arc<Published>>> {
        if cursor.is_done() || cursor.after >= cursor.up_to {
            cursor.offset = cursor.end;
            return Ok(Vec::new());
        }
        let path = self.path.clone();
        let mut moved = cursor.clone();
        let (events, moved) = tokio::task::spawn_blocking(move || {
            replay::read_page(&path, &mut moved).map(|events| (events, moved))
        })
        .await
        .context("replay task failed")??;
        *cursor = moved;
        events
            .into_iter()
            .map(|(seq, event)| Ok(Arc::new(self.encode(seq, true, event)?)))
            .collect()
    }

    /// Live subscribers of this session now.
    pub fn subscriber_count(&self) -> usize {
        self.live.receiver_count()
    }

    fn lock_index(&self) -> std::sync::MutexGuard<'_, SeqIndex> {
        // The index is only ever replaced whole under this lock: a poisoned one is still usable.
        self.index
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether anyone could answer an approval of this session right now: a subscriber of the
    /// session or of the daemon-wide stream.
    pub fn has_listeners(&self) -> bool {
        self.live.receiver_count() > 0 || self.daemon_events.receiver_count() > 0
    }

    /// An encoded `lagged` marker for a subscriber that fell behind.
    pub fn lagged_marker(&self, seq: u64) -> Result<Arc<Published>> {
        Ok(Arc::new(self.encode(seq, false, Event::Lagged {})?))
    }

    fn encode(&self, seq: u64, persisted: bool, event: Event) -> Result<Published> {
        let envelope = SessionEventEnvelope {
            session_id: self.session_id.to_string(),
            seq,
            event,
        };
        let json = serde_json::value::to_raw_value(&envelope).context("cannot encode an event")?;
        Ok(Published {
            seq,
            persisted,
            json,
            event: envelope.event,
        })
    }
}

/// Events that also go to the daemon-wide stream.
fn is_lifecycle(event: &Event) -> bool {
    matches!(
        event,
        Event::SessionCreated { .. }
            | Event::SessionDeleted {}
            | Event::RunStarted { .. }
            | Event::RunFinished { .. }
            | Event::ApprovalRequested { .. }
            | Event::ApprovalResolved { .. }
    )
}

async fn write_line(file: &mut tokio::fs::File, line: &str) -> Result<()> {
    file.write_all(line.as_bytes())
        .await
        .context("cannot write the session log")?;
    // tokio's File buffers in the background; flush so the line is in the OS before we publish.
    file.flush().await.context("cannot write the session log")?;
    Ok(())
}
