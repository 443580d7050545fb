//! The server's requests to agentd during its tool calls: `elicitation/create` and
//! `sampling/createMessage`, routed to the [`CallAsker`] of the oldest call in flight on the
//! connection (`Askers`; MCP over stdio says nothing of which call a request belongs to),
//! turned into [`McpElicitation`] / [`McpSampling`] and their answers back into rmcp's results.
//! With no call in flight the question is declined and the sampling refused, saying why.
//! While a request waits on agentd (a person answering, an approval, the model), the server's
//! calls do not time out: their `tool_timeout` counts only the time nobody is asked
//! ([`Askers::unasked`]).

// Sampling is deprecated by the newest spec (SEP-2577) and so in rmcp; servers still use it.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorCode,
    MetaObject, Role, SamplingMessage, SamplingMessageContentBlock,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleClient};

use crate::tools::server_requests::{
    CallAsker, ElicitationAction, McpElicitation, McpElicitationAnswer, McpSampling, schema_problem,
};

/// The askers of the calls in flight, oldest first, each under its call's number, and how
/// many of the server's requests wait on agentd now.
#[derive(Clone)]
pub(super) struct Askers(Arc<Mutex<AskerTable>>, Arc<watch::Sender<usize>>);

impl Default for Askers {
    fn default() -> Self {
        Askers(Arc::default(), Arc::new(watch::Sender::new(0)))
    }
}

/// A request of the server waiting on agentd, counted until dropped.
struct Waiting(Arc<watch::Sender<usize>>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.send_modify(|open| *open = open.saturating_sub(1));
    }
}

#[derive(Default)]
struct AskerTable {
    next: u64,
    calls: Vec<(u64, CallAsker)>,
}

/// A call's place among the askers, removed when the call ends.
pub(super) struct AskerRoute {
    askers: Askers,
    number: u64,
}

impl Askers {
    /// Registers `asker` for a call until the route is dropped.
    pub(super) fn route(&self, asker: CallAsker) -> AskerRoute {
        let mut table = self.lock();
        let number = table.next;
        table.next += 1;
        table.calls.push((number, asker));
        AskerRoute {
            askers: self.clone(),
            number,
        }
    }

    fn oldest(&self) -> Option<CallAsker> {
        self.lock().calls.first().map(|(_, asker)| asker.clone())
    }

    fn waiting(&self) -> Waiting {
        self.1.send_modify(|open| *open += 1);
        Waiting(Arc::clone(&self.1))
    }

    /// Resolves once `timeout` has passed with none of the server's requests waiting on
    /// agentd: a call's time limit stands still while its server waits for the user's answer
    /// (or an approval, or the model), which may take longer than any tool should.
    pub(super) async fn unasked(&self, timeout: Duration) {
        let mut open = self.1.subscribe();
        let mut left = timeout;
        loop {
            // The sender lives as long as `self`: `wait_for` cannot fail here.
            let _ = open.wait_for(|open| *open == 0).await;
            let started = Instant::now();
            tokio::select! {
                () = tokio::time::sleep(left) => return,
                _ = open.wait_for(|open| *open > 0) => {
                    left = left.saturating_sub(started.elapsed());
                }
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, AskerTable> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for AskerRoute {
    fn drop(&mut self) {
        self.askers
            .lock()
            .calls
            .retain(|(number, _)| *number != self.number);
    }
}

/// The server's `elicitation/create`: a form question goes to the oldest call's run; a URL
/// question, a schema that is not a flat form, or no call in flight is declined with a reason.
pub(super) async fn elicit(
    server: &str,
    askers: &Askers,
    request: ElicitRequestParams,
    context: RequestContext<RoleClient>,
) -> Result<ElicitResult, ErrorData> {
    let (message, requested_schema) = match request {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => (
            message,
            serde_json::to_value(requested_schema).unwrap_or_default(),
        ),
        _ => {
            return Ok(result(McpElicitationAnswer::declined(
                "agentd answers form questions only; it does not open URLs for a server",
            )));
        }
    };
    if let Some(problem) = schema_problem(&requested_schema) {
        return Err(ErrorData::invalid_params(
            format!(
                "{problem}: an elicitation asks for a flat object of strings, numbers, integers and booleans"
            ),
            None,
        ));
    }
    let Some(asker) = askers.oldest() else {
        return Ok(result(McpElicitationAnswer::declined(
            "no tool call of this server is running: agentd asks its user only during a tool call",
        )));
    };
    let question = McpElicitation {
        server: server.to_owned(),
        message,
        requested_schema,
        tool_call_id: asker.tool_call_id.clone(),
    };
    let _waiting = askers.waiting();
    tokio::select! {
        answer = asker.requests.elicit(question) => Ok(result(answer)),
        // The server cancelled its request: the pending question is withdrawn with it.
        () = context.ct.cancelled() => Ok(result(McpElicitationAnswer {
            action: ElicitationAction::Cancel,
            content: None,
            reason: Some("the server cancelled its request".to_owned()),
        })),
    }
}

/// The server's `sampling/createMessage`: refused unless the user's config allows it
/// (`sampling`), then run by the oldest call's run (approval, one model call).
pub(super) async fn sample(
    server: &str,
    sampling: bool,
    askers: &Askers,
    params: CreateMessageRequestParams,
    context: RequestContext<RoleClient>,
) -> Result<CreateMessageResult, ErrorData> {
    if !sampling {
        return Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!(
                "sampling is off for MCP server {server}: the user allows it with sampling = true in [mcp_servers.{server}] of agentd's config.toml"
            ),
            None,
        ));
    }
    let Some(asker) = askers.oldest() else {
        return Err(ErrorData::invalid_request(
            "no tool call of this server is running: agentd samples for a server only during its tool call",
            None,
        ));
    };
    let messages = params
        .messages
        .into_iter()
        .map(|message| {
            let assistant = matches!(message.role, Role::Assistant);
            let text: Vec<String> = message
                .content
                .into_vec()
                .into_iter()
                .map(|block| match block {
                    SamplingMessageContentBlock::Text(text) => text.text,
                    SamplingMessageContentBlock::Image(_) => "[an image]".to_owned(),
                    SamplingMessageContentBlock::Audio(_) => "[audio]".to_owned(),
                    _ => "[a tool block]".to_owned(),
                })
                .collect();
            (assistant, text.join("\n"))
        })
        .collect();
    let request = McpSampling {
        server: server.to_owned(),
        system_prompt: params.system_prompt,
        messages,
        max_tokens: params.max_tokens,
        tool_call_id: asker.tool_call_id.clone(),
    };
    let waiting = askers.waiting();
    let sampled = tokio::select! {
        sampled = asker.requests.sample(request) => sampled,
        () = context.ct.cancelled() => Err("the server cancelled its request".to_owned()),
    };
    drop(waiting);
    match sampled {
        Ok(sampled) => {
            let message = SamplingMessage::new(
                Role::Assistant,
                SamplingMessageContentBlock::text(sampled.text),
            );
            let mut result = CreateMessageResult::new(message, sampled.model);
            if let Some(reason) = sampled.stop_reason {
                result = result.with_stop_reason(reason);
            }
            Ok(result)
        }
        Err(why) => Err(ErrorData::invalid_request(why, None)),
    }
}

/// rmcp's result of `answer`, its reason (if any) as `_meta.reason`.
fn result(answer: McpElicitationAnswer) -> ElicitResult {
    let action = match answer.action {
        ElicitationAction::Accept => rmcp::model::ElicitationAction::Accept,
        ElicitationAction::Decline => rmcp::model::ElicitationAction::Decline,
        ElicitationAction::Cancel => rmcp::model::ElicitationAction::Cancel,
    };
    let mut result = ElicitResult::new(action);
    if let Some(content) = answer.content {
        result = result.with_content(serde_json::Value::Object(content));
    }
    if let Some(reason) = answer.reason {
        let mut meta = serde_json::Map::new();
        meta.insert("reason".to_owned(), serde_json::Value::String(reason));
        result.meta = Some(MetaObject(meta));
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The limit stands still while a request waits, whatever the time taken, and runs on
    /// once it was answered.
    #[tokio::test]
    async fn a_call_does_not_time_out_while_its_server_waits_on_the_user() {
        let askers = Askers::default();
        let waiting = askers.waiting();
        let limit = Duration::from_millis(50);
        let timer = askers.unasked(limit);
        tokio::pin!(timer);
        tokio::select! {
            () = &mut timer => panic!("timed out while the server waited on the user"),
            () = tokio::time::sleep(limit * 6) => {}
        }
        drop(waiting);
        let started = Instant::now();
        timer.await;
        assert!(
            started.elapsed() >= limit / 2,
            "the time before the question counted"
        );
    }

    #[tokio::test]
    async fn without_requests_the_limit_is_the_limit() {
        let askers = Askers::default();
        let started = Instant::now();
        askers.unasked(Duration::from_millis(30)).await;
        assert!(started.elapsed() >= Duration::from_millis(30));
    }
}
