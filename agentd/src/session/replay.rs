//! Replay of a session's persisted events in pages: a sparse seq → byte offset index, kept by
//! the `EventLog` from load and every append, lets a subscriber with `afterSeq` seek near its
//! first event instead of reading the file from the start, and replay reads and sends a bounded
//! page at a time instead of the whole log in one buffer.

use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::Path;

use anyhow::{Context, Result};

use crate::store::Entry;
use protocol::event::Event;

/// One index mark every this many events: a seek lands at most this many events before the one
/// wanted, and the index costs 16 bytes per this many events.
pub const INDEX_EVERY_EVENTS: u64 = 64;
/// Events read and sent per replay page.
pub const REPLAY_PAGE_EVENTS: usize = 256;
/// Bytes read per replay page (a page ends with the line that crosses this).
pub const REPLAY_PAGE_BYTES: u64 = 1024 * 1024;

/// How an event line starts; the seq follows.
const EVENT_LINE_PREFIX: &[u8] = br#"{"type":"event","seq":"#;

/// Where the events of a session file are: sparse marks and the end of what the log wrote.
#[derive(Debug, Default)]
pub struct SeqIndex {
    /// `(seq, offset of its line)`, ascending, one every [`INDEX_EVERY_EVENTS`] events.
    marks: Vec<(u64, u64)>,
    /// Where the next line goes: the length of the file as written through the log.
    end: u64,
    /// Events since the last mark.
    since_mark: u64,
}

/// A replay in progress: the byte range still to read and the seqs wanted.
#[derive(Debug, Clone)]
pub struct ReplayCursor {
    /// Next byte to read.
    pub offset: u64,
    /// The end of the log when the subscription began: lines there are complete.
    pub end: u64,
    /// Events with seq above this are wanted...
    pub after: u64,
    /// ...up to and including this one.
    pub up_to: u64,
}

impl SeqIndex {
    /// Index the file at `path` (blocking): one pass over its lines, decoding only the seq of
    /// event lines. A last line without its newline (torn) gets no mark.
    pub fn build(path: &Path) -> Result<SeqIndex> {
        let file =
            std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let mut reader = std::io::BufReader::with_capacity(64 * 1024, file);
        let mut index = SeqIndex::default();
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = reader
                .read_until(b'\n', &mut line)
                .with_context(|| format!("cannot read {}", path.display()))?;
            if read == 0 {
                break;
            }
            match event_seq(&line).filter(|_| line.ends_with(b"\n")) {
                Some(seq) => index.note_event(seq, read as u64),
                None => index.note_line(read as u64),
            }
        }
        Ok(index)
    }

    /// An event line of `len` bytes with `seq` was appended.
    pub fn note_event(&mut self, seq: u64, len: u64) {
        if self.marks.is_empty() || self.since_mark + 1 >= INDEX_EVERY_EVENTS {
            self.marks.push((seq, self.end));
            self.since_mark = 0;
        } else {
            self.since_mark += 1;
        }
        self.end += len;
    }

    /// Any other line of `len` bytes was appended.
    pub fn note_line(&mut self, len: u64) {
        self.end += len;
    }

    pub fn end(&self) -> u64 {
        self.end
    }

    /// A replay of events after `after` up to `up_to`, starting at the last mark at or before
    /// the first wanted event (events are in seq order in the file); done at once when
    /// `after >= up_to`.
    pub fn cursor(&self, after: u64, up_to: u64) -> ReplayCursor {
        let first_wanted = after.saturating_add(1);
        let at = self.marks.partition_point(|(seq, _)| *seq <= first_wanted);
        let offset = if after >= up_to {
            // Nothing to replay.
            self.end
        } else {
            at.checked_sub(1)
                .and_then(|i| self.marks.get(i))
                .map_or(0, |(_, offset)| *offset)
        };
        ReplayCursor {
            offset,
            end: self.end,
            after,
            up_to,
        }
    }

    /// Marks held (for tests and figures).
    pub fn marks(&self) -> usize {
        self.marks.len()
    }
}

impl ReplayCursor {
    pub fn is_done(&self) -> bool {
        self.offset >= self.end
    }
}

/// Read the next page of `cursor` from `path` (blocking): at most [`REPLAY_PAGE_EVENTS`] events
/// and about [`REPLAY_PAGE_BYTES`], never past `cursor.end`. Lines that do not decode are
/// skipped, as on load. Advances the cursor; once done, it stays done.
pub fn read_page(path: &Path, cursor: &mut ReplayCursor) -> Result<Vec<(u64, Event)>> {
    let mut events = Vec::new();
    if cursor.is_done() {
        return Ok(events);
    }
    let mut file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    file.seek(SeekFrom::Start(cursor.offset))
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut reader = std::io::BufReader::new(file.take(cursor.end - cursor.offset));
    let mut read_bytes = 0;
    let mut line = Vec::new();
    while events.len() < REPLAY_PAGE_EVENTS && read_bytes < REPLAY_PAGE_BYTES {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .with_context(|| format!("cannot read {}", path.display()))? as u64;
        if read == 0 {
            // The file is shorter than the log wrote (it cannot be): nothing more to read.
            cursor.offset = cursor.end;
            break;
        }
        cursor.offset += read;
        read_bytes += read;
        let Some(seq) = event_seq(&line) else {
            continue;
        };
        if seq <= cursor.after {
            continue;
        }
        if seq > cursor.up_to {
            cursor.offset = cursor.end;
            break;
        }
        match serde_json::from_slice::<Entry>(&line) {
            Ok(Entry::Event { seq, event }) => events.push((seq, event)),
            // Skipped as on load; said, so a gap in a replay has a trace.
            _ => tracing::warn!(
                seq,
                path = %path.display(),
                "replay skipped an unreadable event"
            ),
        }
        if seq == cursor.up_to {
            cursor.offset = cursor.end;
            break;
        }
    }
    Ok(events)
}

/// The seq of an event line: read from its prefix without decoding the event when the line is
/// as the daemon writes it; a line in another key order (written by hand or another tool) is
/// decoded whole.
fn event_seq(line: &[u8]) -> Option<u64> {
    if let Some(rest) = line.strip_prefix(EVENT_LINE_PREFIX) {
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        return std::str::from_utf8(rest.get(..digits)?).ok()?.parse().ok();
    }
    if line.starts_with(br#"{"type":""#) {
        // Another entry type, as the daemon writes it.
        return None;
    }
    match serde_json::from_slice::<Entry>(line) {
        Ok(Entry::Event { seq, .. }) => Some(seq),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn event_line(seq: u64) -> String {
        crate::store::encode_event(
            seq,
            &Event::Warning {
                message: format!("w{seq}"),
            },
        )
        .unwrap()
    }

    fn message_line() -> String {
        crate::store::encode_message(&crate::conversation::Message::User {
            content: "hi".into(),
        })
        .unwrap()
    }

    /// A file of a header-like line, then `n` events with a message line every 7 events.
    fn write_log(path: &Path, n: u64) -> SeqIndex {
        let mut file = std::fs::File::create(path).unwrap();
        let mut index = SeqIndex::default();
        let header = "{\"type\":\"header\"}\n";
        file.write_all(header.as_bytes()).unwrap();
        index.note_line(header.len() as u64);
        for seq in 1..=n {
            if seq % 7 == 0 {
                let line = message_line();
                file.write_all(line.as_bytes()).unwrap();
                index.note_line(line.len() as u64);
            }
            let line = event_line(seq);
            file.write_all(line.as_bytes()).unwrap();
            index.note_event(seq, line.len() as u64);
        }
        index
    }

    fn replay_all(path: &Path, mut cursor: ReplayCursor) -> (Vec<u64>, usize) {
        let mut seqs = Vec::new();
        let mut pages = 0;
        while !cursor.is_done() {
            let page = read_page(path, &mut cursor).unwrap();
            assert!(page.len() <= REPLAY_PAGE_EVENTS);
            pages += 1;
            seqs.extend(page.into_iter().map(|(seq, _)| seq));
        }
        (seqs, pages)
    }

    #[test]
    fn the_index_built_from_a_file_matches_the_one_kept_while_appending() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let kept = write_log(&path, 1000);
        let built = SeqIndex::build(&path).unwrap();
        assert_eq!(built.marks, kept.marks);
        assert_eq!(built.end, kept.end);
        assert_eq!(built.end, std::fs::metadata(&path).unwrap().len());
        assert_eq!(
            built.marks(),
            1000usize.div_ceil(INDEX_EVERY_EVENTS as usize)
        );
    }

    #[test]
    fn a_replay_after_a_seq_seeks_and_gets_exactly_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let index = write_log(&path, 1000);
        for after in [0, 1, 63, 64, 65, 500, 995, 999, 1000, 2000] {
            let cursor = index.cursor(after, 1000);
            // The seek lands less than one mark interval before the first wanted event.
            let skipped = {
                let mut probe = std::fs::File::open(&path).unwrap();
                let mut head = vec![0; cursor.offset as usize];
                probe.read_exact(&mut head).unwrap();
                head.split(|b| *b == b'\n').filter_map(event_seq).count() as u64
            };
            assert!(
                skipped <= after && after.min(1000) - skipped <= INDEX_EVERY_EVENTS,
                "after {after}: the seek skipped {skipped} events"
            );
            let (seqs, _) = replay_all(&path, cursor);
            let expected: Vec<u64> = (after + 1..=1000).collect();
            assert_eq!(seqs, expected, "after {after}");
        }
    }

    #[test]
    fn a_replay_from_the_start_comes_in_bounded_pages_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let index = write_log(&path, 1000);
        let (seqs, pages) = replay_all(&path, index.cursor(0, 1000));
        assert_eq!(seqs, (1..=1000).collect::<Vec<_>>());
        assert!(pages >= 1000 / REPLAY_PAGE_EVENTS, "{pages} pages");
        // Events written after the subscription began are not read.
        let (seqs, _) = replay_all(&path, index.cursor(990, 995));
        assert_eq!(seqs, (991..=995).collect::<Vec<_>>());
        assert!(index.cursor(1000, 1000).is_done());
    }

    #[test]
    fn a_torn_last_line_gets_no_mark_and_a_seq_is_read_from_the_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, "{\"type\":\"event\",\"seq\":1,\"ev").unwrap();
        let index = SeqIndex::build(&path).unwrap();
        assert_eq!(index.marks(), 0);
        assert_eq!(event_seq(event_line(42).as_bytes()), Some(42));
        assert_eq!(event_seq(message_line().as_bytes()), None);
        let reordered = r#"{"event":{"type":"warning","message":"m"},"seq":7,"type":"event"}"#;
        assert_eq!(event_seq(reordered.as_bytes()), Some(7));
    }
}
