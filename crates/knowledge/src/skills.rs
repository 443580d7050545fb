//! Skills: `SKILL.md` files with a `name` and a `description` in their frontmatter and
//! instructions in their body (DESIGN §7). Discovery for a session's workspace, the catalogue
//! the system prompt lists, and loading one skill's body and files for `load_skill`.
//!
//! Where skills come from, nearer first: `skills/*/SKILL.md`, `.agents/skills/*/SKILL.md` and
//! `.claude/skills/*/SKILL.md` in the workspace and each parent up to the git root (the walk of
//! `workspace::project_dirs`, which stops at another user's directory), then the user's
//! `$XDG_CONFIG_HOME/agentd/skills/*/SKILL.md`. A name found twice: the nearer one wins, with a
//! warning. Everything here blocks (file I/O): call it on the blocking pool.

use std::path::{Path, PathBuf};

/// The skill directories looked for in each project directory, in this order.
pub(crate) const PROJECT_SKILL_DIRS: &[&str] = &["skills", ".agents/skills", ".claude/skills"];
/// The file that makes a directory a skill.
pub(crate) const SKILL_FILE: &str = "SKILL.md";
/// The prefix of every successful `load_skill` result: such results are never truncated by the
/// output cap nor cleared from old context (`is_skill_result`).
pub(crate) const SKILL_RESULT_PREFIX: &str = "[skill] ";
/// The tool that loads a skill.
pub const LOAD_SKILL_TOOL: &str = "load_skill";

/// Caps on discovery and loading. Limits are data: each says why it exists.
#[derive(Clone, Debug)]
pub struct SkillLimits {
    /// Bytes of one `SKILL.md` read at most; a bigger file is skipped with a warning (its body
    /// goes into the context whole, never cut, so it must stay small).
    pub(crate) max_file_bytes: usize,
    /// Skills in one catalogue; more are skipped with a warning, so a repository with
    /// thousands of directories cannot fill the system prompt.
    pub(crate) max_skills: usize,
    /// `SKILL.md` files read by one discovery (usable or not), so a repository full of broken
    /// skills cannot make every session start read hundreds of megabytes.
    pub(crate) max_files_read: usize,
    /// Entries of one skills directory looked at, so a huge directory cannot stall discovery.
    pub(crate) max_dir_entries: usize,
    /// Characters of a description in the catalogue; longer ones are cut.
    pub(crate) max_description_chars: usize,
    /// Files of a skill's directory listed by `load_skill`, and how deep it looks.
    pub(crate) max_listed_files: usize,
    pub(crate) max_listed_depth: usize,
}

impl Default for SkillLimits {
    fn default() -> Self {
        Self {
            max_file_bytes: 256 * 1024,
            max_skills: 100,
            max_files_read: 300,
            max_dir_entries: 1000,
            max_description_chars: 1024,
            max_listed_files: 100,
            max_listed_depth: 4,
        }
    }
}

/// Where a skill was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkillSource {
    /// The workspace or one of its parents up to the git root.
    Project,
    /// The user's config directory.
    User,
}

/// One usable skill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The `SKILL.md` file.
    pub path: PathBuf,
    pub source: SkillSource,
    /// What the skill's files may lead to through symlinks: the project's root (the git root,
    /// or the directory it was found in outside a repository) or the user's config dir. A
    /// `SKILL.md`, skill directory or listed file leading out of it is not read nor listed.
    pub root: PathBuf,
}

impl Skill {
    /// The skill's directory.
    pub(crate) fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(&self.path)
    }
}

/// The skills of a workspace, sorted by name, and what discovery skipped and why.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Catalogue {
    pub skills: Vec<Skill>,
    pub warnings: Vec<String>,
}

impl Catalogue {
    pub(crate) fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|skill| skill.name == name)
    }

    /// The names, for messages ("available skills: …").
    pub(crate) fn names(&self) -> String {
        if self.skills.is_empty() {
            return "none".to_owned();
        }
        self.skills
            .iter()
            .map(|skill| skill.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What `load_skill` returns: the body and the skill directory's other files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedSkill {
    pub skill: Skill,
    pub(crate) body: String,
    /// Other files of the skill's directory, sorted (at most `max_listed_files`).
    pub files: Vec<PathBuf>,
    /// More files were there than listed.
    pub(crate) more_files: bool,
    /// Files left out because the run's Read deny rules cover them (counted, never named).
    pub withheld: usize,
}

/// Whether a tool result (of tool `tool_name`) is a loaded skill: `load_skill`'s text starting
/// with `[skill] `. Such a result is never truncated nor cleared from old context; another
/// tool's output that happens to start the same way is not protected.
pub(crate) fn is_skill_result(tool_name: &str, text: &str) -> bool {
    tool_name == LOAD_SKILL_TOOL && text.starts_with(SKILL_RESULT_PREFIX)
}

/// The skills of the workspace `cwd` and of the user's `user_dir`. Blocking.
pub fn discover(cwd: &Path, user_dir: Option<&Path>, limits: &SkillLimits) -> Catalogue {
    // Each skills directory with the directory its skills must stay in (`Skill::root`).
    let mut roots: Vec<(PathBuf, SkillSource, PathBuf)> = Vec::new();
    let project = agentd_core::workspace::project_dirs(cwd);
    for dir in &project.dirs {
        let containment = project.containment_for(dir);
        for sub in PROJECT_SKILL_DIRS {
            roots.push((
                dir.join(sub),
                SkillSource::Project,
                containment.to_path_buf(),
            ));
        }
    }
    if let Some(user_dir) = user_dir {
        // `$XDG_CONFIG_HOME/agentd/skills`: its skills stay in `$XDG_CONFIG_HOME/agentd`.
        let config_dir = user_dir.parent().unwrap_or(user_dir);
        roots.push((
            user_dir.to_path_buf(),
            SkillSource::User,
            config_dir.to_path_buf(),
        ));
    }
    let mut catalogue = Catalogue::default();
    let mut skipped_for_count = 0usize;
    let mut files_read = 0usize;
    for (root, source, containment) in roots {
        for skill_file in skill_files(&root, &containment, limits, &mut catalogue.warnings) {
            if files_read >= limits.max_files_read {
                skipped_for_count += 1;
                continue;
            }
            files_read += 1;
            let skill = match read_skill(&skill_file, source, &containment, limits) {
                Ok(skill) => skill,
                Err(warning) => {
                    catalogue.warnings.push(warning);
                    continue;
                }
            };
            if let Some(nearer) = catalogue.get(&skill.name) {
                catalogue.warnings.push(format!(
                    "skill `{}` at {} is not used: the nearer {} has the same name; rename one of them to use both",
                    skill.name,
                    skill.path.display(),
                    nearer.path.display()
                ));
                continue;
            }
            if catalogue.skills.len() >= limits.max_skills {
                skipped_for_count += 1;
                continue;
            }
            catalogue.skills.push(skill);
        }
    }
    if skipped_for_count > 0 {
        catalogue.warnings.push(format!(
            "{skipped_for_count} more skills were not used: at most {} are offered; remove the ones you do not need",
            limits.max_skills
        ));
    }
    catalogue.skills.sort_by(|a, b| a.name.cmp(&b.name));
    catalogue
}

/// The body of skill `name` and its directory's other files; the error is for the model and
/// lists the available skills. Blocking.
pub fn load(
    catalogue: &Catalogue,
    name: &str,
    limits: &SkillLimits,
) -> Result<LoadedSkill, String> {
    let Some(skill) = catalogue.get(name) else {
        return Err(format!(
            "no skill named `{name}`; available skills: {}",
            catalogue.names()
        ));
    };
    if !agentd_core::regular_file::resolves_within(skill.dir(), &skill.root) {
        return Err(format!(
            "skill `{name}` cannot be loaded: its directory {} leads out of {} through a \
             symbolic link",
            skill.dir().display(),
            skill.root.display()
        ));
    }
    let text = read_skill_text(&skill.path, &skill.root, limits)?;
    let document = agentd_core::frontmatter::parse(&text)
        .map_err(|err| format!("cannot read {}: {err}", skill.path.display()))?;
    let mut files = Vec::new();
    let mut more_files = false;
    list_files(
        skill.dir(),
        skill.dir(),
        &skill.root,
        0,
        limits,
        &mut files,
        &mut more_files,
    );
    files.sort();
    Ok(LoadedSkill {
        skill: skill.clone(),
        body: document.body.trim_start_matches(['\n', '\r']).to_owned(),
        files,
        more_files,
        withheld: 0,
    })
}

/// The text of a `load_skill` result: `[skill] <name>`, the body, then the skill directory's
/// other files, relative to the workspace when inside it (absolute otherwise).
pub fn render(loaded: &LoadedSkill, workspace: &Path) -> String {
    let mut text = format!(
        "{SKILL_RESULT_PREFIX}{}\n\n{}",
        loaded.skill.name,
        loaded.body.trim_end()
    );
    if !loaded.files.is_empty() {
        let shown = |path: &Path| match path.strip_prefix(workspace) {
            Ok(relative) => relative.display().to_string(),
            Err(_) => path.display().to_string(),
        };
        let how = if loaded.skill.dir().starts_with(workspace) {
            "read them when the instructions need them"
        } else {
            "they are outside the workspace: read them with run_shell (e.g. `cat`) when the instructions need them"
        };
        text.push_str(&format!(
            "\n\nOther files of this skill (in {}); {how}:",
            shown(loaded.skill.dir())
        ));
        for file in &loaded.files {
            text.push_str(&format!("\n- {}", shown(file)));
        }
        if loaded.more_files {
            text.push_str("\n- … (more files not listed)");
        }
    }
    if loaded.withheld > 0 {
        text.push_str(&format!(
            "\n[{} entries withheld by deny rules]",
            loaded.withheld
        ));
    }
    text.push('\n');
    text
}

/// `root/*/SKILL.md` in name order; missing or foreign roots give none, and so do a root and
/// skill directories that lead out of `containment` through a symlink (with a warning).
fn skill_files(
    root: &Path,
    containment: &Path,
    limits: &SkillLimits,
    warnings: &mut Vec<String>,
) -> Vec<PathBuf> {
    if !root.is_dir() {
        return Vec::new();
    }
    if !agentd_core::regular_file::is_own_dir(root) {
        warnings.push(format!(
            "skills in {} are not used: the directory belongs to another user",
            root.display()
        ));
        return Vec::new();
    }
    if !agentd_core::regular_file::resolves_within(root, containment) {
        warnings.push(outside_warning("the skills in it are", root, containment));
        return Vec::new();
    }
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(err) => {
            warnings.push(format!("cannot list {}: {err}", root.display()));
            return Vec::new();
        }
    };
    let mut dirs: Vec<PathBuf> = Vec::new();
    for (index, entry) in entries.enumerate() {
        if index >= limits.max_dir_entries {
            warnings.push(format!(
                "{} has more than {} entries; only the first were looked at",
                root.display(),
                limits.max_dir_entries
            ));
            break;
        }
        let Ok(entry) = entry else { continue };
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        if !agentd_core::regular_file::resolves_within(&path, containment) {
            warnings.push(outside_warning("it is", &path, containment));
            continue;
        }
        if path.join(SKILL_FILE).exists() {
            dirs.push(path.join(SKILL_FILE));
        }
    }
    dirs.sort();
    dirs
}

/// Why a skills directory or a skill's directory that leads out of `containment` is not used
/// (`what`: "it is", "the skills in it are").
fn outside_warning(what: &str, dir: &Path, containment: &Path) -> String {
    let real = dir
        .canonicalize()
        .map(|real| real.display().to_string())
        .unwrap_or_else(|_| "somewhere unknown".to_owned());
    format!(
        "{} leads to {real} through a symbolic link, outside {}, so {what} not used; put the \
         skill itself there instead of the link",
        dir.display(),
        containment.display()
    )
}

/// One skill from its file, or the warning that says why it is skipped.
fn read_skill(
    path: &Path,
    source: SkillSource,
    root: &Path,
    limits: &SkillLimits,
) -> Result<Skill, String> {
    let text = read_skill_text(path, root, limits)?;
    let document = agentd_core::frontmatter::parse(&text)
        .map_err(|err| format!("skill {} is skipped: {err}", path.display()))?;
    let dir_name = path
        .parent()
        .and_then(Path::file_name)
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = document
        .text("name")
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or(dir_name);
    if name.chars().any(|c| c.is_control()) || name.len() > 128 {
        return Err(format!(
            "skill {} is skipped: its name must be one line of at most 128 bytes",
            path.display()
        ));
    }
    let description = document
        .text("description")
        .map(|text| text.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    if description.is_empty() {
        return Err(format!(
            "skill {} is skipped: it has no description; add `description: <when to use it>` to its frontmatter",
            path.display()
        ));
    }
    let description = if description.chars().count() > limits.max_description_chars {
        let mut cut: String = description
            .chars()
            .take(limits.max_description_chars.saturating_sub(1))
            .collect();
        cut.push('…');
        cut
    } else {
        description
    };
    Ok(Skill {
        name,
        description,
        path: path.to_path_buf(),
        source,
        root: root.to_path_buf(),
    })
}

/// The whole text of a `SKILL.md` (ours, regular, under `root`, under the size cap), or why
/// not.
fn read_skill_text(path: &Path, root: &Path, limits: &SkillLimits) -> Result<String, String> {
    match agentd_core::regular_file::read_own_text_within(path, root, limits.max_file_bytes) {
        Ok(read) if read.truncated => Err(format!(
            "skill {} is skipped: it is larger than {} KiB; move details into other files of its directory",
            path.display(),
            limits.max_file_bytes / 1024
        )),
        Ok(read) => Ok(read.text),
        Err(err) => {
            if let Some(refusal) = agentd_core::regular_file::OtherUsersFile::of(&err) {
                return Err(format!("skill {} is skipped: {refusal}", path.display()));
            }
            if let Some(refusal) = agentd_core::regular_file::OutsideRoot::of(&err) {
                return Err(format!("skill {} is skipped: {refusal}", path.display()));
            }
            Err(format!("skill {} is skipped: {err}", path.display()))
        }
    }
}

/// Files under `dir` (not `SKILL.md` of the skill itself, not hidden entries, no symlinked
/// directories, no link leading out of `containment`), relative paths kept absolute, at most
/// `max_listed_files`.
fn list_files(
    root: &Path,
    dir: &Path,
    containment: &Path,
    depth: usize,
    limits: &SkillLimits,
    files: &mut Vec<PathBuf>,
    more: &mut bool,
) {
    if depth > limits.max_listed_depth {
        *more = true;
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().take(limits.max_dir_entries).collect();
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        if file_type.is_dir() {
            list_files(root, &path, containment, depth + 1, limits, files, more);
        } else if (dir == root && entry.file_name() == SKILL_FILE)
            || (file_type.is_symlink()
                && !agentd_core::regular_file::resolves_within(&path, containment))
        {
            continue;
        } else if files.len() >= limits.max_listed_files {
            *more = true;
            return;
        } else {
            files.push(path);
        }
    }
}

/// The skills catalogue: name and description of each skill (sorted by name), with the
/// instruction to load one with `load_skill` when a task matches; empty without skills. Part of
/// the frozen prompt: skills added later show in the next session (`load_skill` finds them
/// already).
pub fn skills_section(skills: &[Skill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut section = String::from(
        "\n\n<available_skills>\nSkills are instructions for specific tasks. When a task matches a \
skill's description, call load_skill with its name before starting, then follow what it says.\n",
    );
    for skill in skills {
        section.push_str(&format!("- {}: {}\n", skill.name, skill.description));
    }
    section.push_str("</available_skills>");
    section
}

#[cfg(test)]
#[path = "skills_tests.rs"]
mod tests;
