//! A session's event log: assigns each event its `seq`, appends it (and conversation messages)
//! to the session file **before** publishing it, and lets subscribers replay persisted events
//! after a seq and then follow live ones with no gap and no duplicate. One writer task per log
//! does every write, so appends are cancel-safe, and keeps the seq → offset index replays seek
//! with (`replay`); replays are read page by page, and seqs the file lacks are replayed as
//! marked gaps.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result, anyhow};
use futures::future::BoxFuture;
use serde_json::value::RawValue;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::task::TaskTracker;

use super::replay::{self, ReplayCursor, SeqIndex};
use crate::store::{self, LogFile, Replayed};
use agentd_agent::sink::RunLog;
use agentd_core::answerers::Answerers;
use agentd_core::conversation::{ContextChange, Message};
use protocol::event::Event;
use writer::{Writer, write_loop};

#[path = "events_writer.rs"]
mod writer;

/// Live events buffered per session before a slow subscriber lags (and re-syncs from the file).
pub const LIVE_EVENT_BUFFER: usize = 256;
/// Writes queued for a log's writer task before appenders wait.
const WRITE_QUEUE: usize = 64;

/// One event ready to send: encoded once, shared by every subscriber.
#[derive(Debug)]
pub struct Published {
    pub seq: u64,
    /// True for events with their own seq, delivered reliably and in order; false for
    /// `messageDelta` and `lagged` (best-effort, they share the seq of the last event).
    /// An event with its own seq may still be missing from the file: its envelope's
    /// `notPersisted` says so (the log could not write it, and sends it anyway).
    pub persisted: bool,
    /// The encoded `SessionEventEnvelope`.
    pub json: Box<RawValue>,
    pub event: Event,
}

/// The log of one session. Writes go through one writer task, so an appender that is
/// cancelled (a `select!`, an aborted request) never leaves a line without its seq or a seq
/// used twice: once queued, a write completes, is counted and published.
#[derive(Debug)]
pub struct EventLog {
    inner: Arc<Inner>,
    writes: mpsc::Sender<Write>,
}

#[derive(Debug)]
struct Inner {
    session_id: Arc<str>,
    path: PathBuf,
    /// Seq of the last event given a seq; written only by the writer task.
    last_seq: AtomicU64,
    /// Made by the first subscription: most loaded sessions are never followed, and a
    /// channel's buffer is made whole (`LIVE_EVENT_BUFFER` slots) with it.
    live: std::sync::OnceLock<broadcast::Sender<Arc<Published>>>,
    /// Subscriptions of this session whose client answers approvals.
    answerers: Answerers,
    /// Lifecycle events of all sessions (daemon/subscribe) and who answers on that stream.
    daemon: DaemonStream,
    /// Cancelled when the session is deleted or the daemon stops: subscriptions end and the
    /// writer task stops once it has written what was queued.
    closed: tokio_util::sync::CancellationToken,
    /// Terminal events published without being written, newest last.
    unsaved: std::sync::Mutex<VecDeque<Arc<Published>>>,
    /// Cancelled once the writer task has ended (it holds the drop guard): from then on
    /// nothing of this log writes to the file, so the session may be loaded again.
    writer_stopped: tokio_util::sync::CancellationToken,
}

/// The daemon-wide stream every log publishes lifecycle events to (`daemon/subscribe`), with
/// the count of its subscriptions whose client answers approvals. Cloning shares both.
#[derive(Clone, Debug)]
pub struct DaemonStream {
    pub events: broadcast::Sender<Arc<Published>>,
    pub answerers: Answerers,
}

impl DaemonStream {
    /// A stream that buffers `buffer` events before a slow subscriber lags.
    pub fn new(buffer: usize) -> DaemonStream {
        let (events, _) = broadcast::channel(buffer);
        DaemonStream {
            events,
            answerers: Answerers::new(),
        }
    }

    /// Send `event`, persisted under `seq` in the file of `session_id` by someone other than
    /// its log (a session written whole, not loaded yet: a fork).
    pub fn announce(&self, session_id: &str, seq: u64, event: Event) -> Result<()> {
        let envelope = protocol::event::SessionEventEnvelope {
            session_id: session_id.to_owned(),
            seq,
            event,
            not_persisted: false,
        };
        let json = serde_json::value::to_raw_value(&envelope).context("cannot encode an event")?;
        let _ = self.events.send(Arc::new(Published {
            seq,
            persisted: true,
            json,
            event: envelope.event,
        }));
        Ok(())
    }
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

/// A request to the writer task. Small (the event boxed): the queue's first block of slots is
/// made with it, for every loaded session.
enum Write {
    Event {
        event: Box<Event>,
        done: oneshot::Sender<Result<u64>>,
    },
    Message {
        line: Box<str>,
        done: oneshot::Sender<Result<()>>,
    },
    /// A message, then the events announcing it (each written only if all before it were).
    MessageThenEvents {
        then: Box<(String, Vec<Event>)>,
        done: oneshot::Sender<Result<u64>>,
    },
    /// A live receiver, the seq it starts after and a replay of the events after `after_seq`
    /// up to that seq, all taken between two writes.
    Subscribe {
        after_seq: Option<u64>,
        done: oneshot::Sender<(broadcast::Receiver<Arc<Published>>, u64, ReplayCursor)>,
    },
    /// Where the log stands, taken between two writes (`EventLog::written`).
    Written { done: oneshot::Sender<Written> },
}

/// Where a log stands between two writes: every line up to `len` is whole and on its way to
/// disk (written), and `last_seq` is the seq of the last event given one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    pub last_seq: u64,
    /// The end of the last complete line the log wrote.
    pub len: u64,
}

impl EventLog {
    /// Open the log of an existing session file for appending and index where its events are;
    /// its writer task is owned by `tasks`. `valid_len` and `missing_newline` come from
    /// loading the file: a torn last line is cut off before anything is appended.
    pub async fn open(
        session_id: &str,
        path: PathBuf,
        loaded: LogPosition,
        daemon: DaemonStream,
        tasks: &TaskTracker,
    ) -> Result<EventLog> {
        let open_path = path.clone();
        let (file, index) = tokio::task::spawn_blocking(move || {
            let file = LogFile::open(&open_path, loaded.valid_len, loaded.missing_newline)?;
            // Indexed after the torn tail is cut: the index ends where the next line goes.
            let index = SeqIndex::build(&open_path, file.good_len())?;
            anyhow::Ok((file, index))
        })
        .await
        .context("the session log open task failed")??;
        Ok(EventLog::start(
            session_id,
            path,
            loaded.last_seq,
            file,
            index,
            daemon,
            tasks,
        ))
    }

    /// A log of `file`, whose last event is `last_seq`, with its writer task.
    fn start(
        session_id: &str,
        path: PathBuf,
        last_seq: u64,
        file: LogFile,
        index: SeqIndex,
        daemon: DaemonStream,
        tasks: &TaskTracker,
    ) -> EventLog {
        let inner = Arc::new(Inner {
            session_id: session_id.into(),
            path,
            last_seq: AtomicU64::new(last_seq),
            live: std::sync::OnceLock::new(),
            answerers: Answerers::new(),
            daemon,
            closed: tokio_util::sync::CancellationToken::new(),
            unsaved: std::sync::Mutex::new(VecDeque::new()),
            writer_stopped: tokio_util::sync::CancellationToken::new(),
        });
        let (writes, queue) = mpsc::channel(WRITE_QUEUE);
        tasks.spawn(write_loop(inner.clone(), Writer::new(file, index), queue));
        EventLog { inner, writes }
    }

    /// Create a new session file holding `header_line` and `events` (seqs from 1), written
    /// whole or not at all, and open its log: one blocking step where opening an existing
    /// file takes several. The events are published by [`EventLog::publish_created`], once
    /// the session can be found.
    pub async fn create(
        session_id: &str,
        path: PathBuf,
        header_line: String,
        events: Vec<Event>,
        daemon: DaemonStream,
        tasks: &TaskTracker,
    ) -> Result<(EventLog, Created)> {
        let create_path = path.clone();
        let (file, index, events) = tokio::task::spawn_blocking(move || {
            let mut lines = header_line.into_bytes();
            let mut offsets = Vec::with_capacity(events.len());
            for (seq, event) in (1..).zip(&events) {
                offsets.push((seq, lines.len() as u64));
                lines.extend_from_slice(store::encode_event(seq, event)?.as_bytes());
            }
            let file = LogFile::create(&create_path, &lines)?;
            let mut index = SeqIndex::default();
            let mut ends = offsets.iter().skip(1).map(|(_, offset)| *offset);
            for (seq, offset) in &offsets {
                index.note_event_at(*seq, *offset, ends.next().unwrap_or(file.good_len()));
            }
            index.note_end(file.good_len());
            anyhow::Ok((file, index, events))
        })
        .await
        .context("the session file create task failed")??;
        let last_seq = events.len() as u64;
        let log = EventLog::start(session_id, path, last_seq, file, index, daemon, tasks);
        Ok((log, Created { events }))
    }

    /// Publish the events a new session's file was created with.
    pub fn publish_created(&self, created: Created) -> Result<()> {
        for (seq, event) in (1..).zip(created.events) {
            self.inner
                .publish(self.inner.encode(seq, true, false, event)?);
        }
        Ok(())
    }

    /// End every subscription once it has sent what was already published; the writer
    /// finishes what is queued and stops.
    pub fn close(&self) {
        self.inner.closed.cancel();
    }

    /// Resolves once the log is closed.
    pub async fn closed(&self) {
        self.inner.closed.cancelled().await;
    }

    /// Resolves once the writer task has written what was queued before `close` and ended:
    /// after that nothing of this log touches the file (unloading waits for it before the
    /// session may be loaded again).
    pub async fn writer_stopped(&self) {
        self.inner.writer_stopped.cancelled().await;
    }

    pub fn last_seq(&self) -> u64 {
        self.inner.last_seq.load(Ordering::Acquire)
    }

    /// The session file this log writes.
    pub fn path(&self) -> &std::path::Path {
        &self.inner.path
    }

    /// Where the log stands, taken by its writer between two writes: the file up to `len` is
    /// whole lines, none of them torn or half-written, whatever is being appended meanwhile
    /// (what a fork copies).
    pub async fn written(&self) -> Result<Written> {
        let (done, answer) = oneshot::channel();
        self.submit(Write::Written { done }).await?;
        answer.await.map_err(|_| writer_gone())
    }

    /// Persist `event`, then publish it. Returns its seq. Cancel-safe: once queued, the write
    /// happens whether or not the caller still waits. A `runFinished` that cannot be written
    /// is still published (marked not persisted, status `failed`) so clients see the run end.
    pub async fn append(&self, event: Event) -> Result<u64> {
        let (done, result) = oneshot::channel();
        self.submit(Write::Event {
            event: Box::new(event),
            done,
        })
        .await?;
        result.await.map_err(|_| writer_gone())?
    }

    /// Persist a conversation message (no event; the caller publishes one). Cancel-safe.
    pub async fn append_message(&self, message: &Message) -> Result<()> {
        let line = store::encode_message(message)?;
        let (done, result) = oneshot::channel();
        self.submit(Write::Message {
            line: line.into(),
            done,
        })
        .await?;
        result.await.map_err(|_| writer_gone())?
    }

    /// Persist a conversation message, then `events` (its announcement, and what follows at
    /// once), in one write, each only if all before it were written; returns the last event's
    /// seq. Cancel-safe.
    pub async fn append_message_then(&self, message: &Message, events: Vec<Event>) -> Result<u64> {
        let line = store::encode_message(message)?;
        let (done, result) = oneshot::channel();
        self.submit(Write::MessageThenEvents {
            then: Box::new((line, events)),
            done,
        })
        .await?;
        result.await.map_err(|_| writer_gone())?
    }

    /// Persist a change to what the model is sent (its own entry; no event). Cancel-safe.
    pub async fn append_context(&self, change: &ContextChange) -> Result<()> {
        let line = store::encode(&store::Entry::Context {
            change: change.clone(),
        })?;
        let (done, result) = oneshot::channel();
        self.submit(Write::Message {
            line: line.into(),
            done,
        })
        .await?;
        result.await.map_err(|_| writer_gone())?
    }

    /// Tell the daemon stream that this session was unloaded (best effort, not persisted: it
    /// carries the last seq). Called once its writer has stopped.
    pub fn announce_unloaded(&self) {
        match self
            .inner
            .encode(self.last_seq(), false, false, Event::SessionUnloaded {})
        {
            Ok(published) => {
                let _ = self.inner.daemon.events.send(Arc::new(published));
            }
            Err(err) => tracing::warn!(%err, "cannot encode sessionUnloaded"),
        }
    }

    /// Publish a best-effort event (a delta) without persisting it.
    pub fn publish_transient(&self, event: Event) {
        let Some(live) = self
            .inner
            .live
            .get()
            .filter(|live| live.receiver_count() > 0)
        else {
            return;
        };
        match self.inner.encode(self.last_seq(), false, false, event) {
            Ok(published) => {
                let _ = live.send(Arc::new(published));
            }
            Err(err) => tracing::warn!(%err, "cannot encode a transient event"),
        }
    }

    /// Start following this log: persisted events with seq > `after_seq` are replayed (none
    /// when `after_seq` is `None`), then live ones. The replay starts at the index mark nearest
    /// before `after_seq` and is read page by page ([`EventLog::replay_page`]), bounded in
    /// memory whatever the log's size.
    pub async fn subscribe(&self, after_seq: Option<u64>) -> Result<Subscription> {
        // Taken by the writer between two writes, so the receiver sees exactly the events
        // after `last`, and the file up to the replay's end holds every line written up to it.
        let (done, answer) = oneshot::channel();
        self.submit(Write::Subscribe { after_seq, done }).await?;
        let (live, last, replay) = answer.await.map_err(|_| writer_gone())?;
        Ok(Subscription {
            replay,
            live,
            caught_up_to: last,
        })
    }

    /// The next page of a replay, encoded; empty once the replay is done. Seqs the file lacks
    /// are replayed as one `warning` per gap (or as the unsaved terminal event itself, when it
    /// is remembered), marked not persisted.
    pub async fn replay_page(&self, cursor: &mut ReplayCursor) -> Result<Vec<Arc<Published>>> {
        if cursor.is_done() {
            return Ok(Vec::new());
        }
        let path = self.inner.path.clone();
        let mut moved = cursor.clone();
        let (items, moved) = tokio::task::spawn_blocking(move || {
            replay::read_page(&path, &mut moved).map(|items| (items, moved))
        })
        .await
        .context("replay task failed")??;
        *cursor = moved;
        let mut page = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Replayed::Event(seq, event) => {
                    page.push(Arc::new(self.inner.encode(seq, true, false, event)?));
                }
                Replayed::Missing { from, to } => self.inner.replay_missing(from, to, &mut page)?,
            }
        }
        Ok(page)
    }

    /// Live subscribers of this session now.
    pub fn subscriber_count(&self) -> usize {
        self.inner
            .live
            .get()
            .map_or(0, broadcast::Sender::receiver_count)
    }

    /// The count of this session's subscriptions whose client answers approvals; such a
    /// subscription holds a guard of it while it lasts.
    pub fn answerers(&self) -> &Answerers {
        &self.inner.answerers
    }

    /// Whether anyone could answer an approval of this session right now: a subscription of a
    /// client that declared `capabilities.approvals`, to this session or to the daemon-wide
    /// stream. Other subscribers (a status bar, a viewer) do not count.
    pub fn has_answerers(&self) -> bool {
        self.inner.answerers.any() || self.inner.daemon.answerers.any()
    }

    /// The counts `has_answerers` reads: this session's and the daemon stream's.
    pub fn answerer_counts(&self) -> [Answerers; 2] {
        [
            self.inner.answerers.clone(),
            self.inner.daemon.answerers.clone(),
        ]
    }

    /// An encoded `lagged` marker for a subscriber that fell behind.
    pub fn lagged_marker(&self, seq: u64) -> Result<Arc<Published>> {
        Ok(Arc::new(self.inner.encode(
            seq,
            false,
            false,
            Event::Lagged {},
        )?))
    }

    async fn submit(&self, write: Write) -> Result<()> {
        self.writes.send(write).await.map_err(|_| writer_gone())
    }
}

/// What a run writes through: the inherent methods, as `agent::sink::RunLog`.
impl RunLog for EventLog {
    fn append(&self, event: Event) -> BoxFuture<'_, Result<u64>> {
        Box::pin(EventLog::append(self, event))
    }

    fn append_message<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<()>> {
        Box::pin(EventLog::append_message(self, message))
    }

    fn append_context<'a>(&'a self, change: &'a ContextChange) -> BoxFuture<'a, Result<()>> {
        Box::pin(EventLog::append_context(self, change))
    }

    fn append_message_then<'a>(
        &'a self,
        message: &'a Message,
        events: Vec<Event>,
    ) -> BoxFuture<'a, Result<u64>> {
        Box::pin(EventLog::append_message_then(self, message, events))
    }

    fn publish_transient(&self, event: Event) {
        EventLog::publish_transient(self, event)
    }

    fn has_answerers(&self) -> bool {
        EventLog::has_answerers(self)
    }

    fn answerers_left(&self) -> BoxFuture<'_, ()> {
        Box::pin(Answerers::all_left(self.answerer_counts().into()))
    }
}

/// The events a new session's file was created with, to publish once it can be found.
#[derive(Debug)]
pub struct Created {
    events: Vec<Event>,
}

/// Where loading left a session file: what `EventLog::open` needs.
#[derive(Clone, Copy, Debug, Default)]
pub struct LogPosition {
    pub last_seq: u64,
    /// End of the last complete line.
    pub valid_len: u64,
    /// The last line is complete but lacks its newline.
    pub missing_newline: bool,
}

fn writer_gone() -> anyhow::Error {
    anyhow!("the session log is closed (the session was deleted or the daemon is stopping)")
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
