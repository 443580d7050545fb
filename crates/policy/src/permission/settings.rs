//! Project permission settings: `.agents/settings.toml` (`[permissions] allow ask deny
//! default_mode`) and `.agents/settings.json` (Claude Code's `{"permissions": {"allow", "ask",
//! "deny", "defaultMode"}}`), found from the workspace walking up to the git root.
//!
//! Trust is asked per file ([`crate::trust::ProjectTrust::verdict`] of the text read): a file
//! whose content is not the one the user trusted keeps its deny and ask rules, and its allow
//! rules are withheld ([`ProjectSettings::withheld`]).
//!
//! Bad rules and a bad mode are collected in [`ProjectSettings::errors`] while the good rules
//! load; a file that cannot be read or parsed at all is a [`SettingsError`]. Other top-level keys
//! belong to other modules and are left alone here: `hooks` is read by `agentd_agent::hooks`
//! from the same files ([`read_project_settings`]).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{PermissionMode, RuleEntry, RuleError, RuleLayer, RuleList, RuleSet, RuleSource};
use agentd_core::text_position::line_and_column;

/// Where project settings live, relative to a project directory, in the order they are read.
/// `.claude/settings.json` is Claude Code's project file: its `permissions` keys are the same
/// (other keys, such as `hooks` or `env`, are not read).
pub(crate) const PROJECT_SETTINGS_FILES: &[&str] = &[
    ".agents/settings.toml",
    ".agents/settings.json",
    ".claude/settings.local.json",
    ".claude/settings.json",
];

/// The permission part of a project's settings.
#[derive(Clone, Debug, Default)]
pub struct ProjectSettings {
    /// The files read (none: the project has no settings).
    pub sources: Vec<PathBuf>,
    /// The rules that apply: every deny and ask rule, and the allow rules of files whose
    /// content is trusted.
    pub rules: RuleSet,
    pub default_mode: Option<PermissionMode>,
    /// The file `default_mode` comes from and its trust (an untrusted file's mode applies only
    /// when it is not looser than the user's).
    pub mode_source: Option<(PathBuf, crate::trust::FileTrust)>,
    /// Files whose content is not the one trusted, with the allow rules held back.
    pub withheld: Vec<WithheldSettings>,
    /// Bad rules, a bad mode, unknown keys: reported to the user, never silently dropped.
    pub errors: Vec<RuleError>,
    /// Settings files of another user, found and not read (each says whose and what to do):
    /// reported to the user, never applied.
    pub refused: Vec<String>,
}

/// A settings file whose content is not trusted, and what of it does not apply.
#[derive(Clone, Debug)]
pub struct WithheldSettings {
    pub path: PathBuf,
    pub verdict: crate::trust::FileTrust,
    /// The allow rules held back, as written.
    pub allow: Vec<String>,
}

/// A settings file that could not be read or parsed at all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}:{column}: {message}", path.display())]
pub struct SettingsError {
    pub path: PathBuf,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// A `[permissions]` table in TOML, with positions for messages: the one shape of both
/// config.toml's (the user layer, read by `config`) and `.agents/settings.toml`'s. Only the
/// user's may set `approval_timeout_secs`.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct TomlPermissions {
    #[serde(default)]
    allow: Vec<toml::Spanned<String>>,
    #[serde(default)]
    ask: Vec<toml::Spanned<String>>,
    #[serde(default)]
    deny: Vec<toml::Spanned<String>>,
    #[serde(default, alias = "defaultMode")]
    pub default_mode: Option<toml::Spanned<String>>,
    #[serde(default)]
    pub approval_timeout_secs: Option<toml::Spanned<u64>>,
}

impl TomlPermissions {
    /// The rules of the table (read from `text`, the file's whole text, for line numbers),
    /// attributed to `source`, and every rule that does not parse.
    pub fn rules(&self, source: &RuleSource, text: &str) -> (RuleSet, Vec<RuleError>) {
        RuleSet::parse_entries(
            source,
            toml_entries(text, &self.allow, &self.ask, &self.deny),
        )
    }
}

/// `.agents/settings.toml`: only `[permissions]` is read here.
#[derive(Deserialize)]
struct TomlSettings {
    #[serde(default)]
    permissions: TomlPermissions,
}

/// The largest project settings file read: rules are a few lines, and a repository must not
/// make the daemon read a huge file (or a FIFO) while creating a session.
const MAX_SETTINGS_BYTES: usize = 1024 * 1024;

/// Loads the project settings for `workspace`: the first directory from the workspace up to
/// the git root (the workspace alone when it is in no repository; see [`agentd_core::workspace::project_dirs`])
/// holding a settings file of our own. Both files of that directory are read and their rules
/// merged (TOML first). Another user's settings file is never read: it is listed in
/// [`ProjectSettings::refused`] and the walk goes on as if it were not there, so a file
/// planted in a subdirectory cannot hide the repository's own rules either. Each file's allow
/// rules apply only when `trust` pins its content.
pub fn load_project_settings(
    workspace: &Path,
    trust: &crate::trust::ProjectTrust,
) -> Result<ProjectSettings, SettingsError> {
    let mut settings = ProjectSettings::default();
    let texts = read_project_settings(workspace)?;
    settings.refused = texts.refused;
    for (path, text) in texts.files {
        let (mut rules, mode, errors) = parse_settings_text(&path, &text)?;
        let verdict = trust.verdict(&path, &text);
        let pinned = verdict == crate::trust::FileTrust::Pinned;
        if !pinned && !rules.allow.is_empty() {
            settings.withheld.push(WithheldSettings {
                path: path.clone(),
                verdict,
                allow: rules.allow.iter().map(|rule| rule.text.clone()).collect(),
            });
            rules.allow.clear();
        }
        settings.rules = RuleSet::merge([std::mem::take(&mut settings.rules), rules]);
        settings.errors.extend(errors);
        if let Some(mode) = mode
            && settings.default_mode.is_none()
        {
            settings.default_mode = Some(mode);
            settings.mode_source = Some((path.clone(), verdict));
        }
        settings.sources.push(path);
    }
    Ok(settings)
}

/// The project settings files [`load_project_settings`] reads, as read: the files of the
/// first directory holding one of our own, in [`PROJECT_SETTINGS_FILES`] order.
#[derive(Clone, Debug, Default)]
pub struct ProjectSettingsTexts {
    /// Each file and its whole text.
    pub files: Vec<(PathBuf, String)>,
    /// Settings files of another user, found and not read (each says whose and what to do).
    pub refused: Vec<String>,
}

/// Reads the project settings files for `workspace` (the walk of [`load_project_settings`],
/// which other readers of the same files share: hooks). Blocking: reads files.
pub fn read_project_settings(workspace: &Path) -> Result<ProjectSettingsTexts, SettingsError> {
    let mut found = ProjectSettingsTexts::default();
    for directory in agentd_core::workspace::project_dirs(workspace).settings_dirs() {
        let mut texts = Vec::new();
        for path in PROJECT_SETTINGS_FILES
            .iter()
            .map(|file| directory.join(file))
            .filter(|path| path.is_file())
        {
            match agentd_core::regular_file::read_own_text(&path, MAX_SETTINGS_BYTES) {
                Ok(read) => texts.push((path, read)),
                Err(error) => match agentd_core::regular_file::OtherUsersFile::of(&error) {
                    Some(refusal) => found.refused.push(refusal.to_string()),
                    None => {
                        return Err(SettingsError {
                            path: path.clone(),
                            line: 1,
                            column: 1,
                            message: format!("cannot read: {error}"),
                        });
                    }
                },
            }
        }
        if texts.is_empty() {
            continue;
        }
        for (path, read) in texts {
            if read.truncated {
                return Err(SettingsError {
                    path: path.clone(),
                    line: 1,
                    column: 1,
                    message: format!(
                        "the file is larger than {MAX_SETTINGS_BYTES} bytes; settings files are small"
                    ),
                });
            }
            found.files.push((path, read.text));
        }
        break;
    }
    Ok(found)
}

/// Rule entries of TOML `allow`, `ask` and `deny` lists, with 1-based line and column of each
/// rule in `text`.
fn toml_entries(
    text: &str,
    allow: &[toml::Spanned<String>],
    ask: &[toml::Spanned<String>],
    deny: &[toml::Spanned<String>],
) -> Vec<RuleEntry> {
    [
        (RuleList::Allow, allow),
        (RuleList::Ask, ask),
        (RuleList::Deny, deny),
    ]
    .into_iter()
    .flat_map(|(list, rules)| {
        rules
            .iter()
            .enumerate()
            .map(move |(index, rule)| RuleEntry {
                list,
                index,
                text: rule.get_ref().clone(),
                line_col: Some(line_and_column(text, rule.span().start)),
            })
    })
    .collect()
}

/// Parses a mode setting; project files may not choose `bypass` (a repository must not switch
/// off asking for whoever opens it).
fn project_mode(
    source: &RuleSource,
    text: &str,
    line_col: Option<(usize, usize)>,
    location: &str,
    errors: &mut Vec<RuleError>,
) -> Option<PermissionMode> {
    let message = match text.parse::<PermissionMode>() {
        Ok(PermissionMode::Bypass) => {
            "bypass can only be chosen in the user config or for a session".to_owned()
        }
        Ok(mode) => return Some(mode),
        Err(message) => message,
    };
    errors.push(RuleError {
        source: source.clone(),
        location: location.to_owned(),
        line_col,
        rule: text.to_owned(),
        message,
    });
    None
}

type Parsed = (RuleSet, Option<PermissionMode>, Vec<RuleError>);

/// The rules, mode and rule problems of the settings file `path` holding `text` (TOML or, by
/// its extension, JSON).
pub fn parse_settings_text(path: &Path, text: &str) -> Result<Parsed, SettingsError> {
    let is_json = path
        .extension()
        .is_some_and(|extension| extension == "json");
    if is_json {
        parse_json_settings(path, text)
    } else {
        parse_toml_settings(path, text)
    }
}

fn parse_toml_settings(path: &Path, text: &str) -> Result<Parsed, SettingsError> {
    let file: TomlSettings = toml::from_str(text).map_err(|error| {
        let (line, column) = error
            .span()
            .map(|span| line_and_column(text, span.start))
            .unwrap_or((1, 1));
        SettingsError {
            path: path.to_path_buf(),
            line,
            column,
            message: error.message().trim().to_owned(),
        }
    })?;
    let source = RuleSource::file(RuleLayer::Project, path);
    if let Some(timeout) = &file.permissions.approval_timeout_secs {
        let (line, column) = line_and_column(text, timeout.span().start);
        return Err(SettingsError {
            path: path.to_path_buf(),
            line,
            column,
            message: "permissions.approval_timeout_secs is a user setting: a project cannot set \
                      how long approvals wait (set it in config.toml)"
                .to_owned(),
        });
    }
    let (rules, mut errors) = file.permissions.rules(&source, text);
    let mut mode = None;
    if let Some(spanned) = &file.permissions.default_mode {
        let line_col = Some(line_and_column(text, spanned.span().start));
        mode = project_mode(
            &source,
            spanned.get_ref(),
            line_col,
            "permissions.default_mode",
            &mut errors,
        );
    }
    Ok((rules, mode, errors))
}

fn parse_json_settings(path: &Path, text: &str) -> Result<Parsed, SettingsError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|error| SettingsError {
        path: path.to_path_buf(),
        line: error.line(),
        column: error.column(),
        message: error.to_string(),
    })?;
    let source = RuleSource::file(RuleLayer::Project, path);
    let mut errors = Vec::new();
    let mut entries = Vec::new();
    let mut mode = None;
    let error = |location: String, rule: String, message: String| RuleError {
        source: source.clone(),
        location,
        line_col: None,
        rule,
        message,
    };
    let Some(permissions) = value.get("permissions") else {
        return Ok((RuleSet::default(), None, errors));
    };
    let Some(permissions) = permissions.as_object() else {
        errors.push(error(
            "permissions".to_owned(),
            permissions.to_string(),
            "must be an object".to_owned(),
        ));
        return Ok((RuleSet::default(), None, errors));
    };
    for (key, value) in permissions {
        let list = match key.as_str() {
            "allow" => RuleList::Allow,
            "ask" => RuleList::Ask,
            "deny" => RuleList::Deny,
            "defaultMode" | "default_mode" => {
                match value.as_str() {
                    Some(text) => {
                        let location = format!("permissions.{key}");
                        mode = project_mode(&source, text, None, &location, &mut errors);
                    }
                    None => errors.push(error(
                        format!("permissions.{key}"),
                        value.to_string(),
                        "must be a string".to_owned(),
                    )),
                }
                continue;
            }
            _ => {
                errors.push(error(
                    format!("permissions.{key}"),
                    value.to_string(),
                    "unknown setting (expected allow, ask, deny or defaultMode); ignored"
                        .to_owned(),
                ));
                continue;
            }
        };
        let Some(rules) = value.as_array() else {
            errors.push(error(
                format!("permissions.{key}"),
                value.to_string(),
                "must be a list of rule strings".to_owned(),
            ));
            continue;
        };
        for (index, rule) in rules.iter().enumerate() {
            match rule.as_str() {
                Some(text) => entries.push(RuleEntry {
                    list,
                    index,
                    text: text.to_owned(),
                    line_col: None,
                }),
                None => errors.push(error(
                    format!("permissions.{key}[{index}]"),
                    rule.to_string(),
                    "must be a string".to_owned(),
                )),
            }
        }
    }
    let (rules, rule_errors) = RuleSet::parse_entries(&source, entries);
    errors.extend(rule_errors);
    Ok((rules, mode, errors))
}
