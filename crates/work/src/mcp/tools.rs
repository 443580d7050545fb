//! MCP tools as the run sees them: each tool of a ready server is a [`Tool`] named
//! `mcp__<server>__<tool>` (sanitised, at most 64 chars, a short hash suffix on a collision),
//! with the server's description and input schema passed through; its results become tool
//! outputs (text joined, images kept for the provider, resource links listed,
//! `structuredContent` only when no block became text or an image, `isError` an error). [`session_tools`] builds the tool set of
//! one model call: the built-ins plus the tools of every ready server, sorted by name.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::mpsc;

use super::{McpCallError, McpCallResult, McpContent, McpHandle, McpProgress, McpToolInfo};
use crate::tools::{Tool, ToolContext, ToolOutput, ToolRegistry};
use agentd_core::conversation::ToolImage;

/// Longest tool name the providers accept (OpenAI and Anthropic both cap names at 64).
pub(crate) const MAX_TOOL_NAME_CHARS: usize = 64;
/// Hex digits of the hash suffix that tells apart names that sanitise or cut to the same text.
const HASH_SUFFIX_DIGITS: usize = 6;
/// Largest image (its base64 text) passed to the model; a bigger one is described instead.
/// Anthropic refuses images over 5 MB, and the result is stored in one line of the session
/// file, whose lines stay far under the 16 MiB line limit.
pub(crate) const MAX_IMAGE_BASE64_BYTES: usize = 5 * 1024 * 1024;
/// Base64 bytes of all images of one result together; the rest are described instead.
pub(crate) const MAX_RESULT_IMAGES_BYTES: usize = 8 * 1024 * 1024;
/// Image types both providers take (Anthropic accepts exactly these); another type, sent on,
/// would make every later request of the session fail, so it is described instead.
pub(crate) const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];
/// Progress notifications of one call waiting to be reported; more are dropped (the next one
/// says where the call is anyway), so a chatty server cannot grow the daemon's memory.
const PROGRESS_QUEUE: usize = 64;

/// One tool of one MCP server, callable by the model.
pub(crate) struct McpTool {
    /// `mcp__<server>__<tool>`, as offered to the model.
    name: String,
    info: McpToolInfo,
    handle: Arc<McpHandle>,
}

impl McpTool {
    pub(crate) fn new(name: String, info: McpToolInfo, handle: Arc<McpHandle>) -> Self {
        Self { name, info, handle }
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.info.description
    }

    fn input_schema(&self) -> serde_json::Value {
        self.info.input_schema.clone()
    }

    fn mcp_server(&self) -> Option<&str> {
        Some(&self.handle.key().name)
    }

    /// The server's `readOnlyHint`: only such calls run in parallel, without asking.
    fn read_only(&self) -> bool {
        self.info.read_only
    }

    /// A cancelled call sends `notifications/cancelled` before it ends.
    fn winds_down_on_cancel(&self) -> bool {
        true
    }

    fn summary(&self, input: &serde_json::Value) -> String {
        crate::tools::one_line(&input.to_string(), 120)
    }

    fn call<'a>(
        &'a self,
        input: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let arguments = match input {
                serde_json::Value::Object(arguments) => arguments,
                // The executor hands over objects only; anything else is sent as no arguments.
                _ => serde_json::Map::new(),
            };
            let (progress_tx, mut progress_rx) = mpsc::channel::<McpProgress>(PROGRESS_QUEUE);
            let asker = ctx.server_requests.clone().map(|requests| {
                crate::tools::server_requests::CallAsker {
                    requests,
                    tool_call_id: ctx.tool_call_id.clone(),
                }
            });
            let call = self.handle.call_asking(
                &self.info.name,
                arguments,
                (Some(progress_tx), asker),
                ctx.cancel.clone(),
            );
            let mut call = std::pin::pin!(call);
            let interval = ctx.limits.mcp_progress_interval;
            let mut last_report: Option<std::time::Instant> = None;
            let result = loop {
                tokio::select! {
                    biased;
                    result = &mut call => break result,
                    Some(progress) = progress_rx.recv() => {
                        // Throttled: a report closer than `interval` to the last is dropped.
                        if last_report.is_none_or(|last| last.elapsed() >= interval) {
                            last_report = Some(std::time::Instant::now());
                            ctx.progress.report(progress_line(&progress));
                        }
                    }
                }
            };
            output_of(&self.name, result)
        })
    }
}

/// The tools of one model call: `builtins` plus the tools of every ready server among
/// `servers`, named by [`exposed_names`]; a registry keeps them sorted by name.
pub fn session_tools(builtins: &ToolRegistry, servers: &[Arc<McpHandle>]) -> ToolRegistry {
    let mut registry = builtins.clone();
    let mut offered: Vec<(String, McpToolInfo, Arc<McpHandle>)> = Vec::new();
    for handle in servers {
        for info in handle.tools().iter() {
            offered.push((handle.key().name.clone(), info.clone(), Arc::clone(handle)));
        }
    }
    let pairs: Vec<(&str, &str)> = offered
        .iter()
        .map(|(server, info, _)| (server.as_str(), info.name.as_str()))
        .collect();
    let names = exposed_names(&pairs);
    for ((_, info, handle), name) in offered.into_iter().zip(names) {
        registry.register(Arc::new(McpTool::new(name, info, handle)));
    }
    registry
}

/// The names `(server, tool)` pairs are offered under, in the order given:
/// `mcp__<server>__<tool>` with every char outside `[a-zA-Z0-9_-]` made `_`, at most
/// [`MAX_TOOL_NAME_CHARS`]. A name that had to be cut, or that an earlier pair (in sorted
/// order) already has, gets `_` and a hash of the pair's own names, so it stays the same from
/// one call to the next and across restarts.
pub(crate) fn exposed_names(pairs: &[(&str, &str)]) -> Vec<String> {
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    order.sort_by(|a, b| pairs[*a].cmp(&pairs[*b]));
    let mut taken: BTreeMap<String, ()> = BTreeMap::new();
    let mut names = vec![String::new(); pairs.len()];
    for index in order {
        let (server, tool) = pairs[index];
        let full = format!("mcp__{}__{}", sanitise(server), sanitise(tool));
        let mut name = if full.len() <= MAX_TOOL_NAME_CHARS {
            full.clone()
        } else {
            with_suffix(&full, server, tool, 0)
        };
        let mut attempt = 0;
        while taken.contains_key(&name) {
            name = with_suffix(&full, server, tool, attempt);
            attempt += 1;
        }
        taken.insert(name.clone(), ());
        names[index] = name;
    }
    names
}

/// `text` with every char outside `[a-zA-Z0-9_-]` replaced by `_`.
fn sanitise(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `full` cut so that `_` and the hash suffix fit in [`MAX_TOOL_NAME_CHARS`].
fn with_suffix(full: &str, server: &str, tool: &str, attempt: u32) -> String {
    let hash = fnv1a(&format!("{server}\0{tool}\0{attempt}"));
    let suffix = format!("{:0width$x}", hash, width = HASH_SUFFIX_DIGITS);
    let suffix = &suffix[suffix.len() - HASH_SUFFIX_DIGITS..];
    // `full` is ASCII after sanitising, so any byte index is a char boundary.
    let keep = full.len().min(MAX_TOOL_NAME_CHARS - 1 - HASH_SUFFIX_DIGITS);
    format!("{}_{suffix}", &full[..keep])
}

/// FNV-1a (32 bits): a hash whose value is fixed by its definition, so names are stable
/// across builds (std's hasher makes no such promise).
fn fnv1a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

/// Whether `data` is standard base64 (padded): what the providers decode. A server's bad data
/// sent on would make every later request of the session fail.
fn is_base64(data: &str) -> bool {
    let bytes = data.as_bytes();
    let body = bytes
        .strip_suffix(b"==")
        .or_else(|| bytes.strip_suffix(b"="))
        .unwrap_or(bytes);
    !bytes.is_empty()
        && bytes.len().is_multiple_of(4)
        && body
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/')
}

/// One `toolProgress` line of a call: "3/10 message", "3 message", or the message alone.
fn progress_line(progress: &McpProgress) -> String {
    let amount = match progress.total {
        Some(total) => format!("{}/{}", number(progress.progress), number(total)),
        None => number(progress.progress),
    };
    match &progress.message {
        Some(message) if !message.is_empty() => format!("{amount} {message}"),
        _ => amount,
    }
}

/// A progress figure without a trailing `.0`.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// What the model reads of a call: the server's result, or the call's error.
pub(crate) fn output_of(tool: &str, result: Result<McpCallResult, McpCallError>) -> ToolOutput {
    match result {
        Ok(result) => convert_result(tool, result),
        Err(error) => ToolOutput::error(error.to_string()),
    }
}

/// A server's result as a tool output: text blocks joined by newlines, images kept (within
/// [`MAX_IMAGE_BASE64_BYTES`] each and [`MAX_RESULT_IMAGES_BYTES`] together, else described),
/// resource links listed, embedded text resources included, `structuredContent` as JSON only
/// when no block became text or an image, `isError` an error.
pub(crate) fn convert_result(tool: &str, result: McpCallResult) -> ToolOutput {
    let mut parts: Vec<String> = Vec::new();
    let mut images: Vec<ToolImage> = Vec::new();
    let mut image_bytes = 0usize;
    for content in result.content {
        match content {
            McpContent::Text(text) => parts.push(text),
            McpContent::Image { mime_type, data } => {
                let size = data.len();
                if !IMAGE_TYPES.contains(&mime_type.as_str()) {
                    parts.push(format!(
                        "[image {mime_type}: a type the model is not shown (only {})]",
                        IMAGE_TYPES.join(", ")
                    ));
                } else if !is_base64(&data) {
                    parts.push(format!(
                        "[image {mime_type}: not valid base64, not shown to the model]"
                    ));
                } else if size > MAX_IMAGE_BASE64_BYTES
                    || image_bytes.saturating_add(size) > MAX_RESULT_IMAGES_BYTES
                {
                    parts.push(format!(
                        "[image {mime_type}, {size} bytes of base64: too large to show to the model]"
                    ));
                } else {
                    image_bytes += size;
                    images.push(ToolImage { mime_type, data });
                }
            }
            McpContent::ResourceLink { uri, name } => parts.push(match name {
                Some(name) if !name.is_empty() => format!("[resource link: {name} <{uri}>]"),
                _ => format!("[resource link: <{uri}>]"),
            }),
            McpContent::Resource {
                uri,
                text: Some(text),
            } => parts.push(format!("[resource <{uri}>]\n{text}")),
            McpContent::Resource { uri, text: None } => {
                parts.push(format!("[binary resource <{uri}>: not shown]"));
            }
            McpContent::Other(description) => parts.push(description),
        }
    }
    // `structuredContent` mirrors the content blocks (the spec): it is read only when no block
    // became text or an image, else an image would come twice, once as base64 text.
    if parts.is_empty()
        && images.is_empty()
        && let Some(structured) = &result.structured
    {
        parts.push(serde_json::to_string_pretty(structured).unwrap_or_default());
    }
    let mut content = parts.join("\n");
    if result.is_error && content.is_empty() {
        content = format!("{tool} reported an error without a message");
    }
    ToolOutput {
        content,
        is_error: result.is_error,
        images,
    }
}

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tests;
