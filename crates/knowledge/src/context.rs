//! What the model is sent of a session's history (DESIGN §5 step 8): the model's context
//! window, the soft and hard limits, which old tool results a clearing replaces, where a
//! compaction cuts, and the view a request is built from. Pure logic: the history stays whole
//! (in the session file and `session/get`); `ContextState` records the deliberate changes
//! (`ContextChange`) and applies them to each request.

use std::borrow::Cow;
use std::collections::HashSet;

use agentd_core::conversation::{ContextChange, Message};

/// The window assumed for a model neither the config nor [`KNOWN_WINDOWS`] names.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// Context windows of well-known models, by name prefix (the first match wins, so longer
/// prefixes come first). A provider's `context_window` in config.toml overrides this.
const KNOWN_WINDOWS: &[(&str, u64)] = &[
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-5", 400_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("claude-", 200_000),
];

/// Tool results kept as they are by a clearing: the newest ones, which the model most likely
/// still works from.
pub(crate) const KEEP_RECENT_TOOL_RESULTS: usize = 3;

/// User turns (and everything after them) a compaction keeps verbatim.
pub(crate) const KEEP_LAST_USER_TURNS: usize = 2;

/// What the model reads instead of a cleared tool result.
pub(crate) const CLEARED_PLACEHOLDER: &str =
    "[this tool result was cleared to save context; run the tool again if you need it]";

/// Opens the user message that carries a compaction's summary.
pub(crate) const SUMMARY_INTRO: &str = "[summary of the earlier conversation, which was compacted]";

/// The assistant's answer to the summary message, so roles keep alternating.
pub(crate) const SUMMARY_ACK: &str = "Understood; I continue from that summary.";

/// The summariser's instructions.
pub const SUMMARY_PROMPT: &str = "You summarise the history of an agent's conversation so the agent can go on without it. \
Keep: the user's goal and constraints, decisions made and why, steps done, the files touched \
(paths) and important values, and the problems still open. Drop: greetings, repetition and the \
raw text of tool output. Write short bullet points, at most about 500 words, and output only \
the summary.";

/// Each message is cut to this many chars in the text given to the summariser, so the summary
/// request stays far smaller than the history it replaces.
pub(crate) const SUMMARY_MESSAGE_CHARS: usize = 4_000;

/// The context window of `model`: `configured`, else [`KNOWN_WINDOWS`], else
/// [`DEFAULT_CONTEXT_WINDOW`]. A `vendor/` prefix (OpenRouter style) is ignored.
pub fn context_window(model: &str, configured: Option<u64>) -> u64 {
    if let Some(window) = configured.filter(|window| *window > 0) {
        return window;
    }
    let name = model.rsplit('/').next().unwrap_or(model).to_lowercase();
    KNOWN_WINDOWS
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|(_, window)| *window)
        .unwrap_or(DEFAULT_CONTEXT_WINDOW)
}

/// The token thresholds of one model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextLimits {
    /// The model's context window, in tokens.
    pub window: u64,
    /// Prompt tokens at or over this clear old tool results before the next call.
    pub soft: u64,
    /// Prompt tokens at or over this compact the history before the next call.
    pub hard: u64,
}

impl ContextLimits {
    /// Limits as percents of `window`.
    pub fn new(window: u64, soft_percent: u8, hard_percent: u8) -> Self {
        let part = |percent: u8| window.saturating_mul(u64::from(percent)) / 100;
        ContextLimits {
            window,
            soft: part(soft_percent),
            hard: part(hard_percent),
        }
    }

    /// The most text given to the summariser: about half the window at four chars a token,
    /// so the summary request itself fits whatever the history's length.
    pub fn summary_input_chars(&self) -> usize {
        usize::try_from(self.window.saturating_mul(2)).unwrap_or(usize::MAX)
    }
}

/// The deliberate changes to what the model is sent, and when the next ones may happen.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContextState {
    /// Tool calls whose results are sent as [`CLEARED_PLACEHOLDER`].
    pub(crate) cleared: HashSet<String>,
    /// The latest compaction: the history before `first_kept` is sent as its summary.
    pub(crate) compaction: Option<Compaction>,
    /// Prompt tokens of the last request (0 until one is made after loading).
    pub last_prompt_tokens: u64,
    /// A clearing fired and the prompt has not gone back under the soft limit since: the next
    /// clearing waits (clearing breaks the provider's prefix cache, so it is done rarely).
    pub soft_fired: bool,
    /// The same for compaction and the hard limit (also after a failed summary).
    pub hard_fired: bool,
}

/// The latest compaction of a session.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Compaction {
    pub(crate) summary: String,
    /// Index in the history of the first message sent verbatim.
    pub(crate) first_kept: usize,
}

impl ContextState {
    /// Apply a recorded change (as it is made, and again when the session file is loaded).
    pub fn apply(&mut self, change: &ContextChange) {
        match change {
            ContextChange::Cleared { tool_call_ids } => {
                self.cleared.extend(tool_call_ids.iter().cloned());
            }
            ContextChange::Compacted {
                summary,
                first_kept,
                ..
            } => {
                self.compaction = Some(Compaction {
                    summary: summary.clone(),
                    first_kept: *first_kept,
                });
            }
        }
    }

    /// The latest compaction's summary, if the history was compacted.
    pub fn summary(&self) -> Option<&str> {
        self.compaction
            .as_ref()
            .map(|compaction| compaction.summary.as_str())
    }

    /// Note the prompt tokens of a request just made: going back under a limit allows the
    /// next clearing or compaction.
    pub fn note_prompt_tokens(&mut self, tokens: u64, limits: ContextLimits) {
        self.last_prompt_tokens = tokens;
        if tokens < limits.soft {
            self.soft_fired = false;
        }
        if tokens < limits.hard {
            self.hard_fired = false;
        }
    }

    /// Index of the first history message sent verbatim.
    fn first_kept(&self, history: &[Message]) -> usize {
        self.compaction
            .as_ref()
            .map_or(0, |compaction| compaction.first_kept.min(history.len()))
    }

    /// The messages a request carries: the summary (if compacted) and the messages after it,
    /// cleared results replaced by the placeholder.
    pub fn view<'a>(&self, history: &'a [Message]) -> Cow<'a, [Message]> {
        if self.compaction.is_none() && self.cleared.is_empty() {
            return Cow::Borrowed(history);
        }
        let first_kept = self.first_kept(history);
        let mut view = Vec::with_capacity(history.len() - first_kept + 2);
        if let Some(compaction) = &self.compaction {
            view.push(Message::user(format!(
                "{SUMMARY_INTRO}\n{}",
                compaction.summary
            )));
            view.push(Message::Assistant {
                content: SUMMARY_ACK.to_owned(),
                tool_calls: Vec::new(),
            });
        }
        view.extend(history[first_kept..].iter().map(|message| match message {
            Message::Tool {
                tool_call_id,
                tool_name,
                is_error,
                ..
            } if self.cleared.contains(tool_call_id) => Message::Tool {
                tool_call_id: tool_call_id.clone(),
                tool_name: tool_name.clone(),
                content: CLEARED_PLACEHOLDER.to_owned(),
                is_error: *is_error,
                images: Vec::new(),
            },
            other => other.clone(),
        }));
        Cow::Owned(view)
    }

    /// The tool calls a clearing would clear now: every result in the view but the
    /// [`KEEP_RECENT_TOOL_RESULTS`] newest, `[skill]` results and cleared ones aside.
    pub fn clearable(&self, history: &[Message]) -> Vec<String> {
        let results: Vec<&String> = history[self.first_kept(history)..]
            .iter()
            .filter_map(|message| match message {
                Message::Tool {
                    tool_call_id,
                    tool_name,
                    content,
                    ..
                } if !crate::skills::is_skill_result(tool_name, content) => Some(tool_call_id),
                _ => None,
            })
            .collect();
        let old = results.len().saturating_sub(KEEP_RECENT_TOOL_RESULTS);
        results[..old]
            .iter()
            .filter(|id| !self.cleared.contains(**id))
            .map(|id| (*id).clone())
            .collect()
    }

    /// Where a compaction cuts: the index of the oldest of the last [`KEEP_LAST_USER_TURNS`]
    /// user messages, when there is something before it to summarise. A cut before a user
    /// message never separates a tool call from its result (results follow their call before
    /// any user message).
    pub fn compaction_cut(&self, history: &[Message]) -> Option<usize> {
        let first_kept = self.first_kept(history);
        let users: Vec<usize> = (first_kept..history.len())
            .filter(|index| matches!(history[*index], Message::User { .. }))
            .collect();
        if users.len() <= KEEP_LAST_USER_TURNS {
            return None;
        }
        // Results follow their call before any user message, but a history repaired after a
        // failed write may differ: a cut that would separate them moves to an earlier turn.
        users[..=users.len() - KEEP_LAST_USER_TURNS]
            .iter()
            .rev()
            .copied()
            .find(|&cut| cut > first_kept && !separates_a_call(history, cut))
    }

    /// The text the summariser reads: the previous summary and the messages before `cut`, as
    /// the model saw them, each cut to [`SUMMARY_MESSAGE_CHARS`] and the whole to about `max_chars`
    /// (head and tail kept).
    pub fn summary_input(&self, history: &[Message], cut: usize, max_chars: usize) -> String {
        let mut lines = Vec::new();
        if let Some(compaction) = &self.compaction {
            lines.push(format!("[earlier summary]\n{}", compaction.summary));
        }
        let older = self.view(&history[..cut.min(history.len())]);
        // `view` of the prefix adds the summary again; skip it (already above).
        let skip = if self.compaction.is_some() { 2 } else { 0 };
        for message in older.iter().skip(skip) {
            let line = match message {
                Message::User { content, images } if images.is_empty() => {
                    format!("[user] {content}")
                }
                Message::User { content, images } => {
                    format!("[user] {content}\n[{} image(s) attached]", images.len())
                }
                Message::Assistant {
                    content,
                    tool_calls,
                } => {
                    let mut line = format!("[assistant] {content}");
                    for call in tool_calls {
                        line.push_str(&format!("\n[tool call] {}({})", call.name, call.arguments));
                    }
                    line
                }
                Message::Tool {
                    tool_name, content, ..
                } => format!("[tool result: {tool_name}] {content}"),
            };
            lines.push(
                agentd_core::truncate::truncate_middle(&line, SUMMARY_MESSAGE_CHARS).into_owned(),
            );
        }
        let input = lines.join("\n");
        match agentd_core::truncate::truncate_middle(&input, max_chars) {
            std::borrow::Cow::Borrowed(_) => input,
            std::borrow::Cow::Owned(cut) => cut,
        }
    }
}

/// Whether cutting `history` before `cut` would leave a tool call before it and its result
/// after it.
fn separates_a_call(history: &[Message], cut: usize) -> bool {
    let calls_before: HashSet<&str> = history[..cut]
        .iter()
        .flat_map(|message| match message {
            Message::Assistant { tool_calls, .. } => tool_calls.as_slice(),
            _ => &[],
        })
        .map(|call| call.id.as_str())
        .collect();
    history[cut..].iter().any(|message| {
        matches!(message, Message::Tool { tool_call_id, .. } if calls_before.contains(tool_call_id.as_str()))
    })
}

/// Prompt tokens of `view` estimated from `measured` tokens of `measured_view`: scaled by
/// their sizes as JSON (the system prompt and tools counted in both).
pub fn estimate_tokens(
    measured: u64,
    measured_bytes: usize,
    estimated_bytes: usize,
    fixed_bytes: usize,
) -> u64 {
    let before = (measured_bytes + fixed_bytes).max(1) as u128;
    let after = (estimated_bytes + fixed_bytes) as u128;
    if measured == 0 {
        // Nothing measured (e.g. right after loading): about four bytes per token.
        return (after / 4) as u64;
    }
    (u128::from(measured) * after / before) as u64
}

/// Size of `messages` as JSON, for [`estimate_tokens`].
pub fn json_bytes(messages: &[Message]) -> usize {
    serde_json::to_vec(messages).map_or(0, |bytes| bytes.len())
}

#[cfg(test)]
#[path = "context_tests.rs"]
mod tests;
