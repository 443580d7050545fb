//! Command files: Markdown prompt templates a user runs as `/name args` (Claude Code's
//! `.claude/commands/*.md`). From `.agents/commands/` and `.claude/commands/` in the workspace
//! and each parent up to the git root (the walk of `workspace::project_dirs`), then the user's
//! `$XDG_CONFIG_HOME/agentd/commands/`; a file in a subdirectory is named `dir:name`. The nearer
//! project file wins a name, the project wins over the user, and a built-in's name is never
//! taken. Frontmatter (`agentd_core::frontmatter`): `description`, `argument-hint`, `model`,
//! `allowed-tools`; the body is expanded (`template`) into the prompt of a normal run.
//!
//! A command file is a prompt, like a skill: it runs no code and loosens nothing, so a
//! project's is offered without trust. Its `allowed-tools` only narrows the tools offered to
//! its run ([`ToolNarrowing`]); it never adds an allow rule. A file that cannot be used is a
//! problem `commands/list` shows, never fatal. Everything here that reads files blocks: call it
//! on the blocking pool.

use std::path::{Path, PathBuf};

use agentd_core::frontmatter::Value;

use crate::tools::ToolRegistry;

mod template;
pub use template::{expand, split_args};

/// The command directories looked for in each project directory, in this order.
pub(crate) const PROJECT_COMMAND_DIRS: &[&str] = &[".agents/commands", ".claude/commands"];

/// Caps on discovery. Limits are data: each says why it exists.
#[derive(Clone, Debug)]
pub struct CommandLimits {
    /// Bytes of one command file read at most; a bigger file is a problem (its body becomes a
    /// prompt, which has its own cap, `conversation::MAX_MESSAGE_CHARS`).
    pub(crate) max_file_bytes: usize,
    /// Commands in one catalogue; more are problems, so a repository cannot flood a client's
    /// completion list.
    pub(crate) max_commands: usize,
    /// Command files read by one discovery (usable or not), so a directory full of broken
    /// files cannot make every listing slow.
    pub(crate) max_files_read: usize,
    /// Entries of one commands directory looked at, so a huge directory cannot stall discovery.
    pub(crate) max_dir_entries: usize,
    /// Subdirectory levels below a commands directory (`a:b:c` is two).
    pub(crate) max_depth: usize,
    /// Characters of a description or argument hint kept; longer ones are cut.
    pub(crate) max_description_chars: usize,
}

impl Default for CommandLimits {
    fn default() -> Self {
        Self {
            max_file_bytes: 64 * 1024,
            max_commands: 200,
            max_files_read: 400,
            max_dir_entries: 1000,
            max_depth: 3,
            max_description_chars: 300,
        }
    }
}

/// Where a command file was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandFileSource {
    Project(PathBuf),
    User(PathBuf),
}

/// One usable command file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandFile {
    /// `name`, or `dir:name` for a file in a subdirectory.
    pub name: String,
    /// The frontmatter's, else the body's first line.
    pub description: String,
    pub argument_hint: Option<String>,
    /// A model for its run (a configured provider name, `provider:model`, or a model of the
    /// default provider), as written.
    pub model: Option<String>,
    /// Only these tools are offered to its run (our names; Claude Code's are mapped, and a
    /// specifier such as `Bash(git status:*)` keeps only the tool).
    pub allowed_tools: Option<Vec<String>>,
    /// The prompt template.
    pub(crate) body: String,
    pub source: CommandFileSource,
}

impl CommandFile {
    pub fn path(&self) -> &Path {
        match &self.source {
            CommandFileSource::Project(path) | CommandFileSource::User(path) => path,
        }
    }

    /// The prompt of a run of this command with `args`.
    pub fn prompt(&self, args: &str) -> String {
        expand(&self.body, args)
    }

    /// What `allowed-tools` leaves of the tools a run is offered (None: no narrowing).
    pub fn tool_narrowing(&self) -> Option<ToolNarrowing> {
        self.allowed_tools
            .clone()
            .map(|names| ToolNarrowing { names })
    }
}

/// A command file that could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandProblem {
    pub path: PathBuf,
    pub reason: String,
}

/// The command files of a cwd, by name, and the ones not used.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandFiles {
    pub commands: Vec<CommandFile>,
    pub problems: Vec<CommandProblem>,
}

impl CommandFiles {
    pub fn get(&self, name: &str) -> Option<&CommandFile> {
        self.commands.iter().find(|command| command.name == name)
    }
}

/// Only the tools a command's `allowed-tools` names: applied to the tools of its run, after
/// every other filter, so it can take tools away and never give one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolNarrowing {
    names: Vec<String>,
}

impl ToolNarrowing {
    /// Only the tools named (our names, as [`ToolNarrowing::names`] gives them): how a run's
    /// recorded narrowing is made again when it resumes after a restart.
    pub fn new(names: Vec<String>) -> ToolNarrowing {
        ToolNarrowing { names }
    }

    /// The names of the tools it keeps, recorded in the run's `runStarted`.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The tools of `registry` it keeps.
    pub fn apply(&self, registry: &ToolRegistry) -> ToolRegistry {
        registry.filtered_tools(|tool| self.names.iter().any(|name| name == tool.name()))
    }
}

/// The command files for a session in `cwd` (`user_dir`: `$XDG_CONFIG_HOME/agentd/commands`);
/// a file named like one of `reserved` (the built-ins) is a problem. Blocking: reads files.
pub fn discover(cwd: &Path, user_dir: Option<&Path>, reserved: &[&str]) -> CommandFiles {
    discover_with(cwd, user_dir, reserved, &CommandLimits::default())
}

/// [`discover`] with explicit limits.
pub(crate) fn discover_with(
    cwd: &Path,
    user_dir: Option<&Path>,
    reserved: &[&str],
    limits: &CommandLimits,
) -> CommandFiles {
    // Each commands directory, whether it is the project's, and where its files may lead
    // through symlinks: the project's root, or the user's config dir (`user_dir`'s parent).
    let mut roots: Vec<(PathBuf, bool, PathBuf)> = Vec::new();
    let project_dirs = agentd_core::workspace::project_dirs(cwd);
    for dir in &project_dirs.dirs {
        let containment = project_dirs.containment_for(dir).to_path_buf();
        for sub in PROJECT_COMMAND_DIRS {
            roots.push((dir.join(sub), true, containment.clone()));
        }
    }
    if let Some(user_dir) = user_dir {
        let config_dir = user_dir.parent().unwrap_or(user_dir).to_path_buf();
        roots.push((user_dir.to_path_buf(), false, config_dir));
    }
    let mut found = CommandFiles::default();
    let mut files_read = 0usize;
    for (root, project, containment) in roots {
        let mut files = Vec::new();
        command_files(&root, &root, 0, limits, &mut files, &mut found.problems);
        for (name, file) in files {
            if files_read >= limits.max_files_read || found.commands.len() >= limits.max_commands {
                found.problems.push(CommandProblem {
                    path: file,
                    reason: format!(
                        "not used: at most {} commands from {} files are read; remove the ones you do not need",
                        limits.max_commands, limits.max_files_read
                    ),
                });
                continue;
            }
            files_read += 1;
            let source = if project {
                CommandFileSource::Project(file.clone())
            } else {
                CommandFileSource::User(file.clone())
            };
            let reason = if reserved.contains(&name.as_str()) {
                Some(format!(
                    "not used: /{name} is a built-in command; rename the file to use it"
                ))
            } else {
                found.get(&name).map(|nearer| {
                    format!(
                        "not used: the nearer {} has the same name `{name}`; rename one of them to use both",
                        nearer.path().display()
                    )
                })
            };
            if let Some(reason) = reason {
                found.problems.push(CommandProblem { path: file, reason });
                continue;
            }
            match read_command(&file, &containment, name, source, limits) {
                Ok(command) => found.commands.push(command),
                Err(reason) => found.problems.push(CommandProblem { path: file, reason }),
            }
        }
    }
    found.commands.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// The `*.md` files under `dir` (a commands directory `root` or one of its subdirectories, at
/// `depth`), with their names (`sub:name`), sorted by name; a missing directory gives none,
/// another user's gives a problem.
fn command_files(
    root: &Path,
    dir: &Path,
    depth: usize,
    limits: &CommandLimits,
    files: &mut Vec<(String, PathBuf)>,
    problems: &mut Vec<CommandProblem>,
) {
    if !dir.is_dir() {
        return;
    }
    if !agentd_core::regular_file::is_own_dir(dir) {
        problems.push(CommandProblem {
            path: dir.to_path_buf(),
            reason: "not used: the directory belongs to another user".to_owned(),
        });
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) => {
            problems.push(CommandProblem {
                path: dir.to_path_buf(),
                reason: format!("cannot list the directory: {err}"),
            });
            return;
        }
    };
    let mut paths = Vec::new();
    for (index, entry) in entries.enumerate() {
        if index >= limits.max_dir_entries {
            problems.push(CommandProblem {
                path: dir.to_path_buf(),
                reason: format!(
                    "more than {} entries; only the first were looked at",
                    limits.max_dir_entries
                ),
            });
            break;
        }
        let Ok(entry) = entry else { continue };
        paths.push(entry.path());
    }
    paths.sort();
    for path in paths {
        if path.is_dir() {
            if depth < limits.max_depth {
                command_files(root, &path, depth + 1, limits, files, problems);
            } else {
                problems.push(CommandProblem {
                    path,
                    reason: format!(
                        "not looked in: commands are read at most {} directories deep",
                        limits.max_depth
                    ),
                });
            }
        } else if path.extension().is_some_and(|ext| ext == "md") {
            let name = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .with_extension("")
                .components()
                .map(|part| part.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(":");
            files.push((name, path));
        }
    }
}

/// One command from its file (which must not lead out of `containment` through a symlink),
/// or the reason it cannot be used.
fn read_command(
    path: &Path,
    containment: &Path,
    name: String,
    source: CommandFileSource,
    limits: &CommandLimits,
) -> Result<CommandFile, String> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
    {
        return Err(format!(
            "`{name}` is not a usable command name; name the file with at most 64 letters, digits, `-`, `_` or `.`"
        ));
    }
    let text =
        agentd_core::regular_file::read_definition_text(path, containment, limits.max_file_bytes)?;
    let document =
        agentd_core::frontmatter::parse(&text).map_err(|err| format!("bad frontmatter: {err}"))?;
    let text_field = |key: &str| -> Result<Option<String>, String> {
        match document.fields.iter().find(|(field, _)| field == key) {
            None => Ok(None),
            Some((_, Value::Text(text))) => {
                Ok(Some(one_line(text, limits.max_description_chars)).filter(|t| !t.is_empty()))
            }
            Some((_, Value::List(_) | Value::Nested(_))) => {
                Err(format!("`{key}` must be one value, not a list"))
            }
        }
    };
    let body = document.body.trim_start_matches(['\n', '\r']).to_owned();
    if body.trim().is_empty() {
        return Err("its body is empty; write the prompt below the frontmatter".to_owned());
    }
    let description = match text_field("description")? {
        Some(description) => description,
        None => one_line(
            body.lines()
                .find(|line| !line.trim().is_empty())
                .unwrap_or_default(),
            limits.max_description_chars,
        ),
    };
    let allowed_tools = document
        .fields
        .iter()
        .find(|(key, _)| key == "allowed-tools")
        .map(|(_, value)| allowed_tools(value));
    Ok(CommandFile {
        name,
        description,
        argument_hint: text_field("argument-hint")?,
        model: text_field("model")?.filter(|model| model != "inherit"),
        allowed_tools,
        body,
        source,
    })
}

/// The longest name [`closest`] compares letter by letter (a longer one is no typo, and the
/// comparison's cost grows with the product of the lengths).
const MAX_COMPARED_CHARS: usize = 64;

/// At most `max` of `candidates` nearest `name`, nearest first: within a few edits of it, or
/// starting with it, or the part after a `dir:` of one (`commit` for `git:commit`).
pub fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    max: usize,
) -> Vec<String> {
    let name = name.to_ascii_lowercase();
    if name.is_empty() || name.chars().count() > MAX_COMPARED_CHARS {
        return Vec::new();
    }
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter_map(|candidate| {
            let lower = candidate.to_ascii_lowercase();
            let last = lower.rsplit(':').next().unwrap_or(&lower);
            let distance = edit_distance(&name, &lower).min(edit_distance(&name, last));
            let close = distance <= 2.max(name.chars().count() / 3);
            let prefix = lower.starts_with(&name) || last.starts_with(&name);
            (close || prefix).then_some((if prefix { 0 } else { distance }, candidate))
        })
        .collect();
    scored.sort();
    scored.dedup();
    scored
        .into_iter()
        .take(max)
        .map(|(_, candidate)| candidate.to_owned())
        .collect()
}

/// Levenshtein distance, in characters; a candidate longer than [`MAX_COMPARED_CHARS`] is far.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().take(MAX_COMPARED_CHARS + 1).collect();
    if b.len() > MAX_COMPARED_CHARS {
        return usize::MAX;
    }
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            let deletion = previous[j + 1] + 1;
            let insertion = current[j] + 1;
            current.push(substitution.min(deletion).min(insertion));
        }
        previous = current;
    }
    previous[b.len()]
}

/// `allowed-tools` as our tool names: a list or a comma list, each item's specifier
/// (`Bash(git status:*)`) dropped, Claude Code's names mapped to ours.
fn allowed_tools(value: &Value) -> Vec<String> {
    let items = match value {
        Value::List(items) => items.clone(),
        Value::Text(text) => text.split(',').map(str::to_owned).collect(),
        Value::Nested(value) => crate::agents::strings_of(value),
    };
    let mut names: Vec<String> = Vec::new();
    for item in items {
        let tool = item.split('(').next().unwrap_or_default().trim().to_owned();
        if tool.is_empty() {
            continue;
        }
        let tool = crate::agents::tool_name(tool);
        if !names.contains(&tool) {
            names.push(tool);
        }
    }
    names
}

/// `text` on one line (whitespace runs folded), cut to `max` characters with `…`.
fn one_line(text: &str, max: usize) -> String {
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if folded.chars().count() <= max {
        return folded;
    }
    let mut cut: String = folded.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests;
