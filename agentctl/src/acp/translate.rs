//! What an editor sees of a daemon session: each daemon `Event` as ACP `session/update`s
//! (message and user chunks, tool calls with kinds, locations and diffs, plans, tasks). Pure:
//! no I/O, so every mapping is tested here.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, CurrentModeUpdate, Diff, Plan, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, SessionInfoUpdate, SessionUpdate, ToolCall, ToolCallContent, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use protocol::event::{Event, MessageRole};
use protocol::task::{TaskInfo, TaskKind, TaskStatus};
use protocol::todo::{TodoItem, TodoStatus};

/// Tool calls the model made whose results have not come yet (each was announced with its
/// arguments; `toolStarted` then only updates it). Bounded: a call never completed (a crash)
/// must not make the map grow for the life of the bridge.
pub const MAX_OPEN_TOOL_CALLS: usize = 1024;

/// The state that turns one session's events into ACP updates.
#[derive(Debug)]
pub struct Translator {
    /// The session's workspace: relative tool paths are shown from it.
    cwd: PathBuf,
    /// Ids of the open tool calls.
    calls: HashSet<String>,
    /// Whether the assistant message in progress was streamed as deltas (then its
    /// `messageCompleted` adds nothing; without deltas it carries the text).
    streamed: bool,
}

/// How a daemon event is being seen: live, or replayed by `session/load`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    Live,
    Replay,
}

impl Translator {
    pub fn new(cwd: impl Into<PathBuf>) -> Translator {
        Translator {
            cwd: cwd.into(),
            calls: HashSet::new(),
            streamed: false,
        }
    }

    /// The updates `event` becomes (none for events editors have no place for).
    pub fn updates(&mut self, event: &Event, moment: Moment) -> Vec<SessionUpdate> {
        match event {
            Event::MessageDelta { text, .. } => {
                self.streamed = true;
                vec![agent_text(text)]
            }
            Event::ThinkingDelta { text, .. } => vec![SessionUpdate::AgentThoughtChunk(
                ContentChunk::new(text.as_str().into()),
            )],
            // How full the context is after this model call (its prompt and its reply).
            Event::UsageUpdated {
                usage,
                context_window: Some(window),
                ..
            } => vec![SessionUpdate::UsageUpdate(UsageUpdate::new(
                usage.input_tokens.saturating_add(usage.output_tokens),
                *window,
            ))],
            Event::MessageCompleted {
                role: MessageRole::User,
                content,
                ..
            } => match moment {
                // Live, the editor shows what it sent itself.
                Moment::Live => Vec::new(),
                Moment::Replay => {
                    vec![SessionUpdate::UserMessageChunk(ContentChunk::new(
                        content.as_str().into(),
                    ))]
                }
            },
            Event::MessageCompleted {
                role: MessageRole::Assistant,
                content,
                tool_calls,
                ..
            } => {
                let mut updates = Vec::new();
                let streamed = std::mem::take(&mut self.streamed);
                if !content.is_empty() && (moment == Moment::Replay || !streamed) {
                    updates.push(agent_text(content));
                }
                for call in tool_calls {
                    let input = serde_json::from_str(&call.arguments)
                        .unwrap_or_else(|_| serde_json::Value::String(call.arguments.clone()));
                    updates.push(SessionUpdate::ToolCall(self.tool_call(
                        &call.id,
                        &call.name,
                        &input,
                        ToolCallStatus::Pending,
                    )));
                    if self.calls.len() < MAX_OPEN_TOOL_CALLS {
                        self.calls.insert(call.id.clone());
                    }
                }
                updates
            }
            Event::ToolStarted {
                tool_call_id,
                tool,
                summary,
                ..
            } => {
                if self.calls.contains(tool_call_id) {
                    let fields = ToolCallUpdateFields::new()
                        .status(ToolCallStatus::InProgress)
                        .title(title(tool, summary));
                    vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        tool_call_id.clone(),
                        fields,
                    ))]
                } else {
                    let call = ToolCall::new(tool_call_id.clone(), title(tool, summary))
                        .kind(tool_kind(tool))
                        .status(ToolCallStatus::InProgress);
                    vec![SessionUpdate::ToolCall(call)]
                }
            }
            Event::ToolProgress {
                tool_call_id,
                message,
                ..
            } => {
                let fields = ToolCallUpdateFields::new().content(vec![text_content(message)]);
                vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    tool_call_id.clone(),
                    fields,
                ))]
            }
            Event::ToolCompleted {
                tool_call_id,
                tool,
                output,
                is_error,
                ..
            } => {
                let was_open = self.calls.remove(tool_call_id);
                let status = if *is_error {
                    ToolCallStatus::Failed
                } else {
                    ToolCallStatus::Completed
                };
                let mut fields = ToolCallUpdateFields::new()
                    .status(status)
                    .raw_output(serde_json::json!({ "output": output }));
                // An edit keeps its diff on success; anything else shows what the model read.
                if *is_error || tool_kind(tool) != ToolKind::Edit || !was_open {
                    fields = fields.content(vec![text_content(output)]);
                }
                vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    tool_call_id.clone(),
                    fields,
                ))]
            }
            Event::TodoUpdated { items, .. } => vec![SessionUpdate::Plan(plan(items))],
            Event::TaskStarted { task } => vec![SessionUpdate::ToolCall(
                ToolCall::new(task_call_id(task), task_title(task))
                    .kind(task_kind(task))
                    .status(task_status(task)),
            )],
            Event::TaskUpdated { task }
            | Event::TaskResumed { task }
            | Event::TaskFinished { task } => {
                let mut fields = ToolCallUpdateFields::new().status(task_status(task));
                if let Some(text) = task.result.as_ref().or(task.error.as_ref()) {
                    fields = fields.content(vec![text_content(text)]);
                }
                vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    task_call_id(task),
                    fields,
                ))]
            }
            _ => Vec::new(),
        }
    }

    /// The ACP tool call of a call the model made: kind from the tool's name, the paths it
    /// touches, and for edits the diff.
    pub fn tool_call(
        &self,
        id: &str,
        tool: &str,
        input: &serde_json::Value,
        status: ToolCallStatus,
    ) -> ToolCall {
        ToolCall::new(id.to_owned(), call_title(tool, input))
            .kind(tool_kind(tool))
            .status(status)
            .locations(self.locations(input))
            .content(self.diff(tool, input).into_iter().collect())
            .raw_input(input.clone())
    }

    /// The same as an update (for a permission request): kind, title, locations, diff.
    pub fn tool_call_update(
        &self,
        id: &str,
        tool: &str,
        input: &serde_json::Value,
    ) -> ToolCallUpdate {
        let fields = ToolCallUpdateFields::new()
            .kind(tool_kind(tool))
            .title(call_title(tool, input))
            .locations(self.locations(input))
            .content(self.diff(tool, input).into_iter().collect::<Vec<_>>())
            .raw_input(input.clone());
        ToolCallUpdate::new(id.to_owned(), fields)
    }

    fn absolute(&self, path: &str) -> PathBuf {
        let path = Path::new(path);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.cwd.join(path)
        }
    }

    fn locations(&self, input: &serde_json::Value) -> Vec<ToolCallLocation> {
        let Some(path) = input.get("path").and_then(|path| path.as_str()) else {
            return Vec::new();
        };
        let line = input
            .get("offset")
            .or_else(|| input.get("line"))
            .and_then(serde_json::Value::as_u64)
            .and_then(|line| u32::try_from(line).ok());
        vec![ToolCallLocation::new(self.absolute(path)).line(line)]
    }

    fn diff(&self, tool: &str, input: &serde_json::Value) -> Option<ToolCallContent> {
        let path = self.absolute(input.get("path")?.as_str()?);
        let field = |name: &str| input.get(name).and_then(|v| v.as_str()).map(str::to_owned);
        let diff = match tool {
            "write_file" => Diff::new(path, field("content")?),
            "edit_file" => Diff::new(path, field("newText")?).old_text(field("oldText")),
            _ => return None,
        };
        Some(ToolCallContent::Diff(diff))
    }
}

/// The updates of a `sessionUpdated` event (`session/update` by any client: a newer daemon's
/// event, read from its JSON): the current mode and the title.
pub fn session_updated(event: &serde_json::Value) -> Vec<SessionUpdate> {
    let mut updates = Vec::new();
    if let Some(mode) = event.get("permissionMode").and_then(|m| m.as_str()) {
        updates.push(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
            mode.to_owned(),
        )));
    }
    if let Some(title) = event.get("title").and_then(|t| t.as_str()) {
        let title = (!title.is_empty()).then(|| title.to_owned());
        updates.push(SessionUpdate::SessionInfoUpdate(
            SessionInfoUpdate::new().title(title),
        ));
    }
    updates
}

/// ACP's kind of a daemon tool, from its name.
pub fn tool_kind(tool: &str) -> ToolKind {
    match tool {
        "read_file" | "load_skill" => ToolKind::Read,
        "edit_file" | "write_file" => ToolKind::Edit,
        "run_shell" => ToolKind::Execute,
        "grep" | "glob" | "list_dir" => ToolKind::Search,
        "fetch_url" => ToolKind::Fetch,
        "todo_write" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

fn agent_text(text: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(text)))
}

fn text_content(text: &str) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::from(text))
}

/// `tool: summary`, or the tool alone when the summary is empty.
fn title(tool: &str, summary: &str) -> String {
    if summary.is_empty() {
        tool.to_owned()
    } else {
        format!("{tool}: {summary}")
    }
}

/// A call's title before the daemon summarised it: the command, path, pattern or URL.
fn call_title(tool: &str, input: &serde_json::Value) -> String {
    let summary = ["command", "path", "pattern", "url", "description"]
        .iter()
        .find_map(|key| input.get(*key).and_then(|v| v.as_str()))
        .unwrap_or_default();
    let first_line = summary.lines().next().unwrap_or_default();
    title(tool, first_line)
}

fn plan(items: &[TodoItem]) -> Plan {
    Plan::new(
        items
            .iter()
            .map(|item| {
                let status = match item.status {
                    TodoStatus::Pending => PlanEntryStatus::Pending,
                    TodoStatus::InProgress => PlanEntryStatus::InProgress,
                    TodoStatus::Completed => PlanEntryStatus::Completed,
                };
                PlanEntry::new(item.content.clone(), PlanEntryPriority::Medium, status)
            })
            .collect(),
    )
}

/// A task shows as a tool call of its own, keyed by the task id.
fn task_call_id(task: &TaskInfo) -> String {
    task.task_id.clone()
}

fn task_title(task: &TaskInfo) -> String {
    match &task.agent_type {
        Some(agent) => format!("task ({agent}): {}", task.description),
        None => format!("task: {}", task.description),
    }
}

fn task_kind(task: &TaskInfo) -> ToolKind {
    match task.kind {
        TaskKind::Shell => ToolKind::Execute,
        TaskKind::Subagent => ToolKind::Other,
    }
}

fn task_status(task: &TaskInfo) -> ToolCallStatus {
    match task.status {
        TaskStatus::Pending => ToolCallStatus::Pending,
        TaskStatus::Running => ToolCallStatus::InProgress,
        TaskStatus::Completed => ToolCallStatus::Completed,
        _ => ToolCallStatus::Failed,
    }
}

#[cfg(test)]
#[path = "translate_tests.rs"]
mod tests;
