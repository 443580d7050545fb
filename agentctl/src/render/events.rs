//! What each event of the stream shows: the one match over [`Event`], which hands the
//! messages, tools and the run's end to `lines` and writes the other events' notes itself.

use protocol::event::{Event, MessageRole};

use super::lines::Finished;
use super::style::Style;
use super::{Output, Renderer, mcp, one_line, todo};

impl Renderer {
    pub(super) fn render(
        &mut self,
        session_id: &str,
        event: &Event,
        cost_usd: Option<f64>,
        out: &mut Vec<Output>,
    ) {
        if !self.shows_run(event.run_id()) {
            return;
        }
        if !matches!(event, Event::ThinkingDelta { .. }) {
            self.end_thought(out);
        }
        match event {
            Event::RunStarted { run_id, .. } => {
                if self.is_goal_run(run_id) {
                    self.run_started = Some(self.now);
                }
            }
            Event::TurnStarted { run_id, step } => {
                if self.is_goal_run(run_id) {
                    self.steps = *step;
                }
                if self.tracks_activity() {
                    self.activity.start_thinking(self.now);
                    self.draw_spinner(out);
                }
            }
            Event::ToolProgress {
                tool_call_id,
                message,
                ..
            } => {
                if self.activity.progress(tool_call_id, message) {
                    self.draw_spinner(out);
                } else if self.options.stderr_is_tty && !self.options.redraws() {
                    // A person watches a terminal whose width is unknown: plain lines.
                    self.stderr_line(&format!("[tool] … {}", one_line(message)), out);
                }
            }
            // The activity line already says the model is thinking; the text is for
            // clients that show it (`--json` keeps it).
            Event::ThinkingDelta { text, .. } => self.thinking(text, out),
            Event::UsageUpdated {
                run_id,
                usage,
                context_window,
                ..
            } => {
                if self.is_goal_run(run_id)
                    && let Some(window) = *context_window
                {
                    self.context = Some(super::summary::Context {
                        used: usage.input_tokens + usage.output_tokens,
                        window,
                    });
                }
            }
            Event::MessageDelta { run_id, text } => {
                self.streamed
                    .entry(run_id.clone())
                    .or_default()
                    .push_str(text);
                self.answer_delta(run_id, text, out);
            }
            Event::MessageCompleted {
                run_id,
                role: MessageRole::Assistant,
                content,
                tool_calls,
                ..
            } => {
                self.remember_edits(tool_calls);
                self.activity.stop_thinking();
                self.assistant_completed(run_id, content, out);
            }
            Event::MessageCompleted {
                role: MessageRole::User,
                content,
                kind,
                ..
            } => self.user_message(content, *kind, out),
            Event::ToolStarted {
                tool_call_id,
                tool,
                summary,
                ..
            } => self.tool_started(tool_call_id, tool, summary, out),
            Event::ToolCompleted {
                tool_call_id,
                tool,
                output,
                is_error,
                duration_ms,
                ..
            } => self.tool_completed(tool_call_id, tool, output, *is_error, *duration_ms, out),
            Event::SteerDelivered { text, .. } => {
                // A transcript shows the steer as a user message (`messageCompleted`).
                if !self.is_transcript() {
                    self.stderr_line(&format!("steer delivered: {}", one_line(text)), out);
                }
            }
            Event::Warning { message } => {
                let line = format!("warning: {}", one_line(message));
                self.stderr_styled(Style::Attention, &line, out);
            }
            Event::TodoUpdated { items, .. } => {
                for line in todo::lines(items) {
                    self.stderr_line(&line, out);
                }
            }
            // The tools a session starts with are no news to a person.
            Event::ToolsChanged { initial: true, .. } => {}
            Event::ToolsChanged {
                added,
                removed,
                changed,
                loaded,
                ..
            } => {
                // A tool search's loads are said as such; the rest of the change as before.
                if !loaded.is_empty() {
                    self.stderr_line(&format!("tools loaded: {}", loaded.join(", ")), out);
                }
                let added: Vec<String> = added
                    .iter()
                    .filter(|name| !loaded.contains(name))
                    .cloned()
                    .collect();
                let mut parts = Vec::new();
                for (sign, names) in [("+", &added), ("-", removed), ("~", changed)] {
                    parts.extend(names.iter().map(|name| format!("{sign}{name}")));
                }
                if !parts.is_empty() {
                    self.stderr_line(&format!("tools changed: {}", parts.join(" ")), out);
                }
            }
            Event::HookStarted { event, command, .. } => {
                self.stderr_line(&format!("hook {event}: {}", one_line(command)), out);
            }
            Event::HookCompleted {
                event,
                command,
                duration_ms,
                outcome,
                reason,
                ..
            } => {
                let style = match outcome.as_str() {
                    "success" => Style::Dim,
                    "blocked" => Style::Attention,
                    _ => Style::Bad,
                };
                let why = reason
                    .as_deref()
                    .map(|reason| format!(": {}", one_line(reason)))
                    .unwrap_or_default();
                let line = format!(
                    "hook {event}: {} {outcome} ({duration_ms} ms){why}",
                    one_line(command)
                );
                self.stderr_styled(style, &line, out);
            }
            Event::CompactionStarted { .. } => {
                self.stderr_line("compacting the conversation…", out);
            }
            Event::CompactionCompleted {
                tokens_before,
                tokens_after,
                ..
            } => {
                self.stderr_line(
                    &format!("compacted: {tokens_before} → about {tokens_after} prompt tokens"),
                    out,
                );
            }
            Event::Error {
                message,
                will_retry,
                ..
            } => {
                let (prefix, style) = if *will_retry {
                    ("retrying", Style::Attention)
                } else {
                    ("error", Style::Bad)
                };
                self.stderr_styled(style, &format!("{prefix}: {}", one_line(message)), out);
            }
            Event::RunResumed {
                run_id,
                attempt,
                interrupted_tool_calls,
            } => self.run_resumed(run_id, *attempt, interrupted_tool_calls.len(), out),
            Event::RunSuspended { run_id, .. } => self.run_suspended(session_id, run_id, out),
            Event::RunFinished {
                run_id,
                status,
                error,
                usage,
                ..
            } => {
                let finished = Finished {
                    status: *status,
                    error: error.as_deref(),
                    usage,
                    cost_usd,
                };
                self.run_finished(session_id, run_id, finished, out);
            }
            Event::ApprovalRequested { .. } | Event::ApprovalResolved { .. }
                if self.approvals_handled => {}
            Event::ApprovalRequested { approval, .. } => {
                let because = crate::approval_view::why(approval)
                    .map(|why| format!(" ({why})"))
                    .unwrap_or_default();
                self.stderr_line(
                    &format!(
                        "approval needed: {}{because}; answer with `agentctl approve {id}` or `agentctl deny {id}`",
                        crate::approval_view::what(approval),
                        id = crate::ids::short(&approval.approval_id),
                    ),
                    out,
                );
            }
            Event::ApprovalResolved {
                approval_id,
                decision,
                decided_by,
                ..
            } => {
                self.stderr_line(
                    &format!(
                        "approval {}: {} by {decided_by}",
                        crate::ids::short(approval_id),
                        crate::approve_policy::decision_words(*decision)
                    ),
                    out,
                );
            }
            Event::BudgetExceeded { .. } | Event::BudgetResolved { .. }
                if self.approvals_handled => {}
            Event::BudgetExceeded { request, .. } => {
                let line = format!(
                    "budget reached: {}; answer with `agentctl approve {id}` (continue; `--limit N` for another limit) or `agentctl deny {id}` (stop)",
                    one_line(&request.message),
                    id = crate::ids::short(&request.request_id),
                );
                self.stderr_styled(Style::Attention, &line, out);
            }
            Event::BudgetResolved {
                request_id,
                decision,
                decided_by,
                new_limit,
                ..
            } => {
                let request_id = crate::ids::short(request_id);
                let line = match (decision, new_limit) {
                    (protocol::budget::BudgetDecision::Continue, Some(limit)) => {
                        format!("budget {request_id}: continued to {limit} by {decided_by}")
                    }
                    _ => format!("budget {request_id}: stopped by {decided_by}"),
                };
                self.stderr_line(&line, out);
            }
            Event::ElicitationRequested { .. } | Event::ElicitationResolved { .. }
                if self.approvals_handled => {}
            Event::ElicitationRequested { request, .. } => {
                let line = format!(
                    "MCP server {} asks: {} (answer from a client that answers approvals: `agentctl attach`)",
                    request.server,
                    one_line(&request.message),
                );
                self.stderr_styled(Style::Attention, &line, out);
            }
            Event::ElicitationResolved {
                elicitation_id,
                action,
                decided_by,
                ..
            } => {
                let line = format!(
                    "question {}: {} by {decided_by}",
                    crate::ids::short(elicitation_id),
                    action.as_str()
                );
                self.stderr_line(&line, out);
            }
            Event::McpServerStatus {
                server,
                status,
                error,
                attempt,
                ..
            } => {
                if let Some(line) = mcp::status_line(server, *status, error.as_deref(), *attempt) {
                    self.stderr_line(&line, out);
                }
            }
            Event::TaskStarted { task } | Event::TaskFinished { task } => {
                let agent = task.agent_type.as_deref().unwrap_or("task");
                let status = serde_json::to_value(task.status)
                    .ok()
                    .and_then(|status| status.as_str().map(str::to_owned))
                    .unwrap_or_default();
                self.stderr_line(
                    &format!(
                        "task {} ({agent}) {status}: {}",
                        task.task_id, task.description
                    ),
                    out,
                );
            }
            Event::TaskResumed { task } => {
                let agent = task.agent_type.as_deref().unwrap_or("task");
                self.stderr_line(
                    &format!(
                        "task {} ({agent}) resumed after the daemon restart: {}",
                        task.task_id, task.description
                    ),
                    out,
                );
            }
            Event::SessionUpdated {
                permission_mode,
                provider,
                model,
                title,
            } => {
                let mut changes = Vec::new();
                if let Some(mode) = permission_mode {
                    changes.push(format!("mode {}", mode.as_str()));
                }
                if let (Some(provider), Some(model)) = (provider, model) {
                    changes.push(format!("model {provider}:{model}"));
                }
                if let Some(title) = title {
                    changes.push(format!("title {title:?}"));
                }
                self.stderr_line(&format!("[session] now: {}", changes.join(", ")), out);
            }
            Event::ConfigReloaded { needs_restart, .. } => {
                let waiting = match needs_restart.is_empty() {
                    true => String::new(),
                    false => format!(" (after a restart: {})", needs_restart.join(", ")),
                };
                self.stderr_line(&format!("[config] reloaded{waiting}"), out);
            }
            Event::ConfigInvalid { error, .. } => {
                self.stderr_line(&format!("[config] invalid, not loaded: {error}"), out);
            }
            Event::Rewound {
                restored,
                deleted,
                undo_seq,
                ..
            } => {
                self.stderr_line(
                    &format!(
                        "rewound: {restored} file(s) restored, {deleted} removed (undo: agentctl rewind {session_id} --seq {undo_seq})"
                    ),
                    out,
                );
            }
            // Only the skipped paths are worth a line; the checkpoint itself is silent.
            Event::Checkpointed { skipped, .. } if !skipped.is_empty() && !self.is_transcript() => {
                let line = format!("checkpoint left out: {}", one_line(&skipped.join(", ")));
                self.stderr_styled(Style::Dim, &line, out);
            }
            Event::Checkpointed { .. }
            | Event::SessionCreated { .. }
            | Event::SessionDeleted {}
            | Event::TaskUpdated { .. }
            | Event::FollowUpQueued { .. }
            | Event::SteerQueued { .. }
            | Event::Lagged {}
            | Event::SessionUnloaded {} => {}
        }
    }
}
