//! The think → act → observe loop of one run (DESIGN §5): call the model with the frozen system
//! prompt and the append-only history (as `context::ContextState::view` shows it, cleared and
//! compacted by `compaction` at the context limits), stream its text, run its tool calls through
//! the batch executor, deliver steers after a batch and follow-ups when the run would end, and
//! stop on completion, cancellation, failure or the step limit.
//!
//! The crate is the agent layer as a whole (`agentd_agent`): it names only the layers below it
//! (core, policy, llm, knowledge, work), and what a run writes and shares with its session it
//! names as `sink`'s traits.

// Test code writes its fixtures with `std::fs::write`; the disallowed-methods rules of
// clippy.toml are for the layer's own code, which the non-test build of this crate checks.
#![cfg_attr(test, allow(clippy::disallowed_methods))]

mod batch;
pub mod budget;
pub mod budget_pause;
pub mod checkpoint;
pub mod compaction;
pub mod elicitation;
mod ending;
pub mod gate;
pub mod hooks;
pub mod intercept;
mod interception;
pub mod prompt;
pub mod resume;
mod server_requests;
pub mod sink;
pub mod tool_set;
mod truncation;

pub use ending::{Pairing, pair_orphaned_tool_calls, report_undelivered};

use std::sync::Arc;

use anyhow::Result;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use agentd_core::conversation::{Message, ToolCall, Usage};
use agentd_llm::{ChatRequest, LlmClient, LlmEvent};
use agentd_work::tools::ToolContext;
use protocol::event::{Event, MessageRole, RunStatus, UserMessageKind};
use sink::{RunLog, SessionShared};

/// Events raised from synchronous callbacks (tool observer, LLM retries) wait here until the
/// run persists them; bounded so a flood of progress reports cannot grow memory.
const PENDING_EVENTS: usize = 1024;

/// The result text given to tool calls skipped because the user steered.
pub(crate) const SKIPPED_FOR_STEER: &str = "skipped: user steered";
/// The result text given to tool calls orphaned by a daemon restart.
pub const INTERRUPTED: &str = "interrupted: the daemon stopped before this tool call finished";
/// The result text given to tool calls left without a result when their run failed.
pub(crate) const NOT_RUN_RUN_FAILED: &str =
    "not run: the run failed before this tool call finished";

/// Why a run's cancellation token fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// `session/cancel` (or deleting the session).
    Cancelled,
    /// The daemon is shutting down.
    Shutdown,
}

/// Everything one run needs.
pub struct Run {
    pub session_id: Arc<str>,
    /// The key its model requests share a provider's prompt cache under (the session's id, or
    /// its source's for a fork).
    pub cache_key: Arc<str>,
    pub run_id: String,
    pub system: Arc<str>,
    pub llm: LlmClient,
    /// The built-ins and the session's MCP servers; each step decides its set from them.
    pub tools: tool_set::RunTools,
    pub tool_context: ToolContext,
    pub max_steps: u32,
    /// The model's prices and the run's budgets (`[sessions]`, the agent's definition).
    pub budget: budget::RunBudget,
    pub shared: Arc<SessionShared>,
    /// Where the run persists and publishes (the session's `EventLog`).
    pub log: Arc<dyn RunLog>,
    pub cancel: CancellationToken,
    /// Read when `cancel` fires, to tell a user cancel from a shutdown.
    pub stop_reason: Arc<std::sync::Mutex<Option<StopReason>>>,
    /// How tool calls are decided (policy inputs, approval broker, timeout).
    pub permissions: gate::RunPermissions,
    /// When old tool results are cleared and the history compacted.
    pub context_limits: agentd_knowledge::context::ContextLimits,
    /// Hooks and extensions, asked at each point of the run (`intercept`).
    pub interceptors: intercept::Interceptors,
    /// Where its checkpoints of the workspace go (None: checkpoints are off).
    pub checkpoints: Option<Arc<checkpoint::RunCheckpoints>>,
}

/// How the run ended.
#[derive(Debug)]
pub struct RunOutcome {
    pub status: RunStatus,
    pub(crate) error: Option<String>,
    pub(crate) usage: Usage,
}

/// What a run starts from: the user's message and what preparing the run found.
#[derive(Debug)]
pub struct RunStart {
    pub text: String,
    pub kind: UserMessageKind,
    /// Images the prompt carries, checked by the caller; they join its user message.
    pub images: Vec<agentd_core::conversation::ToolImage>,
    /// Problems found while preparing the run (e.g. ignored permission rules), announced as
    /// `warning` events once the run has started.
    pub warnings: Vec<String>,
    /// A run that was active when the daemon stopped, going on (`text` and `kind` unused).
    pub resume: Option<resume::Resumption>,
}

impl Run {
    /// Run to the end: persist the user's message (then `begun` fires, whatever happened), the
    /// warnings, then think → act → observe. Every event is persisted before it is published;
    /// the final `runFinished` is appended here too, after pairing any tool call left without
    /// a result. A panic is caught by `execute_guarded`, which callers use.
    ///
    /// With interceptors, `begun` fires first: they are asked about the prompt before it is
    /// persisted, and a hook may take its whole timeout; the session's actor (which waits on
    /// `begun`) must not wait with it.
    async fn execute(self, start: RunStart, begun: oneshot::Sender<()>) -> RunOutcome {
        let mut begun = Some(begun);
        if !self.interceptors.is_empty()
            && let Some(begun) = begun.take()
        {
            let _ = begun.send(());
        }
        let mut start = start;
        let (began, first_step) = match start.resume.take() {
            Some(plan) => {
                let steps = plan.steps;
                (self.resume(plan, start.warnings).await, steps)
            }
            None => {
                self.begin_checkpoint().await;
                (self.begin(start).await, 0)
            }
        };
        if let Some(begun) = begun {
            let _ = begun.send(());
        }
        let result = match began {
            Ok(mut history) => self.steps(&mut history, first_step).await,
            Err(err) => Err(err),
        };
        let ending = self.ending();
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(err) => {
                ending.close_after_failure().await;
                RunOutcome {
                    status: RunStatus::Failed,
                    error: Some(format!("{err:#}")),
                    usage: Usage::default(),
                }
            }
        };
        self.record_last_loads().await;
        self.checkpoint_at_end().await;
        ending.finish(&outcome).await;
        outcome
    }

    /// The user's message and the preparation warnings; returns the history the model sees.
    async fn begin(&self, start: RunStart) -> Result<Vec<Message>> {
        let (mut history, held) = {
            let mut state = self.shared.lock();
            (state.history.clone(), std::mem::take(&mut state.held))
        };
        for text in held {
            self.push_user(&mut history, text, UserMessageKind::FollowUp, Vec::new())
                .await?;
        }
        // The warnings and the first turn's start go with the user's message: one write.
        let mut then: Vec<Event> = start
            .warnings
            .into_iter()
            .map(|message| Event::Warning { message })
            .collect();
        then.push(Event::TurnStarted {
            run_id: self.run_id.clone(),
            step: 1,
        });
        let text = match self.intercept_prompt(start.text, start.kind).await? {
            Ok(text) => text,
            Err(blocked) => {
                for event in then {
                    if matches!(event, Event::Warning { .. }) {
                        self.log.append(event).await?;
                    }
                }
                return Err(blocked);
            }
        };
        self.push_user_with(&mut history, text, start.images, start.kind, then)
            .await?;
        Ok(history)
    }

    /// Model calls from step `step + 1` on (0: a new run; a resumed run goes on after its own).
    async fn steps(&self, history: &mut Vec<Message>, mut step: u32) -> Result<RunOutcome> {
        self.await_mcp_servers().await?;
        let mut run_usage = Usage::default();
        let mut spending = self.budget.start();
        // A Stop interceptor kept the run going; it may not again until new user input.
        let mut stop_hook_active = false;
        loop {
            if self.cancel.is_cancelled() {
                return Ok(self.stopped(run_usage));
            }
            if step >= self.max_steps {
                return Ok(RunOutcome {
                    status: RunStatus::MaxSteps,
                    error: Some(format!(
                        "stopped after {} model calls (maxSteps); send a follow-up to continue",
                        self.max_steps
                    )),
                    usage: run_usage,
                });
            }
            if let Some(ended) = self.keep_budget(&mut spending, &run_usage).await? {
                return Ok(ended);
            }
            step += 1;
            // The first turn's start was written with the user's message (`begin`).
            if step > 1 {
                self.log
                    .append(Event::TurnStarted {
                        run_id: self.run_id.clone(),
                        step,
                    })
                    .await?;
            }
            self.offer_tools().await?;
            self.manage_context(history).await?;

            let mut model_call = self.call_model(history).await?;
            if let ModelCall::Overflow(message) = model_call {
                // The provider says the prompt is too long: compact and try once more.
                model_call = match self.compact(history).await? {
                    compaction::Compacted::Done { .. } => self.call_model(history).await?,
                    compaction::Compacted::Cancelled => ModelCall::Cancelled(String::new()),
                    compaction::Compacted::NothingToCompact => ModelCall::Failed(format!(
                        "{message}; nothing is older than the last two user turns to summarise: start a new session, or send a shorter prompt"
                    )),
                    compaction::Compacted::Failed(_) => ModelCall::Failed(message),
                };
            }
            let (completion, partial) = match model_call {
                ModelCall::Done(completion) => (Some(completion), None),
                ModelCall::Cancelled(partial) => (None, Some(partial)),
                ModelCall::Cut { reason, partial } => {
                    return self.cut_off(&reason, &partial, run_usage).await;
                }
                ModelCall::Failed(message) | ModelCall::Overflow(message) => {
                    return Ok(RunOutcome {
                        status: RunStatus::Failed,
                        error: Some(message),
                        usage: run_usage,
                    });
                }
            };
            let Some(completion) = completion else {
                // Keep what the model had said before the cancel.
                let partial = partial.unwrap_or_default();
                if !partial.is_empty() {
                    self.push_assistant(history, partial, Vec::new()).await?;
                }
                return Ok(self.stopped(run_usage));
            };

            run_usage.add(&completion.usage);
            let (total, total_cost_usd) = {
                let mut state = self.shared.lock();
                state.add_usage(&completion.usage, self.budget.prices);
                state
                    .context
                    .note_prompt_tokens(completion.usage.input_tokens, self.context_limits);
                (state.usage, state.cost_usd)
            };
            // An answer cut at the output limit ends the run with a warning (`truncation`).
            let cut_at_limit = completion
                .cut_at_output_limit()
                .then(|| completion.finish_reason.clone().unwrap_or_default());
            // Runaway arguments are not kept (nor run): the model is told.
            let tool_calls: Vec<ToolCall> = completion
                .tool_calls
                .into_iter()
                .map(agentd_core::conversation::cap_tool_call)
                .collect();
            self.push_assistant(history, completion.content, tool_calls.clone())
                .await?;
            self.log
                .append(Event::UsageUpdated {
                    run_id: self.run_id.clone(),
                    usage: agentd_core::conversation::wire::usage(&completion.usage),
                    total: agentd_core::conversation::wire::usage(&total),
                    context_window: Some(self.context_limits.window),
                    total_cost_usd,
                })
                .await?;
            if let Some(reason) = cut_at_limit {
                return self.end_cut_answer(&tool_calls, &reason, run_usage).await;
            }

            if tool_calls.is_empty() {
                if let Some(reason) = self.intercept_stop(history, stop_hook_active).await? {
                    stop_hook_active = true;
                    self.push_user(history, reason, UserMessageKind::FollowUp, Vec::new())
                        .await?;
                    continue;
                }
                // The run would end. Under one lock: take what is queued, or stop accepting
                // more, so a steer or follow-up sent now is either delivered by this run or
                // starts the next one, never acknowledged and then lost.
                let next = {
                    let mut state = self.shared.lock();
                    if !state.steers.is_empty() {
                        Pending::Steers(state.steers.drain(..).collect())
                    } else if let Some(text) = state.follow_ups.pop_front() {
                        Pending::FollowUp(text)
                    } else {
                        state.run_id = None;
                        Pending::Nothing
                    }
                };
                match next {
                    Pending::Steers(steers) => {
                        stop_hook_active = false;
                        self.push_steers(history, steers).await?;
                        continue;
                    }
                    Pending::FollowUp(text) => {
                        stop_hook_active = false;
                        self.push_user(history, text, UserMessageKind::FollowUp, Vec::new())
                            .await?;
                        continue;
                    }
                    Pending::Nothing => {
                        return Ok(RunOutcome {
                            status: RunStatus::Completed,
                            error: None,
                            usage: run_usage,
                        });
                    }
                }
            }

            let (results, halted) = self.run_tools(&tool_calls).await?;
            for result in results {
                let message = Message::Tool {
                    tool_call_id: result.call.id,
                    tool_name: result.call.name,
                    content: result.output.content,
                    is_error: result.output.is_error,
                    images: result.output.images,
                };
                self.push_message(history, message).await?;
            }
            if self.cancel.is_cancelled() {
                return Ok(self.stopped(run_usage));
            }
            if let Some(reason) = halted {
                self.warn(&[format!("the run was stopped by a hook: {reason}")])
                    .await?;
                return Ok(RunOutcome {
                    status: RunStatus::Completed,
                    error: None,
                    usage: run_usage,
                });
            }
            self.deliver_steers(history).await?;
        }
    }

    /// Deliver queued steering messages.
    async fn deliver_steers(&self, history: &mut Vec<Message>) -> Result<()> {
        let steers: Vec<String> = self.shared.lock().steers.drain(..).collect();
        self.push_steers(history, steers).await
    }

    async fn push_steers(&self, history: &mut Vec<Message>, steers: Vec<String>) -> Result<()> {
        for text in steers {
            self.push_user(history, text.clone(), UserMessageKind::Steer, Vec::new())
                .await?;
            self.log
                .append(Event::SteerDelivered {
                    run_id: self.run_id.clone(),
                    text,
                })
                .await?;
        }
        Ok(())
    }

    fn stopped(&self, usage: Usage) -> RunOutcome {
        let reason = self
            .stop_reason
            .lock()
            .map(|reason| *reason)
            .unwrap_or(None);
        match reason {
            Some(StopReason::Shutdown) => RunOutcome {
                status: RunStatus::Interrupted,
                error: Some("the daemon is shutting down; prompt again to continue".to_owned()),
                usage,
            },
            _ => RunOutcome {
                status: RunStatus::Cancelled,
                error: None,
                usage,
            },
        }
    }

    /// One model call with deltas published as they stream and retries reported as events.
    async fn call_model(&self, history: &[Message]) -> Result<ModelCall> {
        // What the model is sent: the history with its clearings and compaction applied.
        let mut view = self.shared.lock().context.view(history);
        if !self.interceptors.is_empty() {
            let outcome = self
                .interceptors
                .at(self.at(), &intercept::Point::Request { messages: &view })
                .await;
            self.warn(&outcome.warnings).await?;
            if let Some(messages) = outcome.messages {
                view = std::borrow::Cow::Owned(messages);
            }
        }
        let tools = self.tools.current();
        let request = ChatRequest {
            session_id: &self.cache_key,
            system: &self.system,
            messages: &view,
            tools: &tools.specs,
        };
        // Only when an interceptor wants the raw body is it built here (and maybe patched).
        let body = self.intercept_provider_request(&request).await?;
        let (mut feeds, cut) = match self.interceptors.watch_stream(self.at()) {
            Some(watches) => {
                let (feeds, cut) = watches.split();
                (feeds, Some(cut))
            }
            None => (Vec::new(), None),
        };
        let (pending_tx, pending_rx) = mpsc::channel::<Event>(PENDING_EVENTS);
        let mut partial = String::new();
        let run_id = self.run_id.clone();
        let log = self.log.clone();
        let mut on_event = |event: LlmEvent| match event {
            LlmEvent::TextDelta(text) => {
                partial.push_str(&text);
                for feed in &mut feeds {
                    feed.push(&text);
                }
                log.publish_transient(Event::MessageDelta {
                    run_id: run_id.clone(),
                    text,
                });
            }
            LlmEvent::ThinkingDelta(text) => {
                log.publish_transient(Event::ThinkingDelta {
                    run_id: run_id.clone(),
                    text,
                });
            }
            LlmEvent::Retrying {
                attempt,
                delay,
                message,
            } => {
                let event = Event::Error {
                    run_id: Some(run_id.clone()),
                    message: format!(
                        "{message}; retrying in {:.1}s (attempt {})",
                        delay.as_secs_f64(),
                        attempt + 1
                    ),
                    will_retry: true,
                };
                if pending_tx.try_send(event).is_err() {
                    tracing::warn!("dropped a retry notice: too many pending events");
                }
            }
        };
        let call = async {
            match body {
                Some(body) => self.llm.complete_body(body, &mut on_event).await,
                None => self.llm.complete(&request, &mut on_event).await,
            }
        };
        let cut = async {
            match cut {
                Some(cut) => cut.await,
                None => futures::future::pending().await,
            }
        };
        let outcome = tokio::select! {
            result = pump(&*self.log, pending_rx, call) => Some(Ok(result?)),
            reason = cut => Some(Err(reason)),
            _ = self.cancel.cancelled() => None,
        };
        Ok(match outcome {
            Some(Ok(Ok(completion))) => ModelCall::Done(completion),
            Some(Ok(Err(err))) if err.is_context_overflow() => ModelCall::Overflow(err.to_string()),
            Some(Ok(Err(err))) => ModelCall::Failed(err.to_string()),
            Some(Err(reason)) => ModelCall::Cut { reason, partial },
            None => ModelCall::Cancelled(partial),
        })
    }

    /// Cancel this run from inside it (a "deny and cancel" answer).
    fn request_cancel(&self) {
        if let Ok(mut reason) = self.stop_reason.lock() {
            reason.get_or_insert(StopReason::Cancelled);
        }
        self.cancel.cancel();
    }

    async fn push_assistant(
        &self,
        history: &mut Vec<Message>,
        content: String,
        tool_calls: Vec<ToolCall>,
    ) -> Result<()> {
        // A runaway reply is cut before it is stored or sent (head and tail kept).
        let content = agentd_core::conversation::cap_message_text(content);
        let event = Event::MessageCompleted {
            run_id: self.run_id.clone(),
            role: MessageRole::Assistant,
            content: content.clone(),
            kind: None,
            tool_calls: tool_calls
                .iter()
                .map(agentd_core::conversation::wire::tool_call)
                .collect(),
        };
        self.push_message_then(
            history,
            Message::Assistant {
                content,
                tool_calls,
            },
            vec![event],
        )
        .await
    }

    async fn push_user(
        &self,
        history: &mut Vec<Message>,
        text: String,
        kind: UserMessageKind,
        then: Vec<Event>,
    ) -> Result<()> {
        self.push_user_with(history, text, Vec::new(), kind, then)
            .await
    }

    /// [`Run::push_user`] with the images the message carries.
    async fn push_user_with(
        &self,
        history: &mut Vec<Message>,
        text: String,
        images: Vec<agentd_core::conversation::ToolImage>,
        kind: UserMessageKind,
        then: Vec<Event>,
    ) -> Result<()> {
        let text = agentd_core::conversation::cap_message_text(text);
        let mut events = vec![Event::MessageCompleted {
            run_id: self.run_id.clone(),
            role: MessageRole::User,
            content: text.clone(),
            kind: Some(kind),
            tool_calls: Vec::new(),
        }];
        events.extend(then);
        let message = Message::User {
            content: text,
            images,
        };
        self.push_message_then(history, message, events).await
    }

    /// Persist a message and `events` announcing it in one write. The message joins the
    /// session's history first, so whoever hears the event finds it there (and a run dropped
    /// while the write is under way, which still happens, keeps it); it leaves again when it
    /// was not written.
    async fn push_message_then(
        &self,
        history: &mut Vec<Message>,
        message: Message,
        events: Vec<Event>,
    ) -> Result<()> {
        let pushed = {
            let mut state = self.shared.lock();
            state.history.push(message.clone());
            state.history.len()
        };
        if let Err(err) = self.log.append_message_then(&message, events).await {
            if err.is::<sink::MessageNotWritten>() {
                let mut state = self.shared.lock();
                if state.history.len() == pushed {
                    state.history.pop();
                }
            } else {
                history.push(message);
            }
            return Err(err);
        }
        history.push(message);
        Ok(())
    }

    /// Persist a message, then add it to the run's history and the session's.
    async fn push_message(&self, history: &mut Vec<Message>, message: Message) -> Result<()> {
        self.log.append_message(&message).await?;
        self.shared.lock().history.push(message.clone());
        history.push(message);
        Ok(())
    }
}

/// What a run that would end finds queued.
enum Pending {
    Steers(Vec<String>),
    FollowUp(String),
    Nothing,
}

enum ModelCall {
    Done(agentd_llm::Completion),
    Failed(String),
    /// The provider refused the prompt as too long for the model.
    Overflow(String),
    /// Cancelled mid-stream, with the text streamed so far.
    Cancelled(String),
    /// An interceptor cut the answer off mid-stream (`Interceptor::watch_stream`): the text
    /// streamed so far is dropped.
    Cut {
        reason: String,
        partial: String,
    },
}

/// Drive `work` while persisting the events its synchronous callbacks queue, in order; the
/// events still queued when `work` ends are persisted before returning.
async fn pump<F: Future>(
    log: &dyn RunLog,
    mut pending: mpsc::Receiver<Event>,
    work: F,
) -> Result<F::Output> {
    let mut work = std::pin::pin!(work);
    let output = loop {
        tokio::select! {
            biased;
            Some(event) = pending.recv() => {
                log.append(event).await?;
            }
            output = &mut work => break output,
        }
    };
    pending.close();
    while let Ok(event) = pending.try_recv() {
        log.append(event).await?;
    }
    Ok(output)
}
