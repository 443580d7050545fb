//! Replay of a session's persisted events in pages: a sparse seq → byte offset index, kept by
//! the `EventLog` from load and every append, lets a subscriber with `afterSeq` seek near its
//! first event instead of reading the file from the start, and replay reads and sends a bounded
//! page at a time instead of the whole log in one buffer. Seqs of the range the file does not
//! hold (a damaged line, a write that failed) are reported as `Replayed::Missing`, never
//! skipped silently.

use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::Path;

use anyhow::{Context, Result};

use crate::store::{Entry, Replayed};

/// One index mark every this many events: a seek lands at most this many events before the one
/// wanted, and the index costs 16 bytes per this many events.
pub const INDEX_EVERY_EVENTS: u64 = 64;
/// Events read and sent per replay page.
pub const REPLAY_PAGE_EVENTS: usize = 256;
/// Bytes read per replay page (a page ends with the line that crosses this).
pub const REPLAY_PAGE_BYTES: u64 = 1024 * 1024;

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
    /// Seqs up to this one are replayed or reported missing; those above it are wanted...
    pub after: u64,
    /// ...up to and including this one.
    pub up_to: u64,
}

impl SeqIndex {
    /// Index the first `len` bytes of the file at `path` (blocking; `len` is where its last
    /// complete line ends): one pass over its lines, decoding only the seq of event lines. A
    /// last line without its newline (torn) gets no mark.
    pub fn build(path: &Path, len: u64) -> Result<SeqIndex> {
        // A regular file only, opened without blocking (as every session file is read).
        let file = agentd_core::regular_file::open(path)?;
        let mut reader = std::io::BufReader::with_capacity(64 * 1024, file.take(len));
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
        self.note_event_at(seq, self.end, self.end + len);
    }

    /// Any other line of `len` bytes was appended.
    pub fn note_line(&mut self, len: u64) {
        self.end += len;
    }

    /// The event line of `seq` was written at `offset`; the file's lines now end at `end`
    /// (the writer's own figures, so a rolled-back write never moves the index).
    pub fn note_event_at(&mut self, seq: u64, offset: u64, end: u64) {
        if self.marks.is_empty() || self.since_mark + 1 >= INDEX_EVERY_EVENTS {
            self.marks.push((seq, offset));
            self.since_mark = 0;
        } else {
            self.since_mark += 1;
        }
        self.end = end;
    }

    /// Any other line was written; the file's lines now end at `end`.
    pub fn note_end(&mut self, end: u64) {
        self.end = end;
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

    /// Marks held.
    #[cfg(test)]
    pub fn marks(&self) -> usize {
        self.marks.len()
    }
}

impl ReplayCursor {
    /// Every wanted seq was replayed or reported missing.
    pub fn is_done(&self) -> bool {
        self.offset >= self.end && self.after >= self.up_to
    }
}

/// Read the next page of `cursor` from `path` (blocking): at most [`REPLAY_PAGE_EVENTS`] items
/// and about [`REPLAY_PAGE_BYTES`], never past `cursor.end`. Seqs of the wanted range the file
/// does not hold (lines that do not decode, failed writes) are reported as
/// [`Replayed::Missing`], one item per gap, once the next event (or the end) shows the gap.
/// Advances the cursor; once done, it stays done.
pub fn read_page(path: &Path, cursor: &mut ReplayCursor) -> Result<Vec<Replayed>> {
    let mut items = Vec::new();
    if cursor.offset < cursor.end && cursor.after < cursor.up_to {
        read_lines(path, cursor, &mut items)?;
    } else {
        cursor.offset = cursor.end;
    }
    if cursor.offset >= cursor.end && cursor.after < cursor.up_to {
        // The rest of the range is not in the file.
        items.push(Replayed::Missing {
            from: cursor.after + 1,
            to: cursor.up_to,
        });
        cursor.after = cursor.up_to;
    }
    Ok(items)
}

/// The reading part of [`read_page`]: events of the page and the gaps before them.
fn read_lines(path: &Path, cursor: &mut ReplayCursor, items: &mut Vec<Replayed>) -> Result<()> {
    let mut file = agentd_core::regular_file::open(path)?;
    file.seek(SeekFrom::Start(cursor.offset))
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut reader = std::io::BufReader::new(file.take(cursor.end - cursor.offset));
    let mut read_bytes = 0;
    let mut line = Vec::new();
    while items.len() < REPLAY_PAGE_EVENTS && read_bytes < REPLAY_PAGE_BYTES {
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
            Ok(Entry::Event { seq, event }) => {
                if seq > cursor.after + 1 {
                    items.push(Replayed::Missing {
                        from: cursor.after + 1,
                        to: seq - 1,
                    });
                }
                items.push(Replayed::Event(seq, event));
                cursor.after = seq;
            }
            // Left out of the replay, reported with its gap; said, so the log has a trace.
            _ => tracing::warn!(
                seq,
                path = %path.display(),
                "replay met an unreadable event; it is reported as missing"
            ),
        }
        if seq == cursor.up_to {
            cursor.offset = cursor.end;
            break;
        }
    }
    Ok(())
}

/// The seq of an event line: read from its prefix without decoding the event when the line is
/// as the daemon writes it; a line in another key order (written by hand or another tool) is
/// decoded whole.
fn event_seq(line: &[u8]) -> Option<u64> {
    crate::store::fork::event_line_seq(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::event::Event;
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
        crate::store::encode_message(&agentd_core::conversation::Message::user("hi")).unwrap()
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

    /// The seqs a replay gives, page by page, and the pages; a missing seq fails the test.
    fn replay_all(path: &Path, mut cursor: ReplayCursor) -> (Vec<u64>, usize) {
        let mut seqs = Vec::new();
        let mut pages = 0;
        while !cursor.is_done() {
            let page = read_page(path, &mut cursor).unwrap();
            assert!(page.len() <= REPLAY_PAGE_EVENTS);
            pages += 1;
            seqs.extend(page.into_iter().map(|item| match item {
                Replayed::Event(seq, _) => seq,
                Replayed::Missing { from, to } => panic!("missing {from}..={to}"),
            }));
        }
        (seqs, pages)
    }

    #[test]
    fn the_index_built_from_a_file_matches_the_one_kept_while_appending() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let kept = write_log(&path, 1000);
        let len = std::fs::metadata(&path).unwrap().len();
        let built = SeqIndex::build(&path, len).unwrap();
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
    fn seqs_the_file_lacks_are_reported_missing_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        // Seqs 1..=10 with 4..=5 and 10 never written (failed writes), and 7 damaged.
        let mut text = String::from("{\"type\":\"header\"}\n");
        for seq in [1, 2, 3, 6, 7, 8, 9] {
            let line = event_line(seq);
            if seq == 7 {
                text.push_str(&line.replacen("\"event\":{", "\"event\":[", 1));
            } else {
                text.push_str(&line);
            }
        }
        std::fs::write(&path, &text).unwrap();
        let index = SeqIndex::build(&path, text.len() as u64).unwrap();
        let mut cursor = index.cursor(2, 10);
        let mut items = Vec::new();
        while !cursor.is_done() {
            items.extend(read_page(&path, &mut cursor).unwrap());
        }
        let shape: Vec<(u64, u64)> = items
            .iter()
            .map(|item| match item {
                Replayed::Event(seq, _) => (*seq, *seq),
                Replayed::Missing { from, to } => (*from, *to + 100),
            })
            .collect();
        assert_eq!(
            shape,
            [
                (3, 3),
                (4, 105),
                (6, 6),
                (7, 107),
                (8, 8),
                (9, 9),
                (10, 110)
            ]
        );
        // Nothing wanted: done at once, nothing reported.
        let mut cursor = index.cursor(10, 10);
        assert!(cursor.is_done());
        assert!(read_page(&path, &mut cursor).unwrap().is_empty());
    }

    #[test]
    fn a_torn_last_line_gets_no_mark_and_a_seq_is_read_from_the_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, "{\"type\":\"event\",\"seq\":1,\"ev").unwrap();
        let index = SeqIndex::build(&path, 100).unwrap();
        assert_eq!(index.marks(), 0);
        assert_eq!(event_seq(event_line(42).as_bytes()), Some(42));
        assert_eq!(event_seq(message_line().as_bytes()), None);
        let reordered = r#"{"event":{"type":"warning","message":"m"},"seq":7,"type":"event"}"#;
        assert_eq!(event_seq(reordered.as_bytes()), Some(7));
    }
}
