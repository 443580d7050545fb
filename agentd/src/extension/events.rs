//! Extensions as one interceptor of a session's runs (`agentd_agent::intercept`): each point
//! becomes `extension/event` requests to the live extensions in scope that listed the event,
//! all at once, and their answers become one `Outcome`. A prompt is `input` then
//! `beforeAgentStart`, a request's messages `context`, its body `beforeProviderRequest`, a
//! tool call `toolCall`, its result `toolResult`; a streaming answer is watched through
//! `messageUpdate` (pieces joined while an answer is awaited, so the stream never waits). An
//! extension that fails, is late or answers junk is skipped with a warning.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::{Extension, Extensions, PeerError};
use agentd_agent::intercept::{At, Interceptor, Outcome, Point, StreamFeed, StreamWatch};
use agentd_core::conversation::{Message, ToolCall};
use protocol::event::Event;
use protocol::extension::{ExtensionEventKind as Kind, ExtensionEventParams, ExtensionEventResult};
use protocol::session::HistoryMessage;

/// The extensions of one session's runs.
pub(super) struct ExtensionEvents {
    pub(super) extensions: Arc<Extensions>,
    pub(super) cwd: PathBuf,
    pub(super) session_id: String,
}

impl ExtensionEvents {
    /// The live extensions in scope that listen to `kind`.
    fn listeners(&self, kind: Kind) -> Vec<Arc<Extension>> {
        self.extensions
            .in_scope(&self.cwd)
            .into_iter()
            .filter(|one| one.listens(kind))
            .collect()
    }

    fn params(&self, kind: Kind, extension: &Extension, at: At<'_>) -> ExtensionEventParams {
        ExtensionEventParams {
            event: kind,
            extension_id: extension.id.clone(),
            session_id: self.session_id.clone(),
            run_id: at.run_id.map(str::to_owned),
            text: None,
            messages: None,
            body: None,
            tool_call_id: None,
            tool: None,
            arguments: None,
            content: None,
            is_error: None,
            delta: None,
            length: None,
        }
    }

    /// Sends one event to one extension; Err is the warning the session gets.
    async fn send(
        &self,
        extension: &Extension,
        params: ExtensionEventParams,
    ) -> Result<ExtensionEventResult, String> {
        let kind = params.event;
        extension
            .ask(
                protocol::extension::EVENT,
                params,
                self.extensions.call_timeout,
            )
            .await
            .map_err(|err| skipped(extension, kind, &err))
    }

    /// What one extension says at `point`.
    async fn one(&self, extension: Arc<Extension>, at: At<'_>, point: &Point<'_>) -> Outcome {
        let mut outcome = Outcome::default();
        match point {
            Point::UserPrompt { text } => {
                let mut text = (*text).to_owned();
                if extension.listens(Kind::Input) {
                    let params = ExtensionEventParams {
                        text: Some(text.clone()),
                        ..self.params(Kind::Input, &extension, at)
                    };
                    match self.send(&extension, params).await {
                        Ok(said) => {
                            if let Some(reason) = said.block {
                                outcome.block =
                                    Some(format!("extension {:?}: {reason}", extension.name));
                                return outcome;
                            }
                            if let Some(replaced) = said.text {
                                text = replaced.clone();
                                outcome.replace_text = Some(replaced);
                            }
                        }
                        Err(warning) => outcome.warnings.push(warning),
                    }
                }
                if extension.listens(Kind::BeforeAgentStart) {
                    let params = ExtensionEventParams {
                        text: Some(text),
                        ..self.params(Kind::BeforeAgentStart, &extension, at)
                    };
                    match self.send(&extension, params).await {
                        Ok(said) => outcome.context.extend(said.context),
                        Err(warning) => outcome.warnings.push(warning),
                    }
                }
            }
            Point::Request { messages } => {
                let params = ExtensionEventParams {
                    messages: Some(
                        messages
                            .iter()
                            .map(agentd_core::conversation::wire::history_message)
                            .collect(),
                    ),
                    ..self.params(Kind::Context, &extension, at)
                };
                match self.send(&extension, params).await {
                    Ok(said) => {
                        outcome.messages = said
                            .messages
                            .map(|messages| messages.into_iter().map(message_of).collect());
                    }
                    Err(warning) => outcome.warnings.push(warning),
                }
            }
            Point::ProviderRequest { body } => {
                let params = ExtensionEventParams {
                    body: Some((*body).clone()),
                    ..self.params(Kind::BeforeProviderRequest, &extension, at)
                };
                match self.send(&extension, params).await {
                    Ok(said) => {
                        outcome.request_body = said.patch.map(|patch| {
                            let mut patched = (*body).clone();
                            merge_patch(&mut patched, patch);
                            patched
                        });
                    }
                    Err(warning) => outcome.warnings.push(warning),
                }
            }
            Point::ToolCall { call } => {
                let params = ExtensionEventParams {
                    tool_call_id: Some(call.id.clone()),
                    tool: Some(call.name.clone()),
                    arguments: Some(arguments_of(call)),
                    ..self.params(Kind::ToolCall, &extension, at)
                };
                match self.send(&extension, params).await {
                    Ok(said) => {
                        outcome.block = said.block.map(|reason| {
                            format!("blocked by the extension {:?}: {reason}", extension.name)
                        });
                        match said.arguments {
                            Some(arguments) if arguments.is_object() => {
                                outcome.updated_input = Some(arguments);
                            }
                            Some(_) => outcome.warnings.push(format!(
                                "the extension {:?} answered `toolCall` with arguments that are not an object; the call's own were kept",
                                extension.name
                            )),
                            None => {}
                        }
                    }
                    Err(warning) => outcome.warnings.push(warning),
                }
            }
            Point::ToolResult { call, output } => {
                let params = ExtensionEventParams {
                    tool_call_id: Some(call.id.clone()),
                    tool: Some(call.name.clone()),
                    arguments: Some(arguments_of(call)),
                    content: Some(output.content.clone()),
                    is_error: Some(output.is_error),
                    ..self.params(Kind::ToolResult, &extension, at)
                };
                match self.send(&extension, params).await {
                    Ok(said) => outcome.replace_text = said.content,
                    Err(warning) => outcome.warnings.push(warning),
                }
            }
            _ => {}
        }
        outcome
    }

    /// Watches one streaming answer for the `messageUpdate` listeners: sends each the text
    /// streamed since its previous update (joined while it was answering), and resolves with
    /// the reason of the first `cut`. A listener that fails is warned about and left out for
    /// the rest of the answer.
    async fn watch(
        &self,
        at: At<'_>,
        mut listeners: Vec<Arc<Extension>>,
        mut pieces: tokio::sync::mpsc::Receiver<String>,
    ) -> Option<String> {
        let mut length: u64 = 0;
        while let Some(mut delta) = pieces.recv().await {
            while let Ok(more) = pieces.try_recv() {
                delta.push_str(&more);
            }
            length = length.saturating_add(delta.chars().count() as u64);
            let asks = listeners.iter().map(|extension| {
                let params = ExtensionEventParams {
                    delta: Some(delta.clone()),
                    length: Some(length),
                    ..self.params(Kind::MessageUpdate, extension, at)
                };
                self.send(extension, params)
            });
            let said = futures::future::join_all(asks).await;
            let mut kept = Vec::with_capacity(listeners.len());
            for (extension, said) in listeners.into_iter().zip(said) {
                match said {
                    Ok(said) if said.cut => {
                        let reason = said.reason.unwrap_or_else(|| "no reason given".to_owned());
                        return Some(format!(
                            "the extension {:?} cut it off: {reason}",
                            extension.name
                        ));
                    }
                    Ok(_) => kept.push(extension),
                    Err(warning) => {
                        let _ = at.log.append(Event::Warning { message: warning }).await;
                    }
                }
            }
            listeners = kept;
            if listeners.is_empty() {
                return None;
            }
        }
        None
    }
}

impl Interceptor for ExtensionEvents {
    fn intercept<'a>(&'a self, at: At<'a>, point: &'a Point<'a>) -> BoxFuture<'a, Outcome> {
        let kinds: &[Kind] = match point {
            Point::UserPrompt { .. } => &[Kind::Input, Kind::BeforeAgentStart],
            Point::Request { .. } => &[Kind::Context],
            Point::ProviderRequest { .. } => &[Kind::BeforeProviderRequest],
            Point::ToolCall { .. } => &[Kind::ToolCall],
            Point::ToolResult { .. } => &[Kind::ToolResult],
            _ => &[],
        };
        let listeners: Vec<Arc<Extension>> = self
            .extensions
            .in_scope(&self.cwd)
            .into_iter()
            .filter(|one| kinds.iter().any(|kind| one.listens(*kind)))
            .collect();
        Box::pin(async move {
            let said = futures::future::join_all(
                listeners
                    .into_iter()
                    .map(|extension| self.one(extension, at, point)),
            )
            .await;
            let mut outcome = Outcome::default();
            for one in said {
                outcome.merge(one);
            }
            outcome
        })
    }

    fn wants_provider_request(&self) -> bool {
        !self.listeners(Kind::BeforeProviderRequest).is_empty()
    }

    fn watch_stream<'a>(&'a self, at: At<'a>) -> Option<StreamWatch<'a>> {
        let listeners = self.listeners(Kind::MessageUpdate);
        if listeners.is_empty() {
            return None;
        }
        let (feed, pieces) = StreamFeed::channel();
        Some(StreamWatch {
            feed,
            cut: Box::pin(self.watch(at, listeners, pieces)),
        })
    }
}

/// The warning of an extension skipped at `kind`.
fn skipped(extension: &Extension, kind: Kind, err: &PeerError) -> String {
    format!(
        "the extension {:?} was skipped at `{}`: {err}",
        extension.name,
        kind.name()
    )
}

/// A call's arguments as JSON (its raw text when that is not JSON).
fn arguments_of(call: &ToolCall) -> serde_json::Value {
    serde_json::from_str(&call.arguments)
        .unwrap_or_else(|_| serde_json::Value::String(call.arguments.clone()))
}

/// A message an extension sent back (`context`), as the run's own. Images are not part of
/// the wire form: a tool result an extension sends back has none.
fn message_of(message: HistoryMessage) -> Message {
    match message {
        HistoryMessage::User { content, .. } => Message::user(content),
        HistoryMessage::Assistant {
            content,
            tool_calls,
        } => Message::Assistant {
            content,
            tool_calls: tool_calls
                .into_iter()
                .map(|call| ToolCall {
                    id: call.id,
                    name: call.name,
                    arguments: call.arguments,
                })
                .collect(),
        },
        HistoryMessage::Tool {
            tool_call_id,
            tool_name,
            content,
            is_error,
        } => Message::Tool {
            tool_call_id,
            tool_name,
            content,
            is_error,
            images: Vec::new(),
        },
    }
}

/// Applies `patch` to `target` as a JSON merge patch (RFC 7386): objects merge key by key,
/// `null` removes a key, anything else replaces.
pub(super) fn merge_patch(target: &mut serde_json::Value, patch: serde_json::Value) {
    let serde_json::Value::Object(patch) = patch else {
        *target = patch;
        return;
    };
    if !target.is_object() {
        *target = serde_json::Value::Object(serde_json::Map::new());
    }
    if let serde_json::Value::Object(target) = target {
        for (key, value) in patch {
            if value.is_null() {
                target.remove(&key);
            } else {
                merge_patch(target.entry(key).or_insert(serde_json::Value::Null), value);
            }
        }
    }
}
