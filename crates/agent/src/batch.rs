//! One tool batch of a run: the permission gate over the model's calls (`gate`), the allowed
//! ones executed together (`tools::execute_batch`), what they report turned into events on the
//! run's bounded queue (`RunObserver`), and the results in the order of the calls.

use std::time::Duration;

use tokio::sync::mpsc;

use super::*;
use agentd_core::conversation::ToolCall;
use agentd_work::tools::{BatchObserver, ToolOutput, execute_batch};
use protocol::event::Event;

impl Run {
    /// Decide the batch's calls, run the allowed ones, and return one result per call in the
    /// model's order, and why an interceptor halted the run after this batch (if one did).
    pub(super) async fn run_tools(
        &self,
        calls: &[ToolCall],
    ) -> Result<(Vec<agentd_work::tools::ToolResult>, Option<String>)> {
        for call in calls {
            agentd_core::test_seam::panic_in_tool_call(&call.name);
        }
        // An MCP tool that a tool search did not load yet is loaded by its first call.
        self.tools
            .load_called(calls.iter().map(|call| call.name.as_str()));
        let mut halted = None;
        let intercepted = self.intercept_calls(calls, &mut halted).await?;
        let calls = &intercepted.calls[..];
        let verdicts = self.authorize(calls, &intercepted.said).await?;
        let allowed: Vec<ToolCall> = calls
            .iter()
            .zip(&verdicts)
            .filter(|(_, verdict)| matches!(verdict, gate::Verdict::Run))
            .map(|(call, _)| call.clone())
            .collect();
        let mut executed = self.execute_allowed(&allowed).await?.into_iter();
        let mut results = Vec::with_capacity(calls.len());
        for (call, verdict) in calls.iter().zip(verdicts) {
            match verdict {
                gate::Verdict::Run => match executed.next() {
                    Some(result) => results.push(result),
                    None => anyhow::bail!("the executor returned fewer results than calls"),
                },
                gate::Verdict::Done(output) => {
                    self.log
                        .append(Event::ToolCompleted {
                            run_id: self.run_id.clone(),
                            tool_call_id: call.id.clone(),
                            tool: call.name.clone(),
                            output: output.content.clone(),
                            is_error: output.is_error,
                            duration_ms: 0,
                        })
                        .await?;
                    results.push(agentd_work::tools::ToolResult {
                        call: call.clone(),
                        output,
                    });
                }
            }
        }
        self.intercept_results(&mut results, &mut halted).await?;
        Ok((results, halted))
    }

    /// Asks the interceptors about each call before the gate (`Point::ToolCall`), in the
    /// model's order: their arguments replace the call's, their permission joins the rules'.
    async fn intercept_calls<'a>(
        &self,
        calls: &'a [ToolCall],
        halted: &mut Option<String>,
    ) -> Result<Intercepted<'a>> {
        if self.interceptors.is_empty() {
            return Ok(Intercepted {
                calls: std::borrow::Cow::Borrowed(calls),
                said: Vec::new(),
            });
        }
        let mut intercepted = Intercepted {
            calls: std::borrow::Cow::Owned(calls.to_vec()),
            said: vec![None; calls.len()],
        };
        for (call, said) in intercepted
            .calls
            .to_mut()
            .iter_mut()
            .zip(&mut intercepted.said)
        {
            let outcome = self
                .interceptors
                .at(self.at(), &intercept::Point::ToolCall { call })
                .await;
            self.warn(&outcome.warnings).await?;
            if halted.is_none() {
                *halted = outcome.halt;
            }
            if let Some(input) = outcome.updated_input.filter(serde_json::Value::is_object) {
                call.arguments = input.to_string();
            }
            *said = match outcome.block {
                Some(reason) => Some(intercept::Permission::Deny(reason)),
                None => outcome.permission,
            };
        }
        Ok(intercepted)
    }

    /// Asks the interceptors about each result before the model reads it
    /// (`Point::ToolResult`): a rewrite replaces its text, context and a block's reason are
    /// added to it.
    async fn intercept_results(
        &self,
        results: &mut [agentd_work::tools::ToolResult],
        halted: &mut Option<String>,
    ) -> Result<()> {
        if self.interceptors.is_empty() {
            return Ok(());
        }
        for result in results.iter_mut() {
            let point = intercept::Point::ToolResult {
                call: &result.call,
                output: &result.output,
            };
            let outcome = self.interceptors.at(self.at(), &point).await;
            self.warn(&outcome.warnings).await?;
            if halted.is_none() {
                *halted = outcome.halt;
            }
            if let Some(text) = outcome.replace_text {
                result.output.content = text;
            }
            for added in outcome.block.into_iter().chain(outcome.context) {
                result.output.content.push_str("\n\n");
                result.output.content.push_str(&added);
            }
        }
        Ok(())
    }

    async fn execute_allowed(
        &self,
        calls: &[ToolCall],
    ) -> Result<Vec<agentd_work::tools::ToolResult>> {
        if calls.is_empty() {
            return Ok(Vec::new());
        }
        let tools = self.tools.current();
        let can_write = calls.iter().any(|call| {
            tools
                .registry
                .get(&call.name)
                .is_none_or(|tool| !tool.read_only())
        });
        if can_write {
            self.checkpoint_before_batch().await?;
        }
        let (pending_tx, pending_rx) = mpsc::channel::<Event>(PENDING_EVENTS);
        let observer = RunObserver {
            run_id: self.run_id.clone(),
            events: pending_tx.clone(),
            shared: self.shared.clone(),
        };
        let mut context = self.tool_context.clone();
        context.cancel = self.cancel.clone();
        context.fetch_rules = self.fetch_rules();
        context.todo = todo_sink(self.run_id.clone(), pending_tx.clone());
        let (server_requests, served) = crate::server_requests::channel();
        context.server_requests = Some(server_requests);
        let batch = execute_batch(&tools.registry, calls, &context, &observer);
        let results = self
            .serving(served, pump(&*self.log, pending_rx, batch))
            .await?;
        Ok(results)
    }
}

/// A batch's calls as the interceptors left them (borrowed when none was asked), and what
/// they said of each call's permission (a block is a deny; empty: nothing was said).
struct Intercepted<'a> {
    calls: std::borrow::Cow<'a, [ToolCall]>,
    said: Vec<Option<intercept::Permission>>,
}

/// todo_write's lists become `todoUpdated` events, persisted in order with the batch's other
/// events (between the call's `toolStarted` and `toolCompleted`).
fn todo_sink(run_id: String, events: mpsc::Sender<Event>) -> agentd_work::tools::TodoSink {
    agentd_work::tools::TodoSink::new(move |items| {
        let event = Event::TodoUpdated {
            run_id: run_id.clone(),
            items: agentd_work::tools::todo_wire_items(&items),
        };
        events.try_send(event).map_err(|_| {
            "the todo list could not be recorded (too many pending events); call todo_write again"
                .to_owned()
        })
    })
}

/// Turns executor callbacks into run events and skips unstarted calls once the user steered.
struct RunObserver {
    run_id: String,
    events: mpsc::Sender<Event>,
    shared: Arc<SessionShared>,
}

impl RunObserver {
    fn queue(&self, event: Event, what: &str) {
        if self.events.try_send(event).is_err() {
            tracing::warn!(what, "dropped a tool event: too many pending events");
        }
    }
}

impl BatchObserver for RunObserver {
    fn started(&self, call: &ToolCall, summary: &str) {
        self.queue(
            Event::ToolStarted {
                run_id: self.run_id.clone(),
                tool_call_id: call.id.clone(),
                tool: call.name.clone(),
                summary: summary.to_owned(),
            },
            "toolStarted",
        );
    }

    fn progress(&self, call: &ToolCall, message: &str) {
        self.queue(
            Event::ToolProgress {
                run_id: self.run_id.clone(),
                tool_call_id: call.id.clone(),
                message: message.to_owned(),
            },
            "toolProgress",
        );
    }

    fn completed(&self, call: &ToolCall, output: &ToolOutput, duration: Duration) {
        self.queue(
            Event::ToolCompleted {
                run_id: self.run_id.clone(),
                tool_call_id: call.id.clone(),
                tool: call.name.clone(),
                output: output.content.clone(),
                is_error: output.is_error,
                duration_ms: duration.as_millis() as u64,
            },
            "toolCompleted",
        );
    }

    fn skip_reason(&self) -> Option<String> {
        if self.shared.lock().steers.is_empty() {
            None
        } else {
            Some(SKIPPED_FOR_STEER.to_owned())
        }
    }
}
