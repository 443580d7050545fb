//! What trusting a project would apply, file by file, for `project/trust` (with and without
//! `dryRun`) and `agentctl trust --show`: each pinned file's rules, mode, hooks and MCP servers
//! (with their full command lines), described from the very text whose digest is pinned.

use protocol::project::{ProjectFile, ProjectFileStatus, ProjectServer, ProjectTrustResult};

use agentd_policy::trust::{FileTrust, Found, FoundFile};

/// The wire form of `found`; `trusted` is whether the root is trusted after the call.
pub fn result(found: &Found, trusted: bool) -> ProjectTrustResult {
    ProjectTrustResult {
        root: found.root.display().to_string(),
        trusted,
        files: found.files.iter().map(describe).collect(),
        removed: found
            .removed
            .iter()
            .map(|path| path.display().to_string())
            .collect(),
        unreadable: found.unreadable.clone(),
    }
}

/// One file: its status and what it sets.
fn describe(file: &FoundFile) -> ProjectFile {
    let mut described = ProjectFile {
        path: file.path.display().to_string(),
        digest: file.digest.clone(),
        status: match file.status {
            FileTrust::Pinned => ProjectFileStatus::Unchanged,
            FileTrust::Changed => ProjectFileStatus::Changed,
            FileTrust::New | FileTrust::Untrusted => ProjectFileStatus::New,
        },
        allow: Vec::new(),
        ask: Vec::new(),
        deny: Vec::new(),
        default_mode: None,
        servers: Vec::new(),
        hooks: None,
        problems: Vec::new(),
    };
    let is_mcp_json = file
        .path
        .file_name()
        .is_some_and(|name| name == agentd_work::mcp::config::MCP_JSON);
    let is_definition = file
        .path
        .extension()
        .is_some_and(|extension| extension == "md");
    if is_mcp_json {
        describe_mcp_json(file, &mut described);
    } else if is_definition {
        describe_definition(file, &mut described);
    } else {
        describe_settings(file, &mut described);
    }
    described
}

/// A settings file: its rules, its mode and its `hooks` as written.
fn describe_settings(file: &FoundFile, described: &mut ProjectFile) {
    match agentd_policy::permission::parse_settings_text(&file.path, &file.text) {
        Ok((rules, mode, errors)) => {
            let texts = |rules: &[agentd_policy::permission::Rule]| {
                rules.iter().map(|rule| rule.text.clone()).collect()
            };
            described.allow = texts(&rules.allow);
            described.ask = texts(&rules.ask);
            described.deny = texts(&rules.deny);
            described.default_mode = mode.map(|mode| mode.to_string());
            described.problems = errors.iter().map(ToString::to_string).collect();
        }
        Err(error) => described.problems.push(error.to_string()),
    }
    described.hooks = hooks_of(file);
}

/// An agent definition: trust pins it for the `hooks` of its frontmatter (a JSON text or
/// nested YAML) and the
/// servers its `mcpServers` defines inline; the rest of it applies without trust.
fn describe_definition(file: &FoundFile, described: &mut ProjectFile) {
    let inline = agentd_work::agents::inline_mcp_servers(&file.text);
    if !inline.is_empty() {
        let servers = serde_json::json!({ "mcpServers": inline });
        let as_mcp_json = FoundFile {
            text: servers.to_string(),
            ..file.clone()
        };
        describe_mcp_json(&as_mcp_json, described);
    }
    let document = match agentd_core::frontmatter::parse(&file.text) {
        Ok(document) => document,
        Err(error) => {
            described.problems.push(format!("bad frontmatter: {error}"));
            return;
        }
    };
    let hooks = document.fields.iter().find(|(name, _)| name == "hooks");
    let text = match hooks {
        Some((_, agentd_core::frontmatter::Value::Text(text))) => text,
        Some((_, agentd_core::frontmatter::Value::Nested(value))) => {
            described.hooks = Some(value.clone());
            return;
        }
        _ => return,
    };
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => described.hooks = Some(value),
        Err(error) => described
            .problems
            .push(format!("`hooks` is not a JSON object: {error}")),
    }
}

/// The `hooks` key of a settings file (JSON, or a TOML `[hooks]` table), as JSON.
pub(crate) fn hooks_of(file: &FoundFile) -> Option<serde_json::Value> {
    let is_json = file
        .path
        .extension()
        .is_some_and(|extension| extension == "json");
    if is_json {
        let value: serde_json::Value = serde_json::from_str(&file.text).ok()?;
        value.get("hooks").cloned()
    } else {
        let value: toml::Table = toml::from_str(&file.text).ok()?;
        serde_json::to_value(value.get("hooks")?).ok()
    }
}

/// A `.mcp.json`: each server as it would run, variables unexpanded.
fn describe_mcp_json(file: &FoundFile, described: &mut ProjectFile) {
    let entries = agentd_work::mcp::config::McpEntries::from_mcp_json(&file.path, &file.text);
    described.problems = entries
        .problems
        .iter()
        .map(|problem| match &problem.server {
            Some(server) => format!("server {server}: {}", problem.reason),
            None => problem.reason.clone(),
        })
        .collect();
    for (name, entry) in &entries.entries {
        use agentd_work::mcp::config::{TransportKind, transport_kind};
        let transport = match transport_kind(entry) {
            Ok(TransportKind::Stdio) => "stdio",
            Ok(TransportKind::Http) => "http",
            Err(reason) => {
                described.problems.push(format!("server {name}: {reason}"));
                "unknown"
            }
        };
        described.servers.push(ProjectServer {
            name: name.clone(),
            transport: transport.to_owned(),
            command: entry.command.iter().chain(&entry.args).cloned().collect(),
            cwd: entry.cwd.clone(),
            url: entry.url.clone(),
            env: entry
                .env
                .iter()
                .map(|(key, value)| format!("{key}={value}"))
                .collect(),
            headers: entry
                .headers
                .iter()
                .map(|(key, value)| format!("{key}: {value}"))
                .collect(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(path: &str, text: &str) -> FoundFile {
        FoundFile {
            path: std::path::PathBuf::from(path),
            text: text.to_owned(),
            digest: agentd_policy::trust::digest(text),
            status: FileTrust::Changed,
        }
    }

    #[test]
    fn a_settings_file_shows_its_rules_mode_and_hooks() {
        let file = found(
            "/p/.claude/settings.json",
            r#"{"permissions":{"allow":["Bash"],"deny":["Read(.env)"],"defaultMode":"acceptEdits"},
                "hooks":{"PreToolUse":[{"matcher":"","hooks":[{"type":"command","command":"x"}]}]}}"#,
        );
        let described = describe(&file);
        assert_eq!(described.status, ProjectFileStatus::Changed);
        assert_eq!(described.allow, vec!["Bash"]);
        assert_eq!(described.deny, vec!["Read(.env)"]);
        assert_eq!(described.default_mode.as_deref(), Some("acceptEdits"));
        assert!(
            described
                .hooks
                .is_some_and(|hooks| hooks.get("PreToolUse").is_some())
        );
    }

    #[test]
    fn an_mcp_json_shows_each_server_as_it_would_run() {
        let file = found(
            "/p/.mcp.json",
            r#"{"mcpServers":{
                "db":{"command":"npx","args":["-y","db-server","${TOKEN}"],"env":{"K":"${KEY}"}},
                "web":{"type":"http","url":"https://x.example/mcp","headers":{"Authorization":"Bearer ${T}"}}}}"#,
        );
        let described = describe(&file);
        assert_eq!(described.servers.len(), 2);
        let db = &described.servers[0];
        assert_eq!(
            (db.transport.as_str(), db.command.join(" "), db.env.clone()),
            (
                "stdio",
                "npx -y db-server ${TOKEN}".to_owned(),
                vec!["K=${KEY}".to_owned()]
            )
        );
        let web = &described.servers[1];
        assert_eq!(web.transport, "http");
        assert_eq!(web.url.as_deref(), Some("https://x.example/mcp"));
        assert_eq!(web.headers, vec!["Authorization: Bearer ${T}"]);
    }
}
