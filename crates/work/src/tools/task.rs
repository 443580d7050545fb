//! `task`: the model delegates work to a subagent, a child session with its own context
//! (DESIGN §6). The tool only parses and hands the request to the session's
//! [`SubagentLauncher`] (the session layer implements it), so tools never name sessions.

use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{ToolContext, ToolOutput, TypedTool};

/// The agent a task runs as when the model names none (`agents::GENERAL_PURPOSE`, the
/// built-in general-purpose definition).
pub const DEFAULT_AGENT_TYPE: &str = "general-purpose";

/// What the model asks of a subagent.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskParams {
    /// The whole task: the subagent sees nothing of this conversation (unless `fork`).
    pub prompt: String,
    /// One of the available agents (default `general-purpose`).
    // `agent_type` (the design notes' spelling) and `subagent_type` (Claude Code's) are read
    // as this, so a model used to them need not retry; the schema (in every request) names
    // only `agentType`.
    #[serde(
        default,
        alias = "agent_type",
        alias = "subagent_type",
        alias = "subagentType"
    )]
    pub agent_type: Option<String>,
    /// Short description (default: the prompt's first line).
    #[serde(default)]
    pub description: Option<String>,
    /// Return the task id at once; the result comes later.
    #[serde(default, alias = "run_in_background")]
    pub run_in_background: bool,
    /// Start from this conversation so far, not a fresh context.
    #[serde(default)]
    pub fork: bool,
}

/// Starts subagents for one run of one session.
pub trait SubagentLauncher: Send + Sync {
    /// Runs (foreground) or starts (background) a subagent; every failure is an error output
    /// the model reads, never a failure of the run. `cancel` is the parent run's token.
    fn launch(
        &self,
        params: TaskParams,
        cancel: tokio_util::sync::CancellationToken,
    ) -> BoxFuture<'static, ToolOutput>;
}

/// The `task` tool.
pub struct TaskTool;

impl TypedTool for TaskTool {
    type Params = TaskParams;
    const NAME: &'static str = "task";
    const DESCRIPTION: &'static str = "Delegate a self-contained task to a subagent: a fresh agent with its own context \
         and tools that sees only your prompt, so say all it needs. Returns its final \
         message; with `runInBackground`, its task id at once and the result later as a \
         <task-notification>. Several calls in one turn run in \
         parallel.";
    // Daemon bookkeeping: the child's own tool calls go through its own permission gate.
    const READ_ONLY: bool = true;

    fn summary(&self, input: &serde_json::Value) -> String {
        let agent = ["agentType", "agent_type", "subagent_type", "subagentType"]
            .iter()
            .find_map(|key| input.get(*key))
            .and_then(|value| value.as_str())
            .unwrap_or(DEFAULT_AGENT_TYPE);
        let what = input
            .get("description")
            .or_else(|| input.get("prompt"))
            .and_then(|value| value.as_str())
            .and_then(|text| text.lines().next())
            .unwrap_or("");
        format!("{agent}: {}", what.chars().take(80).collect::<String>())
    }

    fn run<'a>(
        &'a self,
        params: TaskParams,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        let launcher: Option<Arc<dyn SubagentLauncher>> = ctx.subagents.clone();
        let cancel = ctx.cancel.clone();
        Box::pin(async move {
            match launcher {
                Some(launcher) => Ok(launcher.launch(params, cancel).await),
                None => Err("subagents are not available in this session".to_owned()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_field_is_read_in_the_spellings_models_use() {
        for key in ["agentType", "agent_type", "subagent_type", "subagentType"] {
            let params: TaskParams =
                serde_json::from_value(serde_json::json!({"prompt": "p", key: "explore"}))
                    .unwrap_or_else(|err| panic!("{key}: {err}"));
            assert_eq!(params.agent_type.as_deref(), Some("explore"), "{key}");
        }
        let params: TaskParams =
            serde_json::from_value(serde_json::json!({"prompt": "p", "run_in_background": true}))
                .unwrap();
        assert!(params.run_in_background);
        // Other unknown fields are still refused, so a typo is heard.
        assert!(
            serde_json::from_value::<TaskParams>(serde_json::json!({"prompt": "p", "agnet": "x"}))
                .is_err()
        );
        assert_eq!(
            TaskTool.summary(&serde_json::json!({"subagent_type": "explore", "prompt": "look"})),
            "explore: look"
        );
    }
}
