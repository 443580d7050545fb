//! The `task` tool's fork mode (`task {fork: true}`): a child that starts from its parent's
//! conversation so far instead of a fresh context. Its history is what the parent's requests
//! carry (clearings and compaction applied) up to the parent's message with the `task` call,
//! each call of that message given a result saying where the conversation forked; then its
//! run opens with the prompt. Its system prompt is the parent's, byte for byte, and it shares
//! the parent's prompt cache key; its tools, mode and limits are any child's (the definition's
//! filter, never `task`, `task_*`, `memory`, `todo_write`), so the tools part of the request
//! differs from the parent's.

use std::sync::Arc;

use agentd_core::conversation::Message;

use super::super::fork::{Written, add_seeded_lines, write_whole};
use super::super::{Session, SessionError, SessionManager};
use crate::store::{self, SessionHeader};

/// The result a forked child reads for the parent's `task` call that started it.
pub(super) const FORKED_HERE: &str = "forked here: you are the subagent this call started, \
    with this conversation so far; your task is in the next message. Do it and answer with \
    what you found or did: your last message goes back to the parent session.";

/// The result a forked child reads for the parent's other calls of the same message.
const NOT_RUN_HERE: &str = "forked here: this call runs in the parent session, not in this \
    subagent; its result stays there.";

/// The parent's conversation as a forked child starts with it: its messages as its requests
/// carry them, ending with its message whose `task` call is being run, every call of that
/// message answered.
pub(super) async fn parent_conversation(
    sessions: &Arc<SessionManager>,
    parent_id: &str,
) -> Result<Vec<Message>, String> {
    let parent = sessions
        .get(parent_id)
        .await
        .map_err(|err| format!("the parent session cannot be read for a fork: {err}"))?;
    let mut messages = {
        let state = parent.shared.lock();
        state.context.view(&state.history).into_owned()
    };
    // The parent's calls run after its message is in the history and before any result is.
    let calls = match messages.last() {
        Some(Message::Assistant { tool_calls, .. })
            if tool_calls.iter().any(|call| call.name == "task") =>
        {
            tool_calls.clone()
        }
        _ => {
            return Err(
                "fork mode starts a subagent from its parent's task call, and the parent's \
                 conversation does not end with one; start it without fork"
                    .to_owned(),
            );
        }
    };
    messages.extend(calls.into_iter().map(|call| {
        Message::Tool {
            content: if call.name == "task" {
                FORKED_HERE
            } else {
                NOT_RUN_HERE
            }
            .to_owned(),
            tool_call_id: call.id,
            tool_name: call.name,
            is_error: false,
            images: Vec::new(),
        }
    }));
    Ok(messages)
}

/// Whether `message` marks where a forked child's conversation forked: what comes before it
/// is its parent's (a child's final message is looked for after it).
pub(super) fn is_fork_point(message: &Message) -> bool {
    matches!(message, Message::Tool { content, .. } if content == FORKED_HERE)
}

impl SessionManager {
    /// A child session whose file starts with `messages` (written whole), loaded.
    pub(super) async fn add_seeded(
        &self,
        header: SessionHeader,
        messages: Vec<Message>,
    ) -> Result<Arc<Session>, SessionError> {
        let path = store::session_path(&self.deps.paths.sessions_dir, &header.id);
        let id = header.id.clone();
        let written = tokio::task::spawn_blocking(move || {
            let (bytes, events) = add_seeded_lines(&header, &messages)?;
            let settings = store::SessionSettings::of(&header);
            let entry = write_whole(&path, &bytes, events.len() as u64, None, settings)?;
            anyhow::Ok(Written {
                header,
                entry,
                events,
                first_seq: 1,
            })
        })
        .await
        .map_err(|err| SessionError::Internal(err.to_string()))?
        .map_err(|err| SessionError::Internal(format!("{err:#}")))?;
        self.add_written(written);
        self.get(&id).await
    }
}
