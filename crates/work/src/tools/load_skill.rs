//! `load_skill`: the model loads one skill of the catalogue in its system prompt, getting the
//! `SKILL.md` body (prefixed `[skill] <name>`) and the list of the skill directory's other
//! files. Its results are never cut by the output cap (a `SKILL.md` is bounded on discovery)
//! and never cleared from old context (`skills::is_skill_result`).

use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{ReadFilter, ToolContext, ToolOutput, TypedTool, str_field};
use agentd_knowledge::skills::{LoadedSkill, SkillLimits};

/// The `load_skill` tool; it knows the user's skills directory, the workspace comes with each
/// call.
#[derive(Clone, Debug)]
pub struct LoadSkill {
    /// `$XDG_CONFIG_HOME/agentd/skills`, searched after the project's skill directories.
    pub(crate) user_dir: Option<PathBuf>,
    pub(crate) limits: SkillLimits,
}

impl LoadSkill {
    pub fn new(user_dir: Option<PathBuf>) -> Self {
        Self {
            user_dir,
            limits: SkillLimits::default(),
        }
    }
}

/// The run's Read deny rules hold for skills too: a `SKILL.md` they cover is not loaded, and
/// the files they cover are left out of the listing (counted, never named).
fn apply_read_rules(
    mut loaded: LoadedSkill,
    read_filter: &ReadFilter,
) -> Result<LoadedSkill, String> {
    let denied = |path: &Path| {
        let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        read_filter.denies(agentd_knowledge::skills::LOAD_SKILL_TOOL, &resolved)
    };
    if denied(&loaded.skill.path) {
        return Err(format!(
            "skill `{}` cannot be loaded: a deny rule covers {}",
            loaded.skill.name,
            loaded.skill.path.display()
        ));
    }
    let before = loaded.files.len();
    loaded.files.retain(|file| !denied(file));
    loaded.withheld = before - loaded.files.len();
    Ok(loaded)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct LoadSkillParams {
    /// The skill's name.
    name: String,
}

impl TypedTool for LoadSkill {
    type Params = LoadSkillParams;
    const NAME: &'static str = agentd_knowledge::skills::LOAD_SKILL_TOOL;
    const DESCRIPTION: &'static str = "Load a skill of <available_skills>: call it as soon as a task matches one, \
         before doing the task, and follow its instructions. Returns them and the paths \
         of the skill's other files (read those only when needed).";
    const READ_ONLY: bool = true;
    const TRUNCATE_OUTPUT: bool = false;

    fn summary(&self, input: &serde_json::Value) -> String {
        super::one_line(str_field(input, "name"), 80)
    }

    fn run<'a>(
        &'a self,
        params: LoadSkillParams,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        let workspace = ctx.workspace.clone();
        let user_dir = self.user_dir.clone();
        let limits = self.limits.clone();
        let read_filter = ctx.read_filter.clone();
        Box::pin(async move {
            let loaded = tokio::task::spawn_blocking(move || {
                let catalogue =
                    agentd_knowledge::skills::discover(&workspace, user_dir.as_deref(), &limits);
                let loaded = agentd_knowledge::skills::load(&catalogue, &params.name, &limits)?;
                let loaded = apply_read_rules(loaded, &read_filter)?;
                Ok::<_, String>(agentd_knowledge::skills::render(&loaded, &workspace))
            })
            .await
            .map_err(|err| format!("load_skill failed: {err}"))?;
            loaded.map(ToolOutput::ok)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_support::{DenyUnder, call, workspace};
    use serde_json::json;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[tokio::test]
    async fn read_deny_rules_hold_for_skills_and_their_files() {
        let (_dir, mut ctx) = workspace();
        let skill = |name: &str| format!("---\ndescription: {name} skill\n---\n{name} body\n");
        write(&ctx.workspace.join("skills/open/SKILL.md"), &skill("open"));
        write(&ctx.workspace.join("skills/open/notes.md"), "n");
        write(&ctx.workspace.join("skills/open/secret/key.txt"), "k");
        write(
            &ctx.workspace.join("skills/hidden/SKILL.md"),
            &skill("hidden"),
        );
        DenyUnder::install(&mut ctx, "skills/hidden");
        let tool = LoadSkill::new(None);

        let output = call(&tool, json!({"name": "hidden"}), &ctx).await;
        assert!(output.is_error);
        assert!(
            output.content.contains("a deny rule covers"),
            "{}",
            output.content
        );

        DenyUnder::install(&mut ctx, "skills/open/secret");
        let output = call(&tool, json!({"name": "open"}), &ctx).await;
        assert!(!output.is_error, "{}", output.content);
        assert!(
            output.content.contains("- skills/open/notes.md"),
            "{}",
            output.content
        );
        assert!(!output.content.contains("key.txt"), "{}", output.content);
        assert!(
            output
                .content
                .ends_with("[1 entries withheld by deny rules]\n"),
            "{}",
            output.content
        );
    }
}
