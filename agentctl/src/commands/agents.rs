//! `agentctl agents list [--cwd DIR]`: the subagents a session in DIR (default: the current
//! directory) can delegate to, as a table, and on stderr what of a definition is not used and
//! the definition files not used, with why.

use std::path::PathBuf;

use protocol::agents::{AgentInfo, AgentSource, AgentsListParams};
use protocol::methods::AgentsList;

use crate::Context;
use crate::output::{CommandError, print_json};
use crate::render::{one_line, truncate};

/// Longest description shown in the table.
const DESCRIPTION_MAX_CHARS: usize = 80;

/// `agentctl agents list`.
pub async fn list(ctx: &Context, cwd: Option<PathBuf>) -> Result<(), CommandError> {
    let here = std::env::current_dir()
        .map_err(|err| CommandError::failed(format!("cannot read the current directory: {err}")))?;
    let cwd = match cwd {
        Some(dir) => here.join(dir),
        None => here,
    };
    let connection = ctx.connect().await?;
    let params = AgentsListParams {
        cwd: cwd.display().to_string(),
    };
    let result = connection.request::<AgentsList>(&params).await?;
    if ctx.json {
        print_json(&result);
        return Ok(());
    }
    crate::say_raw!("{}", format_table(&result.agents));
    for agent in &result.agents {
        for warning in &agent.warnings {
            let file = agent.path.as_deref().unwrap_or(&agent.name);
            crate::warn_line!("warning: {file}: {}", one_line(warning));
        }
    }
    for problem in &result.problems {
        crate::warn_line!("warning: {}: {}", problem.path, one_line(&problem.reason));
    }
    Ok(())
}

/// One line per agent: name, source, tools (`all`, `read-only` or the list), description, then
/// its file on the next line when it has one.
pub fn format_table(agents: &[AgentInfo]) -> String {
    let mut rows: Vec<[String; 3]> = Vec::new();
    for agent in agents {
        let source = match agent.source {
            AgentSource::BuiltIn => "built-in",
            AgentSource::Project => "project",
            AgentSource::User => "user",
        };
        let mut notes = Vec::new();
        if agent.read_only {
            notes.push("read-only".to_owned());
        }
        if agent.background {
            notes.push("background".to_owned());
        }
        if let Some(model) = &agent.model {
            notes.push(format!("model {model}"));
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" [{}]", notes.join(", "))
        };
        let description = truncate(&one_line(&agent.description), DESCRIPTION_MAX_CHARS);
        rows.push([
            agent.name.clone(),
            source.to_owned(),
            format!("{description}{notes}"),
        ]);
        // Its file, under the description.
        if let Some(path) = &agent.path {
            rows.push([String::new(), String::new(), path.clone()]);
        }
    }
    crate::table::format(["NAME", "SOURCE", "DESCRIPTION"], &rows)
}
