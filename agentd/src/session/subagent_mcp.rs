//! The MCP servers of a child whose definition lists `mcpServers`: those servers instead of
//! its parent's. Named ones are looked up among what the session would have (the user's
//! config.toml, the project's trusted `.mcp.json`, the parent's `session/create` servers);
//! inline ones are resolved as the session's own. An inline server of a project definition
//! starts only while trust pins the content it was read from, expands only the variables
//! `[mcp] expand_env` lists, and runs confined as a project's `.mcp.json` server does: a
//! repository cannot start through a definition what it could not start through `.mcp.json`.
//! Frozen in the child's header at creation, checked against trust at each run.

use std::path::Path;

use agentd_work::mcp::McpSource;
use agentd_work::mcp::config::{McpEntries, McpResolution};

use crate::store::ChildMcpServers;

/// Narrows `resolution` (what the session would have in `cwd`) to the servers of `child`, the
/// inline ones added (resolved with `trust` and `expand_env`); the warnings say what does not
/// start and why. Blocking: may read the project's files.
pub(crate) fn narrow(
    child: &ChildMcpServers,
    resolution: &mut McpResolution,
    cwd: &Path,
    trust: &agentd_policy::trust::TrustStore,
    expand_env: &[String],
) -> Vec<String> {
    let mut warnings = Vec::new();
    let set = &mut resolution.set;
    for name in &child.names {
        let known = set
            .servers
            .iter()
            .chain(&set.untrusted)
            .chain(&set.disabled)
            .any(|config| &config.name == name);
        if !known && !child.inline.contains_key(name) {
            warnings.push(format!(
                "agent `{}` names the MCP server `{name}`, which is not configured here \
                     (config.toml's [mcp_servers], the project's .mcp.json or the session's \
                     mcpServers), so it does not start",
                child.agent
            ));
        }
    }
    let named = |config: &agentd_work::mcp::McpServerConfig| child.names.contains(&config.name);
    set.servers.retain(named);
    set.untrusted.retain(named);
    set.disabled.retain(named);
    if child.inline.is_empty() {
        return warnings;
    }
    if let Err(why) = inline_allowed(child, &resolution.project) {
        let names: Vec<&str> = child.inline.keys().map(String::as_str).collect();
        warnings.push(format!(
            "the MCP servers agent `{}` defines ({}) do not start: {why}",
            child.agent,
            names.join(", ")
        ));
        return warnings;
    }
    let entries = McpEntries::from_session(&serde_json::Value::Object(child.inline.clone()));
    let from_project = child.project_file.is_some();
    // A project's definition expands only what a project's `.mcp.json` may.
    let env = |name: &str| {
        if from_project && !expand_env.iter().any(|allowed| allowed == name) {
            return None;
        }
        std::env::var(name).ok()
    };
    let inline = agentd_work::mcp::config::resolve_for(
        cwd,
        &McpEntries::default(),
        &entries,
        trust,
        expand_env,
        &env,
    );
    for problem in inline.set.problems.iter().filter(|p| p.file.is_none()) {
        warnings.push(format!(
            "agent `{}`'s mcpServers: {}{}",
            child.agent,
            problem
                .server
                .as_ref()
                .map(|server| format!("server {server}: "))
                .unwrap_or_default(),
            problem.reason
        ));
    }
    let defined = |config: &agentd_work::mcp::McpServerConfig| {
        config.source == McpSource::Session && child.inline.contains_key(&config.name)
    };
    for (mut config, enabled) in inline
        .set
        .servers
        .into_iter()
        .map(|config| (config, true))
        .chain(
            inline
                .set
                .disabled
                .into_iter()
                .map(|config| (config, false)),
        )
        .filter(|(config, _)| defined(config))
    {
        if let Some(file) = &child.project_file {
            // Confined and listed as the project's, as a `.mcp.json` server is.
            config.source = McpSource::Project { file: file.clone() };
        }
        set.servers.retain(|other| other.name != config.name);
        set.disabled.retain(|other| other.name != config.name);
        if enabled {
            set.servers.push(config);
        } else {
            set.disabled.push(config);
        }
    }
    set.servers.sort_by(|a, b| a.name.cmp(&b.name));
    warnings
}

/// Whether the inline servers of `child` may start: a user's always; a project's only while
/// trust pins the content they were read from (Err: why not and how to trust it).
fn inline_allowed(
    child: &ChildMcpServers,
    project: &agentd_policy::trust::ProjectTrust,
) -> Result<(), String> {
    let Some(file) = &child.project_file else {
        return Ok(());
    };
    let verdict = match &child.digest {
        Some(digest) => project.verdict_of_digest(file, digest),
        None => agentd_policy::trust::FileTrust::New,
    };
    if verdict == agentd_policy::trust::FileTrust::Pinned {
        return Ok(());
    }
    Err(format!(
        "{}; {}",
        project.why_withheld(file, verdict),
        project.how_to_trust()
    ))
}
