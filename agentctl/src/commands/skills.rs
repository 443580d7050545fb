//! `agentctl skills list [--cwd DIR]`: the skills a session in DIR (default: the current
//! directory) is offered, as a table, and the skills skipped with why on stderr.

use std::path::PathBuf;

use protocol::methods::SkillsList;
use protocol::skills::{SkillInfo, SkillSource, SkillsListParams};

use crate::Context;
use crate::output::{CommandError, print_json};
use crate::render::{one_line, truncate};

/// Longest description shown in the table.
const DESCRIPTION_MAX_CHARS: usize = 80;

/// `agentctl skills list`.
pub async fn list(ctx: &Context, cwd: Option<PathBuf>) -> Result<(), CommandError> {
    let here = std::env::current_dir()
        .map_err(|err| CommandError::failed(format!("cannot read the current directory: {err}")))?;
    let cwd = match cwd {
        Some(dir) => here.join(dir),
        None => here,
    };
    let connection = ctx.connect().await?;
    let params = SkillsListParams {
        cwd: cwd.display().to_string(),
    };
    let result = connection.request::<SkillsList>(&params).await?;
    if ctx.json {
        print_json(&result);
        return Ok(());
    }
    if result.skills.is_empty() {
        crate::say!(
            "no skills for {}; add one as skills/<name>/SKILL.md (or .agents/skills/, .claude/skills/) with a name and a description in its frontmatter",
            cwd.display()
        );
    } else {
        crate::say_raw!("{}", format_table(&result.skills));
    }
    for warning in &result.warnings {
        crate::warn_line!("warning: {}", one_line(warning));
    }
    Ok(())
}

/// One line per skill: name, source, description, then its file on the next line.
pub fn format_table(skills: &[SkillInfo]) -> String {
    let mut rows: Vec<[String; 3]> = Vec::new();
    for skill in skills {
        let source = match skill.source {
            SkillSource::Project => "project",
            SkillSource::User => "user",
        };
        rows.push([
            skill.name.clone(),
            source.to_owned(),
            truncate(&one_line(&skill.description), DESCRIPTION_MAX_CHARS),
        ]);
        // Its file, under the description.
        rows.push([String::new(), String::new(), skill.path.clone()]);
    }
    crate::table::format(["NAME", "SOURCE", "DESCRIPTION"], &rows)
}
