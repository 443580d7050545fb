//! `load_skill`: the model loads one skill of the catalogue in its system prompt, getting the
//! `SKILL.md` body (prefixed `[skill] <name>`) and the list of the skill directory's other
//! files. Its results are never cut by the output cap (a `SKILL.md` is bounded on discovery)
//! and never cleared from old context (`skills::is_skill_result`).

use std::path::PathBuf;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{ToolContext, ToolOutput, TypedTool, str_field};
use crate::skills::SkillLimits;

/// The `load_skill` tool; it knows the user's skills directory, the workspace comes with each
/// call.
#[derive(Clone, Debug)]
pub struct LoadSkill {
    /// `$XDG_CONFIG_HOME/agentd/skills`, searched after the project's skill directories.
    pub user_dir: Option<PathBuf>,
    pub limits: SkillLimits,
}

impl LoadSkill {
    pub fn new(user_dir: Option<PathBuf>) -> Self {
        Self {
            user_dir,
            limits: SkillLimits::default(),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct LoadSkillParams {
    /// The skill's name, as listed in <available_skills>.
    name: String,
}

impl TypedTool for LoadSkill {
    type Params = LoadSkillParams;
    const NAME: &'static str = crate::skills::LOAD_SKILL_TOOL;
    const DESCRIPTION: &'static str = "Load the full instructions of a skill listed in \
<available_skills> in the system prompt. Call it as soon as a task matches a skill's description, \
before doing the task, then follow the instructions. Returns the skill's instructions and the \
paths of its other files (templates, scripts, references), which you read only when the \
instructions need them.";
    const READ_ONLY: bool = true;
    const TRUNCATE_OUTPUT: bool = false;

    fn summary(&self, input: &serde_json::Value) -> String {
        super::one_line(str_field(input, "name"), 80)
    }

    fn run<'a>(
        &'a self,
        params: LoadSkillParams,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutput> {
        let workspace = ctx.workspace.clone();
        let user_dir = self.user_dir.clone();
        let limits = self.limits.clone();
        Box::pin(async move {
            let loaded = tokio::task::spawn_blocking(move || {
                let catalogue = crate::skills::discover(&workspace, user_dir.as_deref(), &limits);
                crate::skills::load(&catalogue, &params.name, &limits)
                    .map(|loaded| crate::skills::render(&loaded, &workspace))
            })
            .await;
            match loaded {
                Ok(Ok(text)) => ToolOutput::ok(text),
                Ok(Err(message)) => ToolOutput::error(message),
                Err(err) => ToolOutput::error(format!("load_skill failed: {err}")),
            }
        })
    }
}
