//! `/hooks`: the `hooks` of the settings a session in a directory reads (the user's
//! config.toml, and each project settings file from the workspace up to the root), where each
//! is, and whether it may run (a project file's hooks only once the project is trusted with
//! that very content). One function, `describe`, so the real hook set can replace what it reads.

use std::path::PathBuf;

use super::super::{RpcResult, internal};
use crate::state::DaemonState;
use agentd_policy::trust::{FileTrust, FoundFile};

/// Bytes of the user's config read for its `[hooks]`.
const MAX_CONFIG_BYTES: usize = 1024 * 1024;

/// Hook commands listed per file; the rest is counted.
const HOOKS_LISTED: usize = 50;

/// The hooks found for `cwd`, file by file, with their trust.
pub(super) async fn describe(state: &DaemonState, cwd: &str) -> RpcResult<String> {
    let trust = state.trust.clone();
    let config = state.paths.config.clone();
    let cwd = PathBuf::from(cwd);
    let (user, project) = tokio::task::spawn_blocking(move || {
        let user = agentd_core::regular_file::read_config_text(&config, MAX_CONFIG_BYTES)
            .ok()
            .map(|read| {
                let file = FoundFile {
                    path: config.clone(),
                    digest: String::new(),
                    text: read.text,
                    status: FileTrust::Pinned,
                };
                (config, super::super::project::review::hooks_of(&file))
            });
        (user, trust.review(&cwd))
    })
    .await
    .map_err(|err| internal(err.to_string()))?;
    let mut lines = Vec::new();
    if let Some((path, Some(hooks))) = user {
        lines.push(format!("{} (your config: runs)", path.display()));
        lines.extend(hook_lines(&hooks));
    }
    match project {
        Ok(found) => {
            for file in &found.files {
                let Some(hooks) = super::super::project::review::hooks_of(file) else {
                    continue;
                };
                let verdict = match file.status {
                    FileTrust::Pinned => "trusted: runs",
                    FileTrust::Changed => "changed since trusted: does not run until trusted again",
                    FileTrust::New | FileTrust::Untrusted => "not trusted: does not run",
                };
                lines.push(format!("{} ({verdict})", file.path.display()));
                lines.extend(hook_lines(&hooks));
            }
        }
        Err(err) => lines.push(format!("the project's settings cannot be read: {err}")),
    }
    if lines.is_empty() {
        return Ok("no hooks: none of the settings files here has `hooks`".to_owned());
    }
    Ok(lines.join("\n"))
}

/// One line per hook command of a `hooks` value (`{Event: [{matcher, hooks: [{command}]}]}`).
fn hook_lines(hooks: &serde_json::Value) -> Vec<String> {
    let mut lines = Vec::new();
    let Some(events) = hooks.as_object() else {
        return vec!["  (not an object of events; ignored)".to_owned()];
    };
    let mut count = 0usize;
    for (event, groups) in events {
        for group in groups.as_array().into_iter().flatten() {
            let matcher = group
                .get("matcher")
                .and_then(|matcher| matcher.as_str())
                .filter(|matcher| !matcher.is_empty() && *matcher != "*")
                .map(|matcher| format!(" [{matcher}]"))
                .unwrap_or_default();
            for hook in group
                .get("hooks")
                .and_then(|h| h.as_array())
                .into_iter()
                .flatten()
            {
                count += 1;
                if count > HOOKS_LISTED {
                    continue;
                }
                let command = hook
                    .get("command")
                    .and_then(|command| command.as_str())
                    .unwrap_or("(no command)");
                lines.push(format!("  {event}{matcher}: {command}"));
            }
        }
    }
    if count > HOOKS_LISTED {
        lines.push(format!("  … {} more", count - HOOKS_LISTED));
    }
    lines
}
