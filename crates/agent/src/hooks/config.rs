//! Where hooks come from and what they look like: Claude Code's shape `{Event: [{matcher,
//! hooks: [{type: "command", command, timeout}]}]}`, read from a JSON value (settings files,
//! agent definitions, and config.toml's `[hooks]` converted to one), and the project's settings
//! files with the trust verdict of each. A part that cannot be used is a [`HookProblem`], never
//! a failure of the whole section.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::{HookDef, HookEvent, HookSource, Matcher};
use agentd_policy::trust::{FileTrust, ProjectTrust};

/// A hook's timeout when it gives none (Claude Code's).
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest timeout a hook may ask for; a longer one is cut to this (a hook holds a run).
pub const MAX_HOOK_TIMEOUT: Duration = Duration::from_secs(600);
/// The most hooks one source defines; more are problems (each runs a process per event).
pub const MAX_HOOKS_PER_SOURCE: usize = 100;

/// Something of a hooks section that is not used, and where (`PreToolUse[0].hooks[1]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookProblem {
    /// The event key it is under (for positions in config.toml), if it is under one.
    pub event: Option<String>,
    pub location: String,
    pub message: String,
    /// A bad matcher or a timeout cut: the rest of the section is fine (a warning even where
    /// structural problems are errors).
    pub minor: bool,
}

impl std::fmt::Display for HookProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "hooks.{}: {}", self.location, self.message)
    }
}

/// The hooks of one `hooks` value from `source`, and what of it is not used.
pub fn parse_section(
    value: &serde_json::Value,
    source: &Arc<HookSource>,
) -> (Vec<HookDef>, Vec<HookProblem>) {
    let mut hooks = Vec::new();
    let mut problems = Vec::new();
    let Some(events) = value.as_object() else {
        problems.push(problem(None, String::new(), "must be a table of events"));
        return (hooks, problems);
    };
    for (name, groups) in events {
        let Ok(event) = name.parse::<HookEvent>() else {
            problems.push(problem(
                Some(name),
                name.clone(),
                &format!(
                    "unknown event (expected one of {}); ignored",
                    HookEvent::ALL
                        .iter()
                        .map(|event| event.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
            continue;
        };
        let Some(groups) = groups.as_array() else {
            problems.push(problem(
                Some(name),
                name.clone(),
                "must be a list of {matcher, hooks}",
            ));
            continue;
        };
        for (index, group) in groups.iter().enumerate() {
            let at = format!("{name}[{index}]");
            parse_group(event, group, &at, source, &mut hooks, &mut problems);
        }
    }
    if hooks.len() > MAX_HOOKS_PER_SOURCE {
        problems.push(problem(
            None,
            String::new(),
            &format!(
                "{} hooks; at most {MAX_HOOKS_PER_SOURCE} are used, the rest are ignored",
                hooks.len()
            ),
        ));
        hooks.truncate(MAX_HOOKS_PER_SOURCE);
    }
    (hooks, problems)
}

fn parse_group(
    event: HookEvent,
    group: &serde_json::Value,
    at: &str,
    source: &Arc<HookSource>,
    hooks: &mut Vec<HookDef>,
    problems: &mut Vec<HookProblem>,
) {
    let event_name = Some(event.name());
    let Some(group) = group.as_object() else {
        problems.push(problem(event_name, at.to_owned(), "must be a table"));
        return;
    };
    if let Some(key) = group
        .keys()
        .find(|key| *key != "matcher" && *key != "hooks")
    {
        problems.push(problem(
            event_name,
            format!("{at}.{key}"),
            "unknown key (expected matcher and hooks); ignored",
        ));
    }
    let matcher = match group.get("matcher") {
        None | Some(serde_json::Value::Null) => String::new(),
        Some(serde_json::Value::String(text)) => text.clone(),
        Some(_) => {
            problems.push(problem(
                event_name,
                format!("{at}.matcher"),
                "must be a string; the group is ignored",
            ));
            return;
        }
    };
    let compiled = match Matcher::new(&matcher) {
        Ok(compiled) => compiled,
        Err(error) => {
            problems.push(HookProblem {
                minor: true,
                ..problem(
                    event_name,
                    format!("{at}.matcher"),
                    &format!("{matcher:?} is not a valid regex ({error}); its hooks are skipped"),
                )
            });
            return;
        }
    };
    let Some(commands) = group.get("hooks").and_then(serde_json::Value::as_array) else {
        problems.push(problem(
            event_name,
            format!("{at}.hooks"),
            "must be a list of {type = \"command\", command, timeout}",
        ));
        return;
    };
    for (index, command) in commands.iter().enumerate() {
        let at = format!("{at}.hooks[{index}]");
        let Some(fields) = command.as_object() else {
            problems.push(problem(event_name, at, "must be a table"));
            continue;
        };
        if let Some(key) = fields
            .keys()
            .find(|key| !matches!(key.as_str(), "type" | "command" | "timeout"))
        {
            problems.push(HookProblem {
                minor: true,
                ..problem(
                    event_name,
                    format!("{at}.{key}"),
                    "unknown key (expected type, command and timeout); ignored",
                )
            });
        }
        match fields.get("type").and_then(serde_json::Value::as_str) {
            Some("command") | None => {}
            Some(other) => {
                problems.push(problem(
                    event_name,
                    format!("{at}.type"),
                    &format!("{other:?} hooks are not supported (only \"command\"); skipped"),
                ));
                continue;
            }
        }
        let Some(text) = fields
            .get("command")
            .and_then(serde_json::Value::as_str)
            .filter(|text| !text.trim().is_empty())
        else {
            problems.push(problem(
                event_name,
                format!("{at}.command"),
                "must be a command line (a non-empty string)",
            ));
            continue;
        };
        let timeout = match fields.get("timeout") {
            None | Some(serde_json::Value::Null) => DEFAULT_HOOK_TIMEOUT,
            Some(value) => match value
                .as_f64()
                .filter(|secs| secs.is_finite() && *secs > 0.0)
            {
                Some(secs) => {
                    let asked = Duration::from_secs_f64(secs.min(1e6));
                    if asked > MAX_HOOK_TIMEOUT {
                        problems.push(HookProblem {
                            minor: true,
                            ..problem(
                                event_name,
                                format!("{at}.timeout"),
                                &format!(
                                    "{secs} seconds is more than the {} s allowed; cut to it",
                                    MAX_HOOK_TIMEOUT.as_secs()
                                ),
                            )
                        });
                    }
                    asked.min(MAX_HOOK_TIMEOUT)
                }
                None => {
                    problems.push(problem(
                        event_name,
                        format!("{at}.timeout"),
                        "must be a positive number of seconds",
                    ));
                    continue;
                }
            },
        };
        hooks.push(HookDef {
            event,
            matcher: matcher.clone(),
            compiled: compiled.clone(),
            command: text.to_owned(),
            timeout,
            source: Arc::clone(source),
        });
    }
}

fn problem(event: Option<&str>, location: String, message: &str) -> HookProblem {
    HookProblem {
        event: event.map(str::to_owned),
        location,
        message: message.to_owned(),
        minor: false,
    }
}

/// One project settings file's hooks, with the trust verdict of its content.
pub(super) struct ProjectFile {
    pub path: PathBuf,
    pub verdict: FileTrust,
    pub hooks: Vec<HookDef>,
}

/// The hooks of the project's settings files, each file with its trust verdict, and what
/// could not be read. Blocking: reads files.
pub(super) fn project_files(
    workspace: &Path,
    trust: &ProjectTrust,
) -> (Vec<ProjectFile>, Vec<String>) {
    let mut found = Vec::new();
    let mut warnings = Vec::new();
    let texts = match agentd_policy::permission::read_project_settings(workspace) {
        Ok(texts) => texts,
        Err(error) => {
            warnings.push(format!("project hooks not used: {error}"));
            return (found, warnings);
        }
    };
    warnings.extend(
        texts
            .refused
            .iter()
            .map(|refusal| format!("project hooks not used: {refusal}")),
    );
    for (path, text) in texts.files {
        let value = match hooks_value_of(&path, &text) {
            Ok(Some(value)) => value,
            Ok(None) => continue,
            Err(error) => {
                warnings.push(format!("hooks of {} not used: {error}", path.display()));
                continue;
            }
        };
        let verdict = trust.verdict(&path, &text);
        let source = Arc::new(HookSource::Project {
            path: path.clone(),
            trust: verdict,
        });
        let (hooks, problems) = parse_section(&value, &source);
        warnings.extend(
            problems
                .iter()
                .map(|problem| format!("{}: {problem}", path.display())),
        );
        found.push(ProjectFile {
            path,
            verdict,
            hooks,
        });
    }
    (found, warnings)
}

/// The `hooks` value of a settings file (TOML or, by its extension, JSON), None when it has
/// none.
fn hooks_value_of(path: &Path, text: &str) -> Result<Option<serde_json::Value>, String> {
    let is_json = path
        .extension()
        .is_some_and(|extension| extension == "json");
    let whole: serde_json::Value = if is_json {
        serde_json::from_str(text).map_err(|error| error.to_string())?
    } else {
        let table: toml::Table = toml::from_str(text).map_err(|error| error.to_string())?;
        serde_json::to_value(table).map_err(|error| error.to_string())?
    };
    Ok(whole.get("hooks").cloned())
}
