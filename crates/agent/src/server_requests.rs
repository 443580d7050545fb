//! The run's side of an MCP server's requests during a tool batch: the batch's calls carry a
//! [`RunServerRequests`] (a channel), and the run serves what comes through it while the batch
//! runs (`Run::serving`), with the run itself at hand: a question (`elicitation`) and a
//! sampling request, which waits for an approval showing the server and its prompt (the
//! approval machinery of `gate`: any client, first answer wins, headless denied by mode), then
//! runs as one model call on the session's provider (the server's messages, its system prompt,
//! its `maxTokens`, no tools), counted in the session's usage (`usageUpdated`).

use std::sync::Arc;
use std::time::SystemTime;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use tokio::sync::{mpsc, oneshot};

use super::Run;
use crate::elicitation::{Asking, ask};
use crate::gate::Waiting;
use agentd_core::conversation::Message;
use agentd_llm::ChatRequest;
use agentd_work::tools::server_requests::{
    McpElicitation, McpElicitationAnswer, McpSampled, McpSampling, McpServerRequests,
};
use protocol::approval::{ApprovalDecision, PendingApproval};
use protocol::event::Event;

/// Requests waiting to be served at once; a server asks one thing per call at a time.
const QUEUED_REQUESTS: usize = 16;
/// The most characters of a sampling prompt an approval shows (the middle is cut).
const MAX_SHOWN_PROMPT_CHARS: usize = 4000;

/// One request of a server, with where its answer goes.
pub(crate) enum ServerRequest {
    Elicit(McpElicitation, oneshot::Sender<McpElicitationAnswer>),
    Sample(McpSampling, oneshot::Sender<Result<McpSampled, String>>),
}

/// What the batch's MCP calls hand their server's requests to.
pub(crate) struct RunServerRequests {
    requests: mpsc::Sender<ServerRequest>,
}

/// A batch's requests channel: the side its calls carry, and the side the run serves.
pub(crate) fn channel() -> (Arc<dyn McpServerRequests>, mpsc::Receiver<ServerRequest>) {
    let (requests, served) = mpsc::channel(QUEUED_REQUESTS);
    (Arc::new(RunServerRequests { requests }), served)
}

const BATCH_OVER: &str = "the agentd run's tool batch is over";

impl McpServerRequests for RunServerRequests {
    fn elicit(&self, question: McpElicitation) -> BoxFuture<'_, McpElicitationAnswer> {
        Box::pin(async move {
            let (answer, answered) = oneshot::channel();
            if self
                .requests
                .send(ServerRequest::Elicit(question, answer))
                .await
                .is_err()
            {
                return McpElicitationAnswer::declined(BATCH_OVER);
            }
            answered
                .await
                .unwrap_or_else(|_| McpElicitationAnswer::declined(BATCH_OVER))
        })
    }

    fn sample(&self, request: McpSampling) -> BoxFuture<'_, Result<McpSampled, String>> {
        Box::pin(async move {
            let (answer, answered) = oneshot::channel();
            if self
                .requests
                .send(ServerRequest::Sample(request, answer))
                .await
                .is_err()
            {
                return Err(BATCH_OVER.to_owned());
            }
            answered
                .await
                .unwrap_or_else(|_| Err(BATCH_OVER.to_owned()))
        })
    }
}

impl Run {
    /// Drive `work` (the batch) while serving its servers' requests from `served`; requests
    /// still being served when it ends are dropped (their calls have ended too).
    pub(crate) async fn serving<F: Future>(
        &self,
        mut served: mpsc::Receiver<ServerRequest>,
        work: F,
    ) -> F::Output {
        let mut work = std::pin::pin!(work);
        let mut serving = FuturesUnordered::new();
        let mut open = true;
        loop {
            tokio::select! {
                output = &mut work => return output,
                request = served.recv(), if open => match request {
                    Some(request) => serving.push(self.serve(request)),
                    None => open = false,
                },
                Some(()) = serving.next(), if !serving.is_empty() => {}
            }
        }
    }

    async fn serve(&self, request: ServerRequest) {
        match request {
            ServerRequest::Elicit(question, answer) => {
                let shutting_down = || self.shutting_down();
                let asking = Asking {
                    broker: &self.permissions.elicitations,
                    log: &*self.log,
                    session_id: &self.session_id,
                    run_id: &self.run_id,
                    timeout: self.permissions.approval_timeout,
                    hold: self.permissions.hold_approvals,
                    cancel: &self.cancel,
                    shutting_down: &shutting_down,
                };
                let _ = answer.send(ask(asking, question).await);
            }
            ServerRequest::Sample(request, answer) => {
                let _ = answer.send(self.sample(request).await);
            }
        }
    }

    /// Whether the run's cancel is the daemon shutting down.
    fn shutting_down(&self) -> bool {
        self.stop_reason
            .lock()
            .map(|reason| matches!(*reason, Some(super::StopReason::Shutdown)))
            .unwrap_or(false)
    }

    /// A sampling request: asked as an approval, then one model call, counted in the usage.
    async fn sample(&self, request: McpSampling) -> Result<McpSampled, String> {
        let approval = self.sampling_approval(&request);
        let tool_call_id = approval.tool_call_id.clone();
        let approval_id = approval.approval_id.clone();
        let waiting = Waiting {
            timeout: self.permissions.approval_timeout,
            hold: self.permissions.hold_approvals,
        };
        let resolution = self
            .wait_for_answer(approval, None, waiting)
            .await
            .map_err(|err| format!("the sampling request could not be asked: {err:#}"))?;
        let allowed = resolution.decision.allows();
        let _ = self
            .log
            .append(Event::ApprovalResolved {
                run_id: self.run_id.clone(),
                approval_id,
                tool_call_id,
                decision: resolution.decision,
                decided_by: resolution.decided_by.clone(),
                reason: resolution.reason.clone(),
                session_rule: None,
            })
            .await;
        if !allowed {
            let because = resolution
                .reason
                .map(|reason| format!(": {reason}"))
                .unwrap_or_default();
            return Err(format!(
                "the agentd user did not allow this sampling request ({}){because}",
                resolution.decided_by
            ));
        }
        self.run_sampling(request).await
    }

    /// The approval that shows a sampling request: the server, its system prompt and its
    /// messages (bounded), its `maxTokens`; allow once or deny.
    fn sampling_approval(&self, request: &McpSampling) -> PendingApproval {
        let mut shown = String::new();
        if let Some(system) = &request.system_prompt {
            shown.push_str(&format!("[system] {system}\n"));
        }
        for (assistant, text) in &request.messages {
            let role = if *assistant { "assistant" } else { "user" };
            shown.push_str(&format!("[{role}] {text}\n"));
        }
        let shown =
            agentd_core::truncate::truncate_middle(shown.trim_end(), MAX_SHOWN_PROMPT_CHARS)
                .into_owned();
        let first_line = request
            .messages
            .last()
            .map(|(_, text)| text.lines().next().unwrap_or_default().to_owned())
            .unwrap_or_default();
        let now = SystemTime::now();
        let label = self.permissions.task_label.as_ref();
        PendingApproval {
            approval_id: format!("apr_{}", uuid::Uuid::new_v4().simple()),
            session_id: self.session_id.to_string(),
            run_id: self.run_id.clone(),
            tool_call_id: request
                .tool_call_id
                .clone()
                .unwrap_or_else(|| "sampling".to_owned()),
            tool: format!("mcp__{}__sampling", request.server),
            summary: agentd_work::tools::one_line(
                &format!("{} asks the model: {first_line}", request.server),
                120,
            ),
            input: serde_json::json!({
                "server": request.server,
                "prompt": shown,
                "maxTokens": request.max_tokens,
            }),
            reason: format!(
                "MCP server {} asks to use the session's model (sampling, up to {} tokens)",
                request.server, request.max_tokens
            ),
            options: vec![ApprovalDecision::AllowOnce, ApprovalDecision::Deny],
            requested_at: humantime::format_rfc3339_seconds(now).to_string(),
            expires_at: crate::gate::expires_at(now, self.permissions.approval_timeout),
            task_id: label.map(|(id, _)| id.clone()),
            agent_type: label.map(|(_, agent)| agent.clone()),
            parent_run_id: self.permissions.parent_run_id.clone(),
            session_rule: None,
            always_rule: None,
        }
    }

    /// One model call of the server's conversation, no tools, at most its `maxTokens`.
    async fn run_sampling(&self, request: McpSampling) -> Result<McpSampled, String> {
        let messages: Vec<Message> = request
            .messages
            .into_iter()
            .map(|(assistant, content)| {
                if assistant {
                    Message::Assistant {
                        content,
                        tool_calls: Vec::new(),
                    }
                } else {
                    Message::User {
                        content,
                        images: Vec::new(),
                    }
                }
            })
            .collect();
        let llm = self
            .llm
            .with_max_output_tokens(u64::from(request.max_tokens.max(1)));
        let system = request.system_prompt.unwrap_or_default();
        let chat = ChatRequest {
            session_id: &self.cache_key,
            system: &system,
            messages: &messages,
            tools: &[],
        };
        let mut ignore = |_event| {};
        let completion = tokio::select! {
            completion = llm.complete(&chat, &mut ignore) => completion,
            () = self.cancel.cancelled() => return Err("the agentd run was cancelled".to_owned()),
        }
        .map_err(|err| format!("the model call failed: {err}"))?;
        let (total, total_cost_usd) = {
            let mut state = self.shared.lock();
            state.add_usage(&completion.usage, self.budget.prices);
            (state.usage, state.cost_usd)
        };
        let _ = self
            .log
            .append(Event::UsageUpdated {
                run_id: self.run_id.clone(),
                usage: agentd_core::conversation::wire::usage(&completion.usage),
                total: agentd_core::conversation::wire::usage(&total),
                // Not the session's context: the server's own conversation.
                context_window: None,
                total_cost_usd,
            })
            .await;
        let stop_reason = if completion.cut_at_output_limit() {
            "maxTokens"
        } else {
            "endTurn"
        };
        Ok(McpSampled {
            text: completion.content,
            model: llm.model().to_owned(),
            stop_reason: Some(stop_reason.to_owned()),
        })
    }
}
