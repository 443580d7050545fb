//! Which MCP servers a session gets: `[mcp_servers.<name>]` of the user's config.toml, the
//! project's `.mcp.json` (from the cwd up to the git root; each file used only while its content
//! is the one the user trusted) and the servers a client hands to `session/create
//! {mcpServers}`, in the Claude Code / Cursor shape (or ACP's array), with `${VAR}` and
//! `${VAR:-default}` expanded: everywhere in the user's own entries; in a project's only in `env`
//! and `headers` values, and only the variables `[mcp] expand_env` lists.
//!
//! Nothing here is fatal: an entry or a file that cannot be used becomes an
//! [`McpConfigProblem`] (file, server, reason) that the session reports.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{McpConfigProblem, McpServerConfig, McpServerSet, McpSource};

mod entry;

use entry::RelativeTo;
pub(crate) use entry::{Expansion, McpServerEntry, check_name};
pub use entry::{Kind as TransportKind, transport_kind};

/// The project file of MCP servers, looked for in each directory from the cwd up to the git
/// root.
pub const MCP_JSON: &str = ".mcp.json";
/// The largest `.mcp.json` read: a few kilobytes is usual; a bigger file is reported, not read.
pub(crate) const MAX_MCP_JSON_BYTES: usize = 1024 * 1024;
/// The most servers one source (a file, config.toml, `session/create`) may configure: the
/// rest are reported. Each one is a process or a connection, and its tools fill the context.
pub(crate) const MAX_SERVERS_PER_SOURCE: usize = 100;
/// The longest `[mcp] idle_stop_secs`: 30 days, far above any useful setting.
pub const MAX_IDLE_STOP_SECS: u64 = 30 * 24 * 60 * 60;
/// The longest `[mcp] startup_grace_secs`: a run waits at most five minutes for a server before
/// its first model call.
pub const MAX_STARTUP_GRACE_SECS: u64 = 5 * 60;
/// The most server names the untrusted warning lists (the rest are counted).
const MAX_NAMES_IN_WARNING: usize = 10;

/// `[mcp]` and `[mcp_servers.*]` of config.toml.
#[derive(Clone, Debug, PartialEq)]
pub struct McpSettings {
    /// A server no session uses is stopped after this long (`idle_stop_secs`).
    pub idle_stop: Duration,
    /// How long a run waits for starting servers before its first model call
    /// (`startup_grace_secs`); a server ready later joins at the next model call.
    pub startup_grace: Duration,
    /// The user's servers (`[mcp_servers.<name>]`), with the entries that could not be parsed.
    pub servers: McpEntries,
    /// The environment variables a project's `.mcp.json` may expand in `env` and `headers`
    /// (`expand_env`; none by default, so a repository cannot send the daemon's keys anywhere).
    pub expand_env: Vec<String>,
    /// `unconfined`: project servers (by name) that run outside the shell's sandbox.
    pub unconfined: Vec<String>,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            idle_stop: super::DEFAULT_IDLE_STOP,
            startup_grace: super::DEFAULT_STARTUP_GRACE,
            servers: McpEntries::default(),
            expand_env: Vec::new(),
            unconfined: Vec::new(),
        }
    }
}

/// `[mcp]` as written.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSection {
    pub idle_stop_secs: Option<u64>,
    pub startup_grace_secs: Option<u64>,
    #[serde(default)]
    pub expand_env: Vec<String>,
    #[serde(default)]
    pub unconfined: Vec<String>,
}

/// The entries of one source, parsed but not yet resolved (expansion happens per session).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpEntries {
    /// The file they were written in (None: `session/create` params).
    pub file: Option<PathBuf>,
    pub entries: BTreeMap<String, McpServerEntry>,
    /// Entries that could not be parsed (bad name, wrong types, unknown keys, over the limit).
    pub problems: Vec<McpConfigProblem>,
}

impl McpEntries {
    /// `[mcp_servers.<name>]` tables of config.toml `file`; keys are snake_case, unknown keys
    /// are problems.
    pub fn from_toml(file: &Path, tables: BTreeMap<String, toml::Value>) -> McpEntries {
        let mut entries = McpEntries {
            file: Some(file.to_path_buf()),
            ..McpEntries::default()
        };
        for (name, value) in tables {
            let parsed = match &value {
                toml::Value::Table(table) => match table
                    .keys()
                    .find(|key| !entry::TOML_KEYS.contains(&key.as_str()))
                {
                    Some(unknown) => Err(format!(
                        "unknown key {unknown:?}; known keys: {}",
                        entry::TOML_KEYS.join(", ")
                    )),
                    None => value
                        .try_into::<McpServerEntry>()
                        .map_err(|why| format!("[mcp_servers.{name}]: {}", why.message().trim())),
                },
                _ => Err(format!("mcp_servers.{name} must be a table")),
            };
            entries.add(name, parsed);
        }
        entries
    }

    /// `mcpServers` of `session/create`: an object of entries (the `.mcp.json` shape) or ACP's
    /// array (`[{name, command, args, env: [{name, value}], headers: [{name, value}], type?,
    /// url?}]`); Null: none.
    pub fn from_session(value: &serde_json::Value) -> McpEntries {
        let mut entries = McpEntries::default();
        match value {
            serde_json::Value::Null => {}
            serde_json::Value::Object(servers) => {
                for (name, value) in servers {
                    entries.add(name.clone(), json_entry(value));
                }
            }
            serde_json::Value::Array(servers) => {
                for (index, server) in servers.iter().enumerate() {
                    match acp_entry(server) {
                        Ok((name, entry)) => entries.add(name, entry),
                        Err(reason) => entries.problems.push(McpConfigProblem {
                            file: None,
                            server: None,
                            reason: format!("mcpServers[{index}]: {reason}"),
                        }),
                    }
                }
            }
            _ => entries.problems.push(McpConfigProblem {
                file: None,
                server: None,
                reason: "mcpServers must be an object or an array".to_owned(),
            }),
        }
        entries
    }

    /// The text of a `.mcp.json` at `file`: `{"mcpServers": {NAME: ENTRY, …}}`.
    pub fn from_mcp_json(file: &Path, text: &str) -> McpEntries {
        let mut entries = McpEntries {
            file: Some(file.to_path_buf()),
            ..McpEntries::default()
        };
        let servers = match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(mut top)) => top.remove("mcpServers"),
            Ok(_) => {
                entries.file_problem("the file must hold a JSON object with mcpServers");
                return entries;
            }
            Err(why) => {
                entries.file_problem(&format!("not valid JSON: {why}"));
                return entries;
            }
        };
        match servers {
            None => {}
            Some(serde_json::Value::Object(servers)) => {
                for (name, value) in servers {
                    entries.add(name, json_entry(&value));
                }
            }
            Some(_) => entries.file_problem("mcpServers must be an object of servers by name"),
        }
        entries
    }

    /// Adds `name`'s entry, or the reason it cannot be used.
    fn add(&mut self, name: String, parsed: Result<McpServerEntry, String>) {
        let parsed = check_name(&name).and(parsed).and_then(|entry| {
            if self.entries.contains_key(&name) {
                return Err("the name is listed twice; the first entry is used".to_owned());
            }
            if self.entries.len() >= MAX_SERVERS_PER_SOURCE {
                return Err(format!(
                    "more than {MAX_SERVERS_PER_SOURCE} servers in one place; this one is not used"
                ));
            }
            Ok(entry)
        });
        match parsed {
            Ok(entry) => {
                self.entries.insert(name, entry);
            }
            Err(reason) => self.problems.push(McpConfigProblem {
                file: self.file.clone(),
                server: Some(name),
                reason,
            }),
        }
    }

    fn file_problem(&mut self, reason: &str) {
        self.problems.push(McpConfigProblem {
            file: self.file.clone(),
            server: None,
            reason: reason.to_owned(),
        });
    }
}

/// Whether `mcpServers` of `session/create` has a shape the daemon stores: null, an object or
/// an array of at most [`MAX_SERVERS_PER_SOURCE`]. What is wrong inside an entry is reported
/// later, as a problem of the session.
pub fn check_session_param(value: &serde_json::Value) -> Result<(), String> {
    let count = match value {
        serde_json::Value::Null => 0,
        serde_json::Value::Object(servers) => servers.len(),
        serde_json::Value::Array(servers) => servers.len(),
        _ => {
            return Err(
                "mcpServers must be an object of servers by name (the .mcp.json shape) or an \
                 array of servers with a name each"
                    .to_owned(),
            );
        }
    };
    if count > MAX_SERVERS_PER_SOURCE {
        return Err(format!(
            "mcpServers lists {count} servers; at most {MAX_SERVERS_PER_SOURCE} are accepted"
        ));
    }
    Ok(())
}

/// The servers for a session in `cwd` (canonical): the user's entries (`user`, from
/// config.toml), the project's `.mcp.json` files (nearer wins a name clash; a file's servers
/// start only while `project` pins its content, else they are listed as untrusted and the file
/// is in [`McpServerSet::withheld`]; they expand only `expand_env`), and `session` (from
/// `session/create`). On a name clash the session wins over the project, the project over the
/// user; an entry that cannot be used shadows nothing. Blocking: reads files.
pub(crate) fn servers_for(
    cwd: &Path,
    user: &McpEntries,
    session: &McpEntries,
    project: &agentd_policy::trust::ProjectTrust,
    expand_env: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> McpServerSet {
    let mut set = McpServerSet::default();
    let mut chosen: BTreeMap<String, McpServerConfig> = BTreeMap::new();
    set.problems.extend(user.problems.iter().cloned());
    let user_file = user
        .file
        .clone()
        .unwrap_or_else(|| PathBuf::from("config.toml"));
    let user_source = McpSource::User { file: user_file };
    for config in resolve_all(
        user,
        &user_source,
        RelativeTo::AbsoluteOnly,
        (Expansion::Full, env),
        &mut set.problems,
    ) {
        chosen.insert(config.name.clone(), config);
    }
    let project_expansion = Expansion::Project {
        allowed: expand_env,
    };
    // Each server with whether its file's content is trusted.
    let mut from_project: BTreeMap<String, (McpServerConfig, bool)> = BTreeMap::new();
    for (entries, verdict) in project_files(cwd, project) {
        set.problems.extend(entries.problems.iter().cloned());
        let file = entries.file.clone().unwrap_or_default();
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let source = McpSource::Project { file: file.clone() };
        let pinned = verdict == agentd_policy::trust::FileTrust::Pinned;
        for config in resolve_all(
            &entries,
            &source,
            RelativeTo::Dir(&dir),
            (project_expansion, env),
            &mut set.problems,
        ) {
            // Files come nearest first: a name already taken is a farther file's.
            from_project
                .entry(config.name.clone())
                .or_insert((config, pinned));
        }
        if !pinned && !entries.entries.is_empty() {
            set.withheld.push(super::WithheldMcpFile {
                file,
                verdict,
                servers: entries.entries.keys().cloned().collect(),
            });
        }
    }
    set.problems.extend(session.problems.iter().cloned());
    let sessions = resolve_all(
        session,
        &McpSource::Session,
        RelativeTo::Dir(cwd),
        (Expansion::Full, env),
        &mut set.problems,
    );
    let session_names: Vec<String> = sessions.iter().map(|c| c.name.clone()).collect();
    for (name, (config, pinned)) in from_project {
        if pinned {
            chosen.insert(name, config);
        } else if !session_names.contains(&name) {
            set.untrusted.push(config);
        }
    }
    for config in sessions {
        chosen.insert(config.name.clone(), config);
    }
    for (_, config) in chosen {
        if config.enabled {
            set.servers.push(config);
        } else {
            set.disabled.push(config);
        }
    }
    set
}

/// What a session in a directory gets: its servers, its project's trust, and what to warn about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpResolution {
    pub set: McpServerSet,
    pub project: agentd_policy::trust::ProjectTrust,
}

impl McpResolution {
    /// The `warning` texts of a session: each `.mcp.json` whose servers wait for trust (which
    /// file, why, how to review and trust it), then each problem (file, server, reason).
    pub fn warnings(&self) -> Vec<String> {
        self.set
            .withheld
            .iter()
            .map(|withheld| withheld_warning(&self.project, withheld))
            .chain(self.set.problems.iter().map(|problem| problem.to_string()))
            .collect()
    }
}

/// [`servers_for`] a session in `cwd` (canonical) with the user's `user` entries, the
/// session's `session` entries, the project's trust from `trust` and the variables a project
/// may expand. Blocking: reads files.
pub fn resolve_for(
    cwd: &Path,
    user: &McpEntries,
    session: &McpEntries,
    trust: &agentd_policy::trust::TrustStore,
    expand_env: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> McpResolution {
    let project = trust.project(&agentd_policy::trust::project_root(cwd));
    let set = servers_for(cwd, user, session, &project, expand_env, env);
    McpResolution { set, project }
}

/// The user's servers of `user` (config.toml's `[mcp_servers.*]`) resolved as every session
/// resolves them (absolute paths, `${VAR}` expanded from `env`), disabled ones included; what
/// does not resolve is left out. `McpManager::apply_user_servers` compares them with what runs.
pub fn resolve_user(
    user: &McpEntries,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<McpServerConfig> {
    let source = McpSource::User {
        file: user
            .file
            .clone()
            .unwrap_or_else(|| PathBuf::from("config.toml")),
    };
    let mut problems = Vec::new();
    resolve_all(
        user,
        &source,
        RelativeTo::AbsoluteOnly,
        (Expansion::Full, env),
        &mut problems,
    )
}

/// The warning of a session whose project has a `.mcp.json` not trusted in this content: which
/// servers wait, why, and how to review and trust the file.
pub(crate) fn withheld_warning(
    project: &agentd_policy::trust::ProjectTrust,
    withheld: &super::WithheldMcpFile,
) -> String {
    let mut names: Vec<String> = withheld
        .servers
        .iter()
        .take(MAX_NAMES_IN_WARNING)
        .cloned()
        .collect();
    let more = withheld.servers.len().saturating_sub(MAX_NAMES_IN_WARNING);
    if more > 0 {
        names.push(format!("{more} more"));
    }
    format!(
        "{}, so the MCP servers of {} do not start ({}). To start them, {}",
        project.why_withheld(&withheld.file, withheld.verdict),
        withheld.file.display(),
        names.join(", "),
        project.how_to_trust()
    )
}

impl std::fmt::Display for McpConfigProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{}: ", file.display())?,
            None => write!(f, "session/create mcpServers: ")?,
        }
        if let Some(server) = &self.server {
            write!(f, "server {server}: ")?;
        }
        write!(f, "{}", self.reason)
    }
}

/// The environment an entry's `${VAR}` reads.
type Env<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// The entries of `entries` that resolve with `expansion` of `env`; the others become problems.
fn resolve_all(
    entries: &McpEntries,
    source: &McpSource,
    relative_to: RelativeTo<'_>,
    (expansion, env): (Expansion<'_>, &Env<'_>),
    problems: &mut Vec<McpConfigProblem>,
) -> Vec<McpServerConfig> {
    let mut resolved = Vec::new();
    for (name, entry) in &entries.entries {
        match entry::resolve(name, entry, source.clone(), relative_to, expansion, env) {
            Ok(config) => resolved.push(config),
            Err(reason) => problems.push(McpConfigProblem {
                file: entries.file.clone(),
                server: Some(name.clone()),
                reason,
            }),
        }
    }
    resolved
}

/// The `.mcp.json` files from `cwd` up to the git root (the workspace alone outside a
/// repository), nearest first, each parsed, with the trust of the content read; a file that
/// cannot be read (another user's, too big, not a regular file) is a problem.
fn project_files(
    cwd: &Path,
    project: &agentd_policy::trust::ProjectTrust,
) -> Vec<(McpEntries, agentd_policy::trust::FileTrust)> {
    use agentd_policy::trust::FileTrust;
    let dirs = agentd_core::workspace::project_dirs(cwd);
    let mut files = Vec::new();
    for dir in dirs.settings_dirs() {
        let path = dir.join(MCP_JSON);
        // A file that cannot be used: one problem, and nothing of it applies.
        let unusable = |reason: String| {
            let problem = McpConfigProblem {
                file: Some(path.clone()),
                server: None,
                reason,
            };
            let entries = McpEntries {
                file: Some(path.clone()),
                entries: BTreeMap::new(),
                problems: vec![problem],
            };
            (entries, FileTrust::Untrusted)
        };
        match agentd_core::regular_file::read_own_text(&path, MAX_MCP_JSON_BYTES) {
            Ok(read) if read.truncated => files.push(unusable(format!(
                "the file is larger than {MAX_MCP_JSON_BYTES} bytes and was not read"
            ))),
            Ok(read) => {
                let verdict = project.verdict(&path, &read.text);
                files.push((McpEntries::from_mcp_json(&path, &read.text), verdict));
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => files.push(unusable(format!("cannot be read: {error}"))),
        }
    }
    files
}

/// One entry of the `.mcp.json` shape.
fn json_entry(value: &serde_json::Value) -> Result<McpServerEntry, String> {
    if !value.is_object() {
        return Err("the entry must be an object".to_owned());
    }
    serde_json::from_value(value.clone()).map_err(|why| why.to_string())
}

/// One server of ACP's array shape: its name and its entry (or why the entry cannot be used);
/// the error is for a server without a name.
fn acp_entry(
    value: &serde_json::Value,
) -> Result<(String, Result<McpServerEntry, String>), String> {
    let serde_json::Value::Object(object) = value else {
        return Err("each server must be an object with a name".to_owned());
    };
    let name = object
        .get("name")
        .and_then(serde_json::Value::as_str)
        .ok_or("a server without a name; give each a \"name\"")?
        .to_owned();
    let mut object = object.clone();
    object.remove("name");
    Ok((
        name,
        acp_pairs_as_maps(object).and_then(|object| json_entry(&object)),
    ))
}

/// ACP's `env` and `headers` (`[{name, value}]`) as the objects of the `.mcp.json` shape.
fn acp_pairs_as_maps(
    mut object: serde_json::Map<String, serde_json::Value>,
) -> Result<serde_json::Value, String> {
    for key in ["env", "headers"] {
        if let Some(serde_json::Value::Array(pairs)) = object.get(key) {
            let mut map = serde_json::Map::new();
            for pair in pairs {
                let name = pair.get("name").and_then(serde_json::Value::as_str);
                let value = pair.get("value").and_then(serde_json::Value::as_str);
                let (Some(name), Some(value)) = (name, value) else {
                    return Err(format!(
                        "each of {key} must be {{\"name\": …, \"value\": …}} with strings"
                    ));
                };
                map.insert(name.to_owned(), value.into());
            }
            object.insert(key.to_owned(), serde_json::Value::Object(map));
        }
    }
    Ok(serde_json::Value::Object(object))
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
