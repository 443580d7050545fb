//! The `memory` tool: the model adds, replaces and removes entries of its curated memory
//! (`MEMORY.md`, `USER.md`; see `agentd_knowledge::memory`). It changes only the daemon's own stores, so
//! it asks no approval; plan mode refuses it like every write (`permission::ToolKind::DaemonStore`).

use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{ToolContext, ToolOutput, TypedTool, one_line, str_field};
use agentd_knowledge::memory::{Edit, MemoryStores, MemoryTarget};

/// The tool, writing through the daemon's one [`MemoryStores`].
pub struct MemoryTool {
    stores: Arc<MemoryStores>,
}

impl MemoryTool {
    pub fn new(stores: Arc<MemoryStores>) -> Self {
        Self { stores }
    }
}

/// What to do.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum MemoryAction {
    /// New entry `content`.
    Add,
    /// The entry with `oldText` becomes `newContent`.
    Replace,
    /// Delete the entry with `oldText`.
    Remove,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct MemoryParams {
    /// Which store.
    target: MemoryTarget,
    action: MemoryAction,
    /// add: one fact.
    #[serde(default)]
    content: Option<String>,
    /// A short text in exactly one entry.
    #[serde(default, alias = "old_text")]
    old_text: Option<String>,
    /// replace: the new text.
    #[serde(default, alias = "new_content")]
    new_content: Option<String>,
}

impl TypedTool for MemoryTool {
    type Params = MemoryParams;
    const NAME: &'static str = "memory";
    const DESCRIPTION: &'static str = "Memory shown to later sessions. Save unasked: the user's corrections and \
         preferences first, stable facts of the environment or project (OS, build and \
         test commands, conventions), what you are asked to remember. Not progress, \
         to-dos, dumps, procedures, what is easy to find or in AGENTS.md. Short factual \
         entries; a full store refuses an add, listing its entries: merge or remove stale \
         ones.";
    const READ_ONLY: bool = false;

    fn summary(&self, input: &serde_json::Value) -> String {
        let target = str_field(input, "target");
        let action = str_field(input, "action");
        let text = match str_field(input, "content") {
            "" => str_field(input, "oldText"),
            content => content,
        };
        one_line(&format!("{action} {target}: {text}"), 80)
    }

    fn run<'a>(
        &'a self,
        params: MemoryParams,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        Box::pin(async move {
            let edit = edit_of(params.action, &params)?;
            self.stores
                .edit(ctx.workspace.clone(), params.target, edit)
                .await
                .map(ToolOutput::ok)
        })
    }
}

/// The edit the params ask for; `content` stands in for a missing `newContent` of a replace.
fn edit_of(action: MemoryAction, params: &MemoryParams) -> Result<Edit, String> {
    let old_text = || {
        params.old_text.clone().ok_or_else(|| {
            "oldText is missing: give a short piece of text found in exactly one entry".to_owned()
        })
    };
    Ok(match action {
        MemoryAction::Add => Edit::Add {
            content: params
                .content
                .clone()
                .ok_or("content is missing: give the entry to save")?,
        },
        MemoryAction::Replace => Edit::Replace {
            old_text: old_text()?,
            new_content: params
                .new_content
                .clone()
                .or_else(|| params.content.clone())
                .ok_or("newContent is missing: give the entry's new text")?,
        },
        MemoryAction::Remove => Edit::Remove {
            old_text: old_text()?,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::{call, workspace};
    use serde_json::json;

    fn tool(data: &std::path::Path) -> MemoryTool {
        // `scope = "user"`: MEMORY.md in `data/memory/`.
        let settings = agentd_knowledge::memory::MemorySettings {
            scope: agentd_knowledge::memory::Scope::User,
            ..Default::default()
        };
        MemoryTool::new(Arc::new(MemoryStores::new(data, data, settings)))
    }

    #[tokio::test]
    async fn replace_accepts_content_when_new_content_is_missing() {
        let data = tempfile::tempdir().unwrap();
        let (_dir, ctx) = workspace();
        let memory = tool(data.path());
        let add = json!({"target": "memory", "action": "add", "content": "node 18"});
        assert!(!call(&memory, add, &ctx).await.is_error);
        let lenient =
            json!({"target": "memory", "action": "replace", "oldText": "18", "content": "node 20"});
        let out = call(&memory, lenient, &ctx).await;
        assert!(!out.is_error, "{}", out.content);
        assert!(out.content.contains("7/2,200 chars"), "{}", out.content);
        let snake = json!({"target": "memory", "action": "remove", "old_text": "node 20"});
        assert!(!call(&memory, snake, &ctx).await.is_error);
        let text = std::fs::read_to_string(data.path().join("memory/MEMORY.md")).unwrap();
        assert_eq!(text, "");
    }

    #[tokio::test]
    async fn missing_fields_and_bad_targets_are_errors_for_the_model() {
        let data = tempfile::tempdir().unwrap();
        let (_dir, ctx) = workspace();
        let memory = tool(data.path());
        for (input, words) in [
            (
                json!({"target": "memory", "action": "add"}),
                "content is missing",
            ),
            (
                json!({"target": "user", "action": "remove"}),
                "oldText is missing",
            ),
            (
                json!({"target": "user", "action": "replace", "oldText": "x"}),
                "newContent is missing",
            ),
            (
                json!({"target": "notes", "action": "add", "content": "x"}),
                "invalid arguments",
            ),
        ] {
            let out = call(&memory, input, &ctx).await;
            assert!(
                out.is_error && out.content.contains(words),
                "{}",
                out.content
            );
        }
    }
}
