//! The batch executor: runs the tool calls of one model message and pairs each with exactly one
//! result, in the model's order (DESIGN §5 steps 4–6).
//!
//! All calls run concurrently only if every call's tool is parallel-safe; otherwise they run one
//! after the other in the model's order, and the observer may skip the rest (a steer). Unknown
//! tools, malformed arguments, panics and cancellation all become error results.

use std::panic::AssertUnwindSafe;

use agentd_core::logging::panic_message;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};

use super::{ProgressSink, Tool, ToolContext, ToolOutput, ToolRegistry};
use agentd_core::conversation::ToolCall;
use agentd_core::truncate::truncate_middle;

/// Watches a batch: UIs show calls starting, progressing and completing.
///
/// Every call gets exactly one `completed`. `started` comes first for calls that were attempted
/// (including unknown tools and bad arguments, which fail at once); calls skipped or cancelled
/// before they started get only `completed`.
pub trait BatchObserver: Send + Sync {
    fn started(&self, call: &ToolCall, summary: &str);
    fn progress(&self, call: &ToolCall, message: &str);
    fn completed(&self, call: &ToolCall, output: &ToolOutput, duration: Duration);
    /// Checked before starting each call of a sequential batch; Some(reason) → the call is not run
    /// and gets an error result with that text (the agent uses it for "skipped: user steered").
    fn skip_reason(&self) -> Option<String>;
}

/// An observer that ignores everything and never skips.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoopObserver;

impl BatchObserver for NoopObserver {
    fn started(&self, _call: &ToolCall, _summary: &str) {}
    fn progress(&self, _call: &ToolCall, _message: &str) {}
    fn completed(&self, _call: &ToolCall, _output: &ToolOutput, _duration: Duration) {}
    fn skip_reason(&self) -> Option<String> {
        None
    }
}

/// A tool call paired with its result.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult {
    pub call: ToolCall,
    pub output: ToolOutput,
}

/// The result text of calls that did not finish because the run was cancelled.
pub const CANCELLED: &str = "cancelled";

/// Runs `calls` and returns one result per call, in the order of `calls`.
pub async fn execute_batch(
    registry: &ToolRegistry,
    calls: &[ToolCall],
    ctx: &ToolContext,
    observer: &dyn BatchObserver,
) -> Vec<ToolResult> {
    let prepared: Vec<Prepared> = calls.iter().map(|call| prepare(registry, call)).collect();
    let parallel = prepared.iter().all(|prepared| match prepared {
        Prepared::Ready { tool, .. } => {
            catch_panic(|| tool.parallel_safe(), "parallel_safe").unwrap_or(false)
        }
        Prepared::Invalid(_) => true,
    });

    let outputs: Vec<ToolOutput> = if parallel {
        // Build the futures first: a closure inside the stream would make the batch future
        // fail the `Send` check the daemon's task spawn needs (a higher-ranked lifetime issue).
        let pending: Vec<_> = calls
            .iter()
            .zip(prepared)
            .map(|(call, prepared)| run_call(call, prepared, ctx, observer))
            .collect();
        futures::stream::iter(pending)
            .buffered(ctx.limits.parallel_max.max(1))
            .collect()
            .await
    } else {
        let mut outputs = Vec::with_capacity(calls.len());
        for (call, prepared) in calls.iter().zip(prepared) {
            outputs.push(run_call(call, prepared, ctx, observer).await);
        }
        outputs
    };

    calls
        .iter()
        .cloned()
        .zip(outputs)
        .map(|(call, output)| ToolResult { call, output })
        .collect()
}

/// A call after lookup and argument validation.
enum Prepared {
    Ready {
        tool: Arc<dyn Tool>,
        input: serde_json::Value,
    },
    /// Unknown tool or bad arguments: the error result, nothing runs.
    Invalid(ToolOutput),
}

fn prepare(registry: &ToolRegistry, call: &ToolCall) -> Prepared {
    let Some(tool) = registry.get(&call.name) else {
        let available = registry.names().join(", ");
        // An MCP tool may have been offered before: its server is starting, restarting,
        // failed or gone now.
        let why = if registry.get(super::tool_search::SEARCH_TOOLS).is_some() {
            // The MCP tools are searched: the name may be a guess.
            ": no MCP tool of this session has this name now; find MCP tools with search_tools"
        } else if call.name.starts_with("mcp__") {
            ": no MCP server of this session offers it now (its server may be starting, restarting or stopped; it can be offered again later)"
        } else {
            ""
        };
        return Prepared::Invalid(ToolOutput::error(format!(
            "unknown tool `{}`{why}; available tools: {available}",
            call.name
        )));
    };
    let input = match parse_arguments(&call.name, &call.arguments) {
        Ok(input) => input,
        Err(message) => return Prepared::Invalid(ToolOutput::error(message)),
    };
    match catch_panic(|| tool.validate(&input), "validate") {
        Ok(Ok(())) => Prepared::Ready { tool, input },
        Ok(Err(message)) | Err(message) => Prepared::Invalid(ToolOutput::error(message)),
    }
}

/// Parses the model's raw argument text into a JSON object. Empty text counts as `{}` (some
/// models send nothing for tools without parameters).
fn parse_arguments(tool_name: &str, arguments: &str) -> Result<serde_json::Value, String> {
    if arguments.trim().is_empty() {
        return Ok(serde_json::Value::Object(serde_json::Map::new()));
    }
    let value: serde_json::Value = serde_json::from_str(arguments).map_err(|error| {
        format!("invalid arguments for {tool_name}: not valid JSON ({error}); send a JSON object")
    })?;
    if !value.is_object() {
        return Err(format!(
            "invalid arguments for {tool_name}: expected a JSON object, got {}",
            json_kind(&value)
        ));
    }
    Ok(value)
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Runs one call to its final (truncated) output and tells the observer.
async fn run_call(
    call: &ToolCall,
    prepared: Prepared,
    ctx: &ToolContext,
    observer: &dyn BatchObserver,
) -> ToolOutput {
    let start = Instant::now();
    if ctx.cancel.is_cancelled() {
        return finish(call, ToolOutput::error(CANCELLED), start, observer);
    }
    if let Some(reason) = observer.skip_reason() {
        return finish(call, ToolOutput::error(reason), start, observer);
    }
    let (tool, input) = match prepared {
        Prepared::Invalid(output) => {
            observer.started(call, "");
            return finish(call, output, start, observer);
        }
        Prepared::Ready { tool, input } => (tool, input),
    };
    let summary = catch_panic(|| tool.summary(&input), "summary").unwrap_or_default();
    observer.started(call, &summary);

    let (progress_tx, mut progress_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let call_ctx = ToolContext {
        progress: ProgressSink::new(move |message| {
            let _ = progress_tx.send(message);
        }),
        tool_call_id: Some(call.id.clone()),
        ..ctx.clone()
    };
    let running = match std::panic::catch_unwind(AssertUnwindSafe(|| tool.call(input, &call_ctx))) {
        Ok(running) => running,
        Err(panic) => {
            let output = panicked(tool.as_ref(), panic.as_ref());
            return finish(call, output, start, observer);
        }
    };
    let mut running = AssertUnwindSafe(running).catch_unwind();
    let outcome = loop {
        tokio::select! {
            biased;
            outcome = &mut running => break Some(outcome),
            () = ctx.cancel.cancelled() => break None,
            Some(message) = progress_rx.recv() => observer.progress(call, &message),
        }
    };
    if outcome.is_none()
        && catch_panic(|| tool.winds_down_on_cancel(), "winds_down_on_cancel").unwrap_or(false)
    {
        // The call tells the other side it was cancelled (bounded); its result stays
        // "cancelled" whatever it returns.
        let _ = tokio::time::timeout(ctx.limits.cancel_wind_down, &mut running).await;
    }
    drop(running);
    while let Ok(message) = progress_rx.try_recv() {
        observer.progress(call, &message);
    }
    let output = match outcome {
        None => ToolOutput::error(CANCELLED),
        Some(Ok(output))
            if output.content.is_empty() && output.images.is_empty() && !output.is_error =>
        {
            ToolOutput::ok("(no output)")
        }
        Some(Ok(output)) if tool.truncate_output() => ToolOutput {
            content: truncate_middle(&output.content, ctx.limits.output_max_chars).into_owned(),
            is_error: output.is_error,
            images: output.images,
        },
        Some(Ok(output)) => output,
        Some(Err(panic)) => panicked(tool.as_ref(), panic.as_ref()),
    };
    finish(call, output, start, observer)
}

fn finish(
    call: &ToolCall,
    output: ToolOutput,
    start: Instant,
    observer: &dyn BatchObserver,
) -> ToolOutput {
    observer.completed(call, &output, start.elapsed());
    output
}

/// The result of a call whose tool panicked; the panic is logged.
fn panicked(tool: &dyn Tool, panic: &(dyn std::any::Any + Send)) -> ToolOutput {
    let message = panic_message(panic);
    tracing::error!(tool = tool.name(), %message, "tool panicked");
    ToolOutput::error(format!(
        "{} failed with an internal error: {message}",
        tool.name()
    ))
}

/// Runs a synchronous tool method, turning a panic into an error message.
fn catch_panic<T>(f: impl FnOnce() -> T, what: &str) -> Result<T, String> {
    std::panic::catch_unwind(AssertUnwindSafe(f))
        .map_err(|panic| format!("tool {what} failed: {}", panic_message(panic.as_ref())))
}

#[cfg(test)]
#[path = "executor_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "executor_wind_down_tests.rs"]
mod wind_down_tests;
