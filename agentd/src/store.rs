//! Session persistence: one JSONL file per session, `$XDG_STATE_HOME/agentd/sessions/<id>.jsonl`.
//! A header line, then one entry per line: conversation messages and persisted events, in the
//! order they happened. Loading tolerates a torn last line (a crash mid-write) and keeps going
//! past entry types it does not know. Appending goes through `LogFile` (`log_file`), which never
//! leaves a fragment for the next line to be glued to.

mod child_mcp;
pub mod fork;
mod header;
mod log_file;
pub mod points;
mod progress;
mod settings;

pub use child_mcp::ChildMcpServers;
use header::known_format;
#[cfg(test)]
pub use header::read_header;
pub use header::{FORMAT_VERSION, NewerFormat, SessionHeader, parse_header, read_header_from};
pub use log_file::LogFile;
pub use progress::RunProgress;
pub use settings::SessionSettings;

use std::io::BufRead;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use agentd_core::conversation::Message;
use protocol::event::Event;

/// One line of a session file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Entry {
    Header(SessionHeader),
    /// A message of the conversation, in history order.
    Message {
        message: Message,
    },
    /// A persisted event with its seq.
    Event {
        seq: u64,
        event: Event,
    },
    /// A deliberate change to what the model is sent (clearing, compaction); the messages
    /// stay whole, and loading applies these to rebuild the same view.
    Context {
        change: agentd_core::conversation::ContextChange,
    },
    /// Seqs `from..=to` went to events the daemon could not write (disk full). Written once
    /// the log can be written again, so those seqs are never given out twice.
    Gap {
        from: u64,
        to: u64,
    },
    /// An entry written by a newer version; kept in the file, skipped on load.
    #[serde(other)]
    Unknown,
}

/// What a session file holds.
#[derive(Debug)]
pub struct LoadedSession {
    pub header: SessionHeader,
    pub history: Vec<Message>,
    pub last_seq: u64,
    /// The last `runStarted` without a matching `runFinished`: the run the daemon was in when
    /// it stopped.
    pub unfinished_run: Option<String>,
    pub usage: agentd_core::conversation::Usage,
    /// The session's cost so far, from its last `usageUpdated`.
    pub cost_usd: Option<f64>,
    /// Approvals requested and never resolved (the daemon stopped while they waited):
    /// (run id, approval id, tool call id).
    pub unresolved_approvals: Vec<(String, String, String)>,
    /// Rules remembered by "allow for session" answers, in order.
    pub session_allow_rules: Vec<String>,
    /// MCP tools a tool search loaded (`toolsChanged.loaded`), in order.
    pub loaded_tools: Vec<String>,
    /// Problems met while loading (torn line, unreadable entries), for the log.
    pub warnings: Vec<String>,
    /// Where the last complete line ends: a torn tail after it is cut before appending.
    pub valid_len: u64,
    /// The last line is a readable entry without its `\n` (kept; the newline is added).
    pub missing_newline: bool,
    /// `clientRequestId` → run id of the most recent prompts that carried one, oldest first.
    pub request_ids: Vec<(String, String)>,
    /// Steers queued for `unfinished_run` and not delivered, in order.
    pub queued_steers: Vec<String>,
    /// Follow-ups queued for `unfinished_run` and not delivered, in order.
    pub queued_follow_ups: Vec<String>,
    /// The clearings and compactions recorded, applied in order.
    pub context: agentd_knowledge::context::ContextState,
    /// The first prompt's preview (`protocol::session::preview_of`), for listings.
    pub preview: Option<String>,
    /// What `unfinished_run` had done: its steps, resumes and approvals.
    pub progress: RunProgress,
    /// When the file was last written: about when the daemon stopped, if a run was active.
    pub modified: Option<std::time::SystemTime>,
}

/// `clientRequestId`s remembered per session for idempotent prompts (also across restarts).
pub const REMEMBERED_REQUEST_IDS: usize = 256;

/// One item of a replay read from a session file (`session::replay::read_page`).
#[derive(Clone, Debug, PartialEq)]
#[expect(
    clippy::large_enum_variant,
    reason = "almost every item is an event; boxing them would only add allocations"
)]
pub enum Replayed {
    Event(u64, Event),
    /// Seqs `from..=to` are not in the file: a damaged line, or an event the daemon could not
    /// write (disk full).
    Missing {
        from: u64,
        to: u64,
    },
}

/// The file of session `id` in `dir`.
pub fn session_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.jsonl"))
}

/// Encode an entry as one line, `\n` included.
pub fn encode(entry: &Entry) -> Result<String> {
    line_of(entry)
}

/// Encode an event entry without cloning the event.
pub fn encode_event(seq: u64, event: &Event) -> Result<String> {
    #[derive(Serialize)]
    #[serde(tag = "type", rename = "event")]
    struct EventLine<'a> {
        seq: u64,
        event: &'a Event,
    }
    line_of(&EventLine { seq, event })
}

/// Encode a message entry without cloning the message.
pub fn encode_message(message: &Message) -> Result<String> {
    #[derive(Serialize)]
    #[serde(tag = "type", rename = "message")]
    struct MessageLine<'a> {
        message: &'a Message,
    }
    line_of(&MessageLine { message })
}

fn line_of<T: Serialize>(value: &T) -> Result<String> {
    let mut line = serde_json::to_string(value).context("cannot encode a session entry")?;
    line.push('\n');
    Ok(line)
}

/// Load a whole session file. Blocking: call from `spawn_blocking`.
pub fn load(path: &Path) -> Result<LoadedSession> {
    let file = agentd_core::regular_file::open(path)?;
    let metadata = file
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?;
    let file_len = metadata.len();
    let reader = std::io::BufReader::new(file);
    let mut lines = reader.split(b'\n').peekable();
    let first = lines
        .next()
        .transpose()?
        .with_context(|| format!("{} is empty", path.display()))?;
    // Bytes read so far, each line with its newline.
    let mut offset = first.len() as u64 + 1;
    let header = match parse_header(&first) {
        Ok(Some(header)) => known_format(header)?,
        _ => bail!("{}: the first line is not a session header", path.display()),
    };
    let mut loaded = LoadedSession {
        header,
        history: Vec::new(),
        last_seq: 0,
        unfinished_run: None,
        usage: Default::default(),
        cost_usd: None,
        unresolved_approvals: Vec::new(),
        session_allow_rules: Vec::new(),
        loaded_tools: Vec::new(),
        warnings: Vec::new(),
        valid_len: file_len.min(offset),
        missing_newline: offset > file_len,
        request_ids: Vec::new(),
        queued_steers: Vec::new(),
        queued_follow_ups: Vec::new(),
        context: Default::default(),
        preview: None,
        progress: RunProgress::default(),
        modified: metadata.modified().ok(),
    };
    let mut settings = SessionSettings::of(&loaded.header);
    let mut line_number = 1;
    while let Some(line) = lines.next() {
        line_number += 1;
        let line = line?;
        let start = offset;
        offset += line.len() as u64 + 1;
        // The last line lacks its newline when the file ends inside it.
        let unterminated = offset > file_len;
        if !unterminated {
            loaded.valid_len = offset;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let is_last = lines.peek().is_none();
        let parsed = serde_json::from_slice::<Entry>(&line);
        if unterminated {
            // A readable entry missing only its newline is kept; a torn one is cut off.
            loaded.missing_newline = parsed.is_ok();
            loaded.valid_len = if parsed.is_ok() { file_len } else { start };
        }
        match parsed {
            Ok(Entry::Message { message }) => loaded.history.push(message),
            Ok(Entry::Event { seq, event }) => {
                loaded.last_seq = loaded.last_seq.max(seq);
                if matches!(event, Event::RunStarted { .. }) {
                    loaded.progress = RunProgress::default();
                }
                match &event {
                    Event::SessionCreated { .. } => {
                        // A fork's own `sessionCreated` follows what it holds of its source
                        // (`store::fork`): its usage, its prompts' ids and its approvals are
                        // its own from here (the source's pending ones stay the source's).
                        loaded.usage = Default::default();
                        loaded.cost_usd = None;
                        loaded.request_ids.clear();
                        loaded.unresolved_approvals.clear();
                    }
                    Event::RunStarted {
                        run_id,
                        client_request_id,
                        prompt,
                        ..
                    } => {
                        if loaded.preview.is_none() {
                            loaded.preview = Some(protocol::session::preview_of(prompt));
                        }
                        loaded.unfinished_run = Some(run_id.clone());
                        loaded.queued_steers.clear();
                        loaded.queued_follow_ups.clear();
                        remember_request(&mut loaded.request_ids, client_request_id, run_id);
                    }
                    Event::FollowUpQueued {
                        run_id,
                        text,
                        client_request_id,
                        ..
                    } => {
                        if loaded.unfinished_run.as_deref() == Some(run_id.as_str()) {
                            loaded.queued_follow_ups.push(text.clone());
                        }
                        remember_request(&mut loaded.request_ids, client_request_id, run_id);
                    }
                    Event::SteerQueued { run_id, text }
                        if loaded.unfinished_run.as_deref() == Some(run_id.as_str()) =>
                    {
                        loaded.queued_steers.push(text.clone());
                    }
                    Event::SteerDelivered { run_id, text }
                        if loaded.unfinished_run.as_deref() == Some(run_id.as_str()) =>
                    {
                        if let Some(position) = loaded.queued_steers.iter().position(|t| t == text)
                        {
                            loaded.queued_steers.remove(position);
                        }
                    }
                    Event::MessageCompleted {
                        run_id,
                        content,
                        kind: Some(protocol::event::UserMessageKind::FollowUp),
                        ..
                    } if loaded.unfinished_run.as_deref() == Some(run_id.as_str()) => {
                        if let Some(position) =
                            loaded.queued_follow_ups.iter().position(|t| t == content)
                        {
                            loaded.queued_follow_ups.remove(position);
                        }
                    }
                    Event::RunFinished { run_id, .. }
                        if loaded.unfinished_run.as_deref() == Some(run_id.as_str()) =>
                    {
                        loaded.unfinished_run = None;
                        loaded.queued_steers.clear();
                        loaded.queued_follow_ups.clear();
                    }
                    Event::ApprovalRequested { run_id, approval } => {
                        loaded.unresolved_approvals.push((
                            run_id.clone(),
                            approval.approval_id.clone(),
                            approval.tool_call_id.clone(),
                        ));
                    }
                    Event::ApprovalResolved {
                        approval_id,
                        session_rule,
                        ..
                    } => {
                        loaded
                            .unresolved_approvals
                            .retain(|(_, id, _)| id != approval_id);
                        if let Some(rule) = session_rule {
                            loaded.session_allow_rules.push(rule.clone());
                        }
                    }
                    Event::UsageUpdated {
                        total,
                        total_cost_usd,
                        ..
                    } => {
                        loaded.usage = agentd_core::conversation::wire::usage_from(total);
                        loaded.cost_usd = *total_cost_usd;
                    }
                    Event::SessionUpdated { .. } => {
                        settings.apply(&event);
                    }
                    Event::ToolsChanged { loaded: names, .. } => {
                        loaded.loaded_tools.extend(names.iter().cloned());
                    }
                    _ => {}
                }
                loaded
                    .progress
                    .note(loaded.unfinished_run.as_deref(), &event);
            }
            Ok(Entry::Context { change }) => loaded.context.apply(&change),
            Ok(Entry::Gap { to, .. }) => loaded.last_seq = loaded.last_seq.max(to),
            Ok(Entry::Header(_)) | Ok(Entry::Unknown) => {}
            Err(err) if is_last => loaded.warnings.push(format!(
                "{}:{line_number}: skipped a torn last line, cut before appending ({err})",
                path.display()
            )),
            Err(err) => loaded.warnings.push(format!(
                "{}:{line_number}: skipped an unreadable entry ({err})",
                path.display()
            )),
        }
    }
    settings.write_into(&mut loaded.header);
    Ok(loaded)
}

/// Remember `request_id` → `run_id`, keeping the newest [`REMEMBERED_REQUEST_IDS`].
fn remember_request(
    remembered: &mut Vec<(String, String)>,
    request_id: &Option<String>,
    run_id: &str,
) {
    let Some(request_id) = request_id else {
        return;
    };
    if remembered.len() >= REMEMBERED_REQUEST_IDS {
        remembered.remove(0);
    }
    remembered.push((request_id.clone(), run_id.to_owned()));
}

/// What listing a session needs, read from the end of its file without loading it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub last_seq: u64,
    /// The session's token usage after its last model call.
    pub usage: agentd_core::conversation::Usage,
}

/// Bytes read from the end of a session file for its [`Summary`].
const SUMMARY_TAIL_BYTES: u64 = 256 * 1024;

/// The summary of a session file from its last [`SUMMARY_TAIL_BYTES`]; `None` when the tail
/// does not say (a last model call further back): load the session instead. Blocking.
pub fn read_summary(path: &Path) -> Result<Option<Summary>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = agentd_core::regular_file::open(path)?;
    let len = file.metadata()?.len();
    let start = len.saturating_sub(SUMMARY_TAIL_BYTES);
    file.seek(SeekFrom::Start(start))?;
    let mut tail = Vec::with_capacity((len - start) as usize);
    file.read_to_end(&mut tail)?;
    let whole_file = start == 0;
    let mut lines: Vec<&[u8]> = tail.split(|&b| b == b'\n').collect();
    if !whole_file && !lines.is_empty() {
        // The first line is cut by the seek.
        lines.remove(0);
    }
    let mut last_seq = None;
    let mut usage = None;
    for line in lines.iter().rev() {
        if !line.starts_with(br#"{"type":"event""#) {
            continue;
        }
        // A torn last line does not parse and is skipped, as on load.
        let Ok(Entry::Event { seq, event }) = serde_json::from_slice::<Entry>(line) else {
            continue;
        };
        last_seq.get_or_insert(seq);
        match event {
            Event::UsageUpdated { total, .. } => {
                usage = Some(agentd_core::conversation::wire::usage_from(&total));
                break;
            }
            // A fork counts its usage from its own `sessionCreated` (as `load` does).
            Event::SessionCreated { .. } => {
                usage = Some(Default::default());
                break;
            }
            _ => {}
        }
    }
    Ok(match (usage, whole_file) {
        (Some(usage), _) => Some(Summary {
            last_seq: last_seq.unwrap_or(0),
            usage,
        }),
        (None, true) => Some(Summary {
            last_seq: last_seq.unwrap_or(0),
            usage: Default::default(),
        }),
        (None, false) => None,
    })
}

/// What a listing shows of a session beyond its [`Summary`]: the first prompt's preview and
/// the settings as `sessionUpdated` events left them. Reads the file line by line, parsing only
/// the lines of those two event types. Blocking.
pub fn read_listing_facts(path: &Path) -> Result<(Option<String>, SessionSettings)> {
    let file = agentd_core::regular_file::open(path)?;
    let mut lines = std::io::BufReader::new(file).split(b'\n');
    let first = lines
        .next()
        .transpose()?
        .with_context(|| format!("{} is empty", path.display()))?;
    let header = match parse_header(&first) {
        Ok(Some(header)) => known_format(header)?,
        _ => bail!("{}: the first line is not a session header", path.display()),
    };
    let mut settings = SessionSettings::of(&header);
    let mut preview = None;
    let contains = |line: &[u8], needle: &[u8]| line.windows(needle.len()).any(|w| w == needle);
    for line in lines {
        let line = line?;
        let wanted = (preview.is_none() && contains(&line, br#""type":"runStarted""#))
            || contains(&line, br#""type":"sessionUpdated""#);
        if !wanted {
            continue;
        }
        match serde_json::from_slice::<Entry>(&line) {
            Ok(Entry::Event {
                event: Event::RunStarted { prompt, .. },
                ..
            }) => preview = preview.or_else(|| Some(protocol::session::preview_of(&prompt))),
            Ok(Entry::Event { event, .. }) => {
                settings.apply(&event);
            }
            _ => {}
        }
    }
    Ok((preview, settings))
}

#[cfg(test)]
mod tests;
