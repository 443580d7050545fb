//! A tool call reduced to what rules match on (`Subject`): read from the request with the hard
//! limits applied (destructive commands, protected paths), then matched against the deny, ask
//! and allow rules for `Policy::evaluate`.

use std::path::{Path, PathBuf};

use super::notes::notes_written;
use super::operands::operand_targets;
use super::redirect::{TargetPlace, place_of, write_targets};
use super::rule::PathContext;
use super::shell::parse;
use super::{Rule, ToolRequest, destructive_reason, split_shell_command};
use agentd_core::workspace::{
    PROTECTED_PATHS, notes_file, protected_component, resolve_in_workspace,
};

/// A tool call reduced to what rules match on.
pub(super) struct Subject {
    /// For messages: "run `ls`", "write_file src/a.rs", "fetch https://…", "call mcp__a__b".
    pub(super) action: String,
    target: Target,
    /// Canonical workspace root (or as given when it cannot be resolved).
    pub(super) workspace: PathBuf,
    /// The notes file (`AGENTS.md`, `CLAUDE.md`) a file tool writes, relative to the
    /// workspace: asked about every time, whatever the mode or allow rules.
    pub(super) notes: Option<String>,
}

/// What the rules of the tool match on.
enum Target {
    Shell {
        command: String,
        parts: Vec<String>,
        /// Files the line writes through redirections or `tee` that are not plain workspace
        /// files: outside it, protected, or unknowable before the command runs.
        writes: Vec<(String, TargetPlace)>,
        /// The workspace files among those targets, resolved, for `Edit` rules with a path.
        written: Vec<(String, PathBuf)>,
        /// Why `parts` may not be all the line runs: then only an exact rule allows it.
        unaccounted: Option<String>,
    },
    Path(PathBuf),
    Host(Option<String>),
    Plain,
}

impl Subject {
    /// Reads the request and applies the hard limits: Err is the deny reason.
    pub(super) fn of(request: &ToolRequest<'_>) -> Result<Subject, String> {
        let tool = request.tool;
        let input = request.input;
        let workspace = request
            .workspace
            .canonicalize()
            .unwrap_or_else(|_| request.workspace.to_path_buf());
        let field = |name: &str| input.get(name).and_then(serde_json::Value::as_str);
        let mut notes = None;
        let (action, target) = match tool {
            "run_shell" => {
                let command = field("command").unwrap_or("").trim().to_owned();
                if let Some(why) = destructive_reason(&command) {
                    return Err(format!(
                        "refused: {why}. Destructive commands are blocked by a built-in list \
                         that no rule or mode lifts"
                    ));
                }
                let parts = split_shell_command(&command);
                let targets = write_targets(&command);
                let parsed = parse(&command);
                let mut writes = Vec::new();
                let mut written = Vec::new();
                let operand_targets = operand_targets(&parsed);
                let all_targets = targets.paths.into_iter().chain(operand_targets);
                for target in all_targets {
                    let (place, resolved) =
                        place_of(&target, targets.changes_dir, &workspace, |path| {
                            protected_component(path, &workspace)
                                .or_else(|| notes_file(path, &workspace))
                        });
                    if let Some(resolved) = resolved {
                        written.push((target.clone(), resolved));
                    }
                    if place != TargetPlace::Workspace {
                        writes.push((target, place));
                    }
                }
                (
                    format!("run `{command}`"),
                    Target::Shell {
                        unaccounted: parsed.unaccounted,
                        command,
                        parts,
                        writes,
                        written,
                    },
                )
            }
            "read_file" | "write_file" | "edit_file" | "list_dir" | "glob" | "grep" => {
                let path = match field("path") {
                    Some(path) => path,
                    None if matches!(tool, "list_dir" | "glob" | "grep") => ".",
                    None => return Err(format!("{tool}: missing `path`")),
                };
                let resolved = resolve_in_workspace(request.workspace, path)?;
                if matches!(tool, "write_file" | "edit_file") {
                    if let Some(protected) = protected_component(&resolved, &workspace) {
                        return Err(format!(
                            "{tool} {path}: `{protected}` is protected; tools never write \
                             {PROTECTED_PATHS}, whatever the rules or mode"
                        ));
                    }
                    notes = notes_written(path, &resolved, &workspace)?;
                }
                (format!("{tool} {path}"), Target::Path(resolved))
            }
            "fetch_url" => {
                let url = field("url").unwrap_or("");
                (format!("fetch {url}"), Target::Host(url_host(url)))
            }
            _ => (format!("call {tool}"), Target::Plain),
        };
        Ok(Subject {
            action,
            target,
            workspace,
            notes,
        })
    }

    /// Deny and ask rules: the rule matches the call (for shell: any part, or the whole line
    /// exactly).
    pub(super) fn matches_any(&self, rule: &Rule, context: &PathContext<'_>) -> bool {
        match &self.target {
            Target::Shell { command, parts, .. } => {
                rule.matches_command_exactly(command)
                    || parts.iter().any(|part| rule.matches_command(part))
                    || (parts.is_empty() && rule.is_whole_tool())
            }
            Target::Path(path) => rule.matches_path(path, context),
            Target::Host(host) => rule.matches_host(host.as_deref()),
            Target::Plain => rule.is_whole_tool(),
        }
    }

    /// Allow rules: the first rule that allows the call (for shell: every part must be matched,
    /// by any of the rules; an exact rule may name the whole line).
    pub(super) fn allowed_by<'r>(
        &self,
        rules: &[&'r Rule],
        context: &PathContext<'_>,
    ) -> Option<&'r Rule> {
        match &self.target {
            Target::Shell { command, parts, .. } => {
                if let Some(rule) = rules
                    .iter()
                    .find(|rule| rule.matches_command_exactly(command))
                {
                    return Some(rule);
                }
                let mut first = None;
                for part in parts {
                    let rule = rules.iter().find(|rule| rule.matches_command(part))?;
                    first.get_or_insert(*rule);
                }
                first
            }
            _ => rules
                .iter()
                .find(|rule| self.matches_any(rule, context))
                .copied(),
        }
    }
}

impl Subject {
    /// For a shell line the parser cannot account for completely (a script read from standard
    /// input, a command name known only when it runs, an unterminated quote): the reason to
    /// ask, unless an exact rule names the whole line. No prefix rule covers such a line.
    pub(super) fn unaccounted_needing_approval(&self, allow_rules: &[&Rule]) -> Option<String> {
        let Target::Shell {
            command,
            unaccounted: Some(why),
            ..
        } = &self.target
        else {
            return None;
        };
        if allow_rules
            .iter()
            .any(|rule| rule.matches_command_exactly(command))
        {
            return None;
        }
        Some(format!(
            "approval needed to {}: {why}, so what it runs cannot be checked and no allow \
             rule covers it",
            self.action
        ))
    }

    /// For a shell line: the first workspace file it writes through a redirection or `tee`
    /// that an `Edit`/`Write` rule with a path matches (a rule for the whole tool does not
    /// reach into the shell).
    pub(super) fn write_matched_by<'r>(
        &self,
        rules: &'r [Rule],
        context: &PathContext<'_>,
    ) -> Option<(&str, &'r Rule)> {
        let Target::Shell { written, .. } = &self.target else {
            return None;
        };
        written.iter().find_map(|(target, resolved)| {
            rules
                .iter()
                .find(|rule| {
                    rule.names_tool("write_file")
                        && !rule.is_whole_tool()
                        && rule.matches_path(resolved, context)
                })
                .map(|rule| (target.as_str(), rule))
        })
    }

    /// Why a shell line's write through a redirection or `tee` needs approval (the first
    /// target outside the workspace, protected, or unknowable), unless an allow rule names the
    /// whole line exactly: a prefix rule for the command does not cover where it writes.
    pub(super) fn write_needing_approval(&self, allow_rules: &[&Rule]) -> Option<String> {
        let Target::Shell {
            command, writes, ..
        } = &self.target
        else {
            return None;
        };
        let (target, place) = writes.first()?;
        if allow_rules
            .iter()
            .any(|rule| rule.matches_command_exactly(command))
        {
            return None;
        }
        let where_ = match place {
            TargetPlace::Outside => "outside the workspace".to_owned(),
            // `.mcp.json`, `AGENTS.md`: the target is the protected path itself.
            TargetPlace::Protected(component) if Path::new(target).ends_with(component) => {
                "(a protected path)".to_owned()
            }
            TargetPlace::Protected(component) => format!("inside the protected `{component}`"),
            TargetPlace::Unknown => {
                "where the shell decides when it runs (an expansion, a glob, `~` or a path after \
                 `cd`)"
                    .to_owned()
            }
            TargetPlace::Workspace => "in the workspace".to_owned(),
        };
        Some(format!(
            "approval needed to {}: it writes `{target}` {where_}, and an allow rule for the \
             command does not cover where it writes",
            self.action
        ))
    }
}

/// The host of `url`, lowercased; None when it does not parse or has none.
pub(super) fn url_host(url: &str) -> Option<String> {
    let url = reqwest::Url::parse(url.trim()).ok()?;
    url.host_str().map(str::to_ascii_lowercase)
}
