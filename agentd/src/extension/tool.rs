//! An extension's tools as the run sees them: each is a `Tool` named `ext__<name>__<tool>`
//! whose call goes out as `extension/callTool` on the extension's connection, within the
//! deadline; a connection that drops, a late or a junk answer is an error result the model
//! reads. `ScopeTools` offers a session the tools of the live extensions in its scope, asked
//! at every step.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use super::{ExtensionPeer, Extensions, PeerError};
use agentd_agent::tool_set::ToolSource;
use agentd_work::tools::{Tool, ToolContext, ToolOutput};
use protocol::extension::{ExtensionCallToolParams, ExtensionCallToolResult, ExtensionToolSpec};

/// One tool of one extension.
pub(super) struct ExtensionTool {
    /// `ext__<extension>__<tool>`, as offered to the model.
    exposed: String,
    spec: ExtensionToolSpec,
    extension_id: String,
    extension_name: String,
    peer: Arc<dyn ExtensionPeer>,
    deadline: Duration,
}

impl ExtensionTool {
    pub(super) fn new(
        exposed: String,
        spec: ExtensionToolSpec,
        extension_id: String,
        extension_name: String,
        peer: Arc<dyn ExtensionPeer>,
        deadline: Duration,
    ) -> Self {
        Self {
            exposed,
            spec,
            extension_id,
            extension_name,
            peer,
            deadline,
        }
    }

    async fn call_extension(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let params = ExtensionCallToolParams {
            extension_id: self.extension_id.clone(),
            session_id: ctx.session_id.clone().unwrap_or_default(),
            tool_call_id: ctx.tool_call_id.clone().unwrap_or_default(),
            tool: self.spec.name.clone(),
            arguments: input,
        };
        let params = match serde_json::to_value(params) {
            Ok(params) => params,
            Err(err) => return ToolOutput::error(format!("cannot send the call: {err}")),
        };
        let request = self
            .peer
            .request(protocol::extension::CALL_TOOL, params, self.deadline);
        let answer = tokio::select! {
            answer = request => answer,
            () = ctx.cancel.cancelled() => return ToolOutput::error(agentd_work::tools::CANCELLED),
        };
        let failed = |why: PeerError| {
            ToolOutput::error(format!(
                "the extension {:?} did not run {}: {why}",
                self.extension_name, self.exposed
            ))
        };
        match answer.map(serde_json::from_value::<ExtensionCallToolResult>) {
            Ok(Ok(result)) => ToolOutput {
                content: result.content,
                is_error: result.is_error,
                images: Vec::new(),
            },
            Ok(Err(err)) => failed(PeerError::BadAnswer(
                protocol::error::echo_message(&err.to_string()).into_owned(),
            )),
            Err(why) => failed(why),
        }
    }
}

impl Tool for ExtensionTool {
    fn name(&self) -> &str {
        &self.exposed
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    fn input_schema(&self) -> serde_json::Value {
        self.spec.input_schema.clone()
    }

    /// The extension's `readOnly`: only such calls run in parallel, without asking.
    fn read_only(&self) -> bool {
        self.spec.read_only
    }

    fn summary(&self, input: &serde_json::Value) -> String {
        let text = input.to_string();
        match text.char_indices().nth(120) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text,
        }
    }

    fn call<'a>(
        &'a self,
        input: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(self.call_extension(input, ctx))
    }
}

/// The tools of the live extensions in scope of one session's cwd.
pub(super) struct ScopeTools {
    pub(super) extensions: Arc<Extensions>,
    pub(super) cwd: PathBuf,
}

impl ToolSource for ScopeTools {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.extensions
            .in_scope(&self.cwd)
            .iter()
            .flat_map(|extension| extension.tools.iter().cloned())
            .collect()
    }
}
