//! The points of a session file a rewind or a diff can go to: its runs (with their prompts)
//! and its checkpoints, read from the event lines that name them; other lines are not decoded.

use protocol::checkpoint::CheckpointReason;
use protocol::event::Event;

use super::Entry;

/// A `checkpointed` event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    pub seq: u64,
    pub run_id: Option<String>,
    pub checkpoint: String,
    pub reason: CheckpointReason,
}

/// A run of the session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunPoint {
    pub run_id: String,
    pub started_seq: u64,
    pub prompt: String,
    pub finished: bool,
}

/// A session's runs and checkpoints, in the file's order.
#[derive(Debug, Default)]
pub struct Points {
    pub runs: Vec<RunPoint>,
    pub checkpoints: Vec<Point>,
}

impl Points {
    /// The checkpoint taken at `run_id`'s start.
    pub fn run_start(&self, run_id: &str) -> Option<&Point> {
        self.checkpoints.iter().find(|point| {
            point.run_id.as_deref() == Some(run_id) && point.reason == CheckpointReason::RunStart
        })
    }

    /// The last checkpoint `run_id` recorded.
    pub fn run_end(&self, run_id: &str) -> Option<&Point> {
        self.checkpoints
            .iter()
            .rev()
            .find(|point| point.run_id.as_deref() == Some(run_id))
    }

    /// The last checkpoint at or before `seq`.
    pub fn at_or_before(&self, seq: u64) -> Option<&Point> {
        self.checkpoints.iter().rev().find(|point| point.seq <= seq)
    }
}

/// The points of a session file's whole lines (`bytes`).
pub fn read(bytes: &[u8]) -> Points {
    let mut points = Points::default();
    for line in bytes.split(|b| *b == b'\n') {
        if !(contains(line, b"\"runStarted\"")
            || contains(line, b"\"runFinished\"")
            || contains(line, b"\"checkpointed\""))
        {
            continue;
        }
        let Ok(Entry::Event { seq, event }) = serde_json::from_slice::<Entry>(line) else {
            continue;
        };
        match event {
            Event::RunStarted { run_id, prompt, .. } => points.runs.push(RunPoint {
                run_id,
                started_seq: seq,
                prompt: first_line(&prompt),
                finished: false,
            }),
            Event::RunFinished { run_id, .. } => {
                if let Some(run) = points
                    .runs
                    .iter_mut()
                    .rev()
                    .find(|run| run.run_id == run_id)
                {
                    run.finished = true;
                }
            }
            Event::Checkpointed {
                run_id,
                checkpoint,
                reason,
                ..
            } => points.checkpoints.push(Point {
                seq,
                run_id,
                checkpoint,
                reason,
            }),
            _ => {}
        }
    }
    points
}

fn contains(line: &[u8], needle: &[u8]) -> bool {
    line.windows(needle.len()).any(|window| window == needle)
}

/// The first non-empty line of a prompt, at most 120 characters.
fn first_line(prompt: &str) -> String {
    let line = prompt
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("");
    match line.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}
