//! The file of a fork (`session/fork`): the source file's lines up to a seq, under a new
//! header, then the fork's own first events, written whole (`atomic_file`). The lines are
//! copied byte for byte, so the fork's history, clearings and compactions are the source's
//! and its first request repeats the source's bytes. The point must lie between runs: a cut
//! inside a run would leave a run without its end and tool calls without results. Only what
//! the source's log had written is read (`len`, taken by its writer between two writes), so a
//! line being appended meanwhile, or a torn one, is never copied.

use std::io::Read;
use std::ops::Range;
use std::path::Path;

use anyhow::{Context, Result};

use super::{Entry, SessionHeader, SessionSettings};
use protocol::event::Event;

/// Why a fork point cannot be used; what the user can ask instead is in the message.
#[derive(Debug, thiserror::Error)]
pub enum ForkRefused {
    #[error("atSeq {at} is past the end of the session's log: its last seq is {last}")]
    PastTheEnd { at: u64, last: u64 },
    #[error(
        "seq {at} is inside run {run_id} (seqs {started} to {finished}): fork at seq {before}, just before it started, or at seq {finished}, its end"
    )]
    InsideRun {
        at: u64,
        run_id: String,
        started: u64,
        before: u64,
        finished: u64,
    },
    #[error(
        "seq {at} is inside run {run_id}, which is still running (it started at seq {started}): fork at seq {before}, just before it started, or once it has finished"
    )]
    InsideRunningRun {
        at: u64,
        run_id: String,
        started: u64,
        before: u64,
    },
    #[error(
        "seq {at} is not in the session's log (events {from} to {to} could not be written): fork at seq {before} or {to}"
    )]
    NotWritten {
        at: u64,
        from: u64,
        to: u64,
        before: u64,
    },
    #[error("{0:#}")]
    Unreadable(anyhow::Error),
}

/// The part of a source file a fork keeps.
#[derive(Debug)]
pub struct ForkCut {
    /// The source's header as its file holds it: the settings it was created with, which the
    /// kept `sessionUpdated` events change as they changed the source's.
    pub header: SessionHeader,
    /// The lines kept after the header, as a range of the bytes read.
    pub kept: Range<usize>,
    /// The settings at the fork point.
    pub settings: SessionSettings,
    /// The first prompt's preview, if the kept part has one.
    pub preview: Option<String>,
}

/// What a fork's file needs beyond the source's lines.
pub struct NewFork<'a> {
    /// The fork's header (a new id, `forkedFrom`), written first.
    pub header: &'a SessionHeader,
    /// The fork's own first events, given the seqs after the fork point.
    pub events: &'a [Event],
}

/// How an event line starts; its seq follows.
const EVENT_LINE_PREFIX: &[u8] = br#"{"type":"event","seq":"#;

/// The seq of an event line as the daemon writes it (`{"type":"event","seq":N,…`), else of any
/// line that decodes as an event entry; None for other entries and unreadable lines.
pub fn event_line_seq(line: &[u8]) -> Option<u64> {
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

/// The first `len` bytes of the session file at `path` (whole lines, as its log wrote them).
/// Blocking.
pub fn read_written(path: &Path, len: u64) -> Result<Vec<u8>> {
    let file = agentd_core::regular_file::open(path)?;
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(len)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    anyhow::ensure!(
        bytes.len() as u64 == len,
        "{} is shorter than its log wrote ({} of {len} bytes)",
        path.display(),
        bytes.len()
    );
    Ok(bytes)
}

/// Where to cut `bytes` (a session file's whole lines, its last event `last_seq`) to keep its
/// events up to `at`: after the line of the last event at or before `at`. Lines between two
/// kept events (messages, clearings) are kept; those after the last kept event belong to the
/// events after it. Only the lines that decide something (a run's start and end, a settings
/// change, a gap) are decoded.
pub fn cut(bytes: &[u8], at: u64, last_seq: u64) -> Result<ForkCut, ForkRefused> {
    if at > last_seq {
        return Err(ForkRefused::PastTheEnd { at, last: last_seq });
    }
    let header_end = bytes
        .iter()
        .position(|b| *b == b'\n')
        .map(|newline| newline + 1)
        .ok_or_else(|| ForkRefused::Unreadable(anyhow::anyhow!("the session file is empty")))?;
    let header = match super::parse_header(&bytes[..header_end]) {
        Ok(Some(header)) => header,
        _ => {
            return Err(ForkRefused::Unreadable(anyhow::anyhow!(
                "the first line of the session file is not its header"
            )));
        }
    };
    let mut settings = SessionSettings::of(&header);
    let mut preview = None;
    let mut kept_end = header_end;
    // The run open at the last kept line: its id and the seq of its `runStarted`.
    let mut open_run: Option<(String, u64)> = None;
    // Set once a line past `at` is met while a run was open: its end is looked for.
    let mut past = false;
    let mut offset = header_end;
    while offset < bytes.len() {
        let line_end = bytes[offset..]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(bytes.len(), |newline| offset + newline + 1);
        let line = &bytes[offset..line_end];
        offset = line_end;
        if line.starts_with(br#"{"type":"gap""#) {
            let Ok(Entry::Gap { from, to }) = serde_json::from_slice::<Entry>(line) else {
                continue;
            };
            if past || from > at {
                if open_run.is_none() {
                    break;
                }
                past = true;
            } else if to > at {
                return Err(ForkRefused::NotWritten {
                    at,
                    from,
                    to,
                    before: from.saturating_sub(1),
                });
            } else {
                kept_end = line_end;
            }
            continue;
        }
        let Some(seq) = event_line_seq(line) else {
            continue;
        };
        if past || seq > at {
            let Some((run_id, started)) = &open_run else {
                break;
            };
            // The point is inside this run: where does it end?
            past = true;
            if decides(line)
                && let Ok(Entry::Event {
                    event: Event::RunFinished { run_id: ended, .. },
                    ..
                }) = serde_json::from_slice::<Entry>(line)
                && ended == *run_id
            {
                return Err(ForkRefused::InsideRun {
                    at,
                    run_id: run_id.clone(),
                    started: *started,
                    before: started.saturating_sub(1),
                    finished: seq,
                });
            }
            continue;
        }
        kept_end = line_end;
        if !decides(line) {
            continue;
        }
        match serde_json::from_slice::<Entry>(line) {
            Ok(Entry::Event {
                event: Event::RunStarted { run_id, prompt, .. },
                ..
            }) => {
                preview.get_or_insert_with(|| protocol::session::preview_of(&prompt));
                open_run = Some((run_id, seq));
            }
            Ok(Entry::Event {
                event: Event::RunFinished { run_id, .. },
                ..
            }) if open_run.as_ref().is_some_and(|(open, _)| *open == run_id) => {
                open_run = None;
            }
            Ok(Entry::Event {
                event: Event::RunFinished { .. },
                ..
            }) => {}
            Ok(Entry::Event { event, .. }) => {
                settings.apply(&event);
            }
            _ => {}
        }
    }
    if let Some((run_id, started)) = open_run {
        // No end after the point: the run is still going (the source's log is loaded, so a
        // run a crash left open was closed when it loaded).
        return Err(ForkRefused::InsideRunningRun {
            at,
            run_id,
            started,
            before: started.saturating_sub(1),
        });
    }
    Ok(ForkCut {
        header,
        kept: header_end..kept_end,
        settings,
        preview,
    })
}

/// The bytes of a fork's file: its header, the source's kept lines, then its own events from
/// seq `at + 1`.
pub fn fork_file(source: &[u8], cut: &ForkCut, at: u64, fork: &NewFork<'_>) -> Result<Vec<u8>> {
    let header = super::encode(&Entry::Header(fork.header.clone()))?;
    let kept = &source[cut.kept.clone()];
    let mut bytes = Vec::with_capacity(header.len() + kept.len() + 512);
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(kept);
    for (seq, event) in (at + 1..).zip(fork.events) {
        bytes.extend_from_slice(super::encode_event(seq, event)?.as_bytes());
    }
    Ok(bytes)
}

/// Write a new session file at `path` whole (temp file, sync, rename), private. Blocking.
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    agentd_core::atomic_file::replace_atomically(path, bytes, agentd_core::paths::PRIVATE_FILE_MODE)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Event types a cut decodes: a run's start and end, a settings change.
const DECIDING: [&[u8]; 3] = [b"runStarted\"", b"runFinished\"", b"sessionUpdated\""];

/// Whether an event line is of a [`DECIDING`] type: read where the daemon writes the type
/// (`{"type":"event","seq":N,"event":{"type":"…"`), else looked for in the whole line.
fn decides(line: &[u8]) -> bool {
    let canonical = line.strip_prefix(EVENT_LINE_PREFIX).and_then(|rest| {
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        rest.get(digits..)?.strip_prefix(br#","event":{"type":""#)
    });
    match canonical {
        Some(kind) => DECIDING.iter().any(|name| kind.starts_with(name)),
        None => DECIDING.iter().any(|name| {
            let mut needle = br#""type":""#.to_vec();
            needle.extend_from_slice(name);
            contains(line, &needle)
        }),
    }
}

fn contains(line: &[u8], needle: &[u8]) -> bool {
    line.windows(needle.len()).any(|window| window == needle)
}

#[cfg(test)]
#[path = "fork_tests.rs"]
mod tests;
