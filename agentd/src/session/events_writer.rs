//! The writer task of a session's event log: it performs the queued writes in order, gives
//! each event its seq, records the seqs of failed writes as gaps, and encodes and publishes
//! what it wrote (and what a replay finds missing).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use anyhow::{Context, Result};
use tokio::sync::{broadcast, mpsc};

use super::replay::SeqIndex;
use super::{Inner, Published, Write};
use crate::store::{self, LogFile};
use protocol::event::{Event, RunStatus, SessionEventEnvelope};

/// The most queued writes the writer does in one blocking step.
const WRITE_BATCH: usize = 32;
/// Terminal events the log could not write, kept so a replay can still send them.
const REMEMBERED_UNSAVED: usize = 16;

impl Inner {
    pub(super) fn encode(
        &self,
        seq: u64,
        persisted: bool,
        not_persisted: bool,
        event: Event,
    ) -> Result<Published> {
        let envelope = SessionEventEnvelope {
            session_id: self.session_id.to_string(),
            seq,
            event,
            not_persisted,
        };
        let json = serde_json::value::to_raw_value(&envelope).context("cannot encode an event")?;
        Ok(Published {
            seq,
            persisted,
            json,
            event: envelope.event,
        })
    }

    pub(super) fn publish(&self, published: Published) {
        let published = Arc::new(published);
        if is_lifecycle(&published.event) {
            let _ = self.daemon.events.send(published.clone());
        }
        // No subscribers is fine: the event is in the file for later replay.
        if let Some(live) = self.live.get() {
            let _ = live.send(published);
        }
    }

    /// Seqs `from..=to` are not in the file: replay the unsaved terminal events remembered
    /// for them, and one `warning` (marked not persisted, at the gap's last seq) for the rest.
    pub(super) fn replay_missing(
        &self,
        from: u64,
        to: u64,
        replay: &mut Vec<Arc<Published>>,
    ) -> Result<()> {
        let remembered: Vec<Arc<Published>> = self
            .unsaved
            .lock()
            .map(|unsaved| {
                unsaved
                    .iter()
                    .filter(|p| (from..=to).contains(&p.seq))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let mut start = from;
        for published in remembered {
            if published.seq > start {
                replay.push(Arc::new(self.gap_warning(start, published.seq - 1)?));
            }
            start = published.seq + 1;
            replay.push(published);
        }
        if start <= to {
            replay.push(Arc::new(self.gap_warning(start, to)?));
        }
        Ok(())
    }

    fn gap_warning(&self, from: u64, to: u64) -> Result<Published> {
        let which = if from == to {
            format!("event {from}")
        } else {
            format!("events {from} to {to}")
        };
        let message = format!(
            "{which} of this session could not be read from its log (a damaged line, or a write that failed); the replay goes on without it"
        );
        self.encode(to, true, true, Event::Warning { message })
    }

    /// Do one queued request and answer it (a write blocks on the file; a subscription does
    /// not).
    pub(super) fn perform(&self, writer: &mut Writer, write: Write) {
        match write {
            Write::Subscribe { after_seq, done } => {
                let last = self.last_seq.load(Ordering::Acquire);
                let after = after_seq.filter(|after| *after < last).unwrap_or(last);
                let replay = writer.index.cursor(after, last);
                let live = self
                    .live
                    .get_or_init(|| broadcast::channel(super::LIVE_EVENT_BUFFER).0);
                let _ = done.send((live.subscribe(), last, replay));
            }
            Write::Written { done } => {
                let _ = done.send(super::Written {
                    last_seq: self.last_seq.load(Ordering::Acquire),
                    len: writer.file.good_len(),
                });
            }
            Write::Message { line, done } => {
                let _ = done.send(writer.append_other(&line));
            }
            Write::Event { event, done } => {
                let _ = done.send(self.write_event(writer, *event));
            }
            Write::MessageThenEvents { then, done } => {
                let (line, events) = *then;
                let written = match writer.append_other(&line) {
                    Ok(()) => events
                        .into_iter()
                        .try_fold(self.last_seq.load(Ordering::Acquire), |_, event| {
                            self.write_event(writer, event)
                        }),
                    Err(err) => Err(err.context(agentd_agent::sink::MessageNotWritten)),
                };
                let _ = done.send(written);
            }
        }
    }

    /// Write one event line under the next seq. The seq is used even when the write fails, so
    /// a published unsaved event never shares its seq with a later one; the file then lacks
    /// that seq (a `gap` entry says so once the log can be written again) and replays report
    /// it.
    fn write_event(&self, writer: &mut Writer, event: Event) -> Result<u64> {
        let seq = self.last_seq.load(Ordering::Acquire) + 1;
        let line = store::encode_event(seq, &event)?;
        let written = writer
            .record_gap()
            .and_then(|()| writer.append_event(seq, &line));
        self.last_seq.store(seq, Ordering::Release);
        if written.is_err() {
            writer.unrecorded = Some(match writer.unrecorded {
                Some((from, _)) => (from, seq),
                None => (seq, seq),
            });
        }
        match written {
            Ok(()) => {
                self.publish(self.encode(seq, true, false, event)?);
                Ok(seq)
            }
            Err(err) => {
                if let Event::RunFinished {
                    run_id,
                    error,
                    usage,
                    cost_usd,
                    ..
                } = event
                {
                    let reason = format!(
                        "the session log could not be written ({err:#}); this run's end is not saved. Free disk space; the session goes on once the log can be written again"
                    );
                    let error = match error {
                        Some(earlier) => format!("{earlier}; {reason}"),
                        None => reason,
                    };
                    let finished = Event::RunFinished {
                        run_id,
                        status: RunStatus::Failed,
                        error: Some(error),
                        usage,
                        cost_usd,
                    };
                    let published = Arc::new(self.encode(seq, true, true, finished)?);
                    if let Ok(mut unsaved) = self.unsaved.lock() {
                        if unsaved.len() >= REMEMBERED_UNSAVED {
                            unsaved.pop_front();
                        }
                        unsaved.push_back(published.clone());
                    }
                    let _ = self.daemon.events.send(published.clone());
                    if let Some(live) = self.live.get() {
                        let _ = live.send(published);
                    }
                }
                Err(err)
            }
        }
    }
}

/// What the writer task owns: the file, where its events are, and seqs given to events it
/// could not write.
pub(super) struct Writer {
    file: LogFile,
    /// Where events are in the file, for replays; updated after each successful write, with
    /// the offset the write started at.
    index: SeqIndex,
    /// Seqs used by failed writes and not yet recorded in the file (a `gap` entry).
    unrecorded: Option<(u64, u64)>,
}

impl Writer {
    pub(super) fn new(file: LogFile, index: SeqIndex) -> Writer {
        Writer {
            file,
            index,
            unrecorded: None,
        }
    }

    /// Append the event line of `seq` and index it.
    fn append_event(&mut self, seq: u64, line: &str) -> Result<()> {
        let offset = self.file.good_len();
        self.file.append_line(line.as_bytes())?;
        self.index.note_event_at(seq, offset, self.file.good_len());
        Ok(())
    }

    /// Append any other line (a message, a gap); the index only moves its end.
    fn append_other(&mut self, line: &str) -> Result<()> {
        self.file.append_line(line.as_bytes())?;
        self.index.note_end(self.file.good_len());
        Ok(())
    }

    /// Record the seqs of failed writes before anything else takes a seq.
    fn record_gap(&mut self) -> Result<()> {
        if let Some((from, to)) = self.unrecorded {
            let line = store::encode(&store::Entry::Gap { from, to })?;
            self.append_other(&line)?;
            self.unrecorded = None;
        }
        Ok(())
    }
}

/// The writer task: performs queued writes in order (file I/O on the blocking pool) until the
/// log is closed or dropped. The writes queued when it wakes are done together, in one
/// blocking step, each answered as soon as it is done. Nothing here is cancelled half-way.
pub(super) async fn write_loop(
    inner: Arc<Inner>,
    writer: Writer,
    mut queue: mpsc::Receiver<Write>,
) {
    // Whatever way this task ends (done, or dropped with the runtime), it says so.
    let _stopped = inner.writer_stopped.clone().drop_guard();
    let file = Arc::new(std::sync::Mutex::new(writer));
    // A subscription found behind a batch: taken right after it.
    let mut next = None;
    loop {
        let write = match next.take() {
            Some(write) => Some(write),
            None => tokio::select! {
                biased;
                write = queue.recv() => write,
                _ = inner.closed.cancelled() => {
                    // Finish what was queued; later appends are refused.
                    queue.close();
                    queue.recv().await
                }
            },
        };
        let Some(write) = write else {
            break;
        };
        if let Write::Subscribe { .. } | Write::Written { .. } = write {
            // No blocking write is under way between two batches: the lock is free, and a
            // subscription costs no trip to the blocking pool.
            inner.perform(&mut lock_file(&file), write);
            continue;
        }
        let mut batch = Vec::with_capacity(WRITE_BATCH);
        batch.push(write);
        while batch.len() < WRITE_BATCH {
            match queue.try_recv() {
                Ok(write @ (Write::Subscribe { .. } | Write::Written { .. })) => {
                    next = Some(write);
                    break;
                }
                Ok(write) => batch.push(write),
                Err(_) => break,
            }
        }
        let file = file.clone();
        let writer = inner.clone();
        // A write that panicked drops the answers of its batch: their appenders hear that
        // the log is gone, and the next batch goes on.
        let done = tokio::task::spawn_blocking(move || {
            let mut file = lock_file(&file);
            for write in batch {
                writer.perform(&mut file, write);
            }
        })
        .await;
        if let Err(err) = done {
            tracing::warn!(session = %inner.session_id, "a session log write failed: {err}");
        }
    }
    // Seqs of failed writes not yet recorded: one last try, so a restart does not give them
    // out again (it still may, if the disk is still full).
    let recorded = tokio::task::spawn_blocking(move || {
        lock_file(&file).record_gap().map_err(|e| format!("{e:#}"))
    })
    .await;
    if let Ok(Err(err)) = recorded {
        tracing::warn!(session = %inner.session_id, "cannot record unwritten seqs: {err}");
    }
    tracing::debug!(session = %inner.session_id, "session log writer stopped");
}

fn lock_file(file: &std::sync::Mutex<Writer>) -> std::sync::MutexGuard<'_, Writer> {
    // Only the writer task's one blocking write at a time takes it.
    file.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
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
