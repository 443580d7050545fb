//! Table-driven tests of MCP server configuration: discovery up to the git root, precedence,
//! `${VAR}` expansion, transports, problems, trust, the ACP array shape.

use std::collections::HashMap;

use pretty_assertions::assert_eq;

use super::*;
use crate::mcp::McpTransport;
use agentd_policy::trust::ProjectTrust;

/// The trust of `cwd`'s project with every file trusted as it is now.
fn trusted(cwd: &Path) -> ProjectTrust {
    ProjectTrust::pin_as_found(cwd)
}

/// The trust of `cwd`'s project, not trusted.
fn untrusted(cwd: &Path) -> ProjectTrust {
    ProjectTrust::untrusted(&agentd_policy::trust::project_root(cwd))
}

fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

fn no_env(_: &str) -> Option<String> {
    None
}

/// A temp tree: `outer/` holding a git repository `outer/repo/` with `sub/`; returns the
/// canonical paths.
struct Tree {
    _dir: tempfile::TempDir,
    outer: PathBuf,
    repo: PathBuf,
    sub: PathBuf,
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let outer = std::fs::canonicalize(dir.path()).unwrap();
    let repo = outer.join("repo");
    let sub = repo.join("sub");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&sub).unwrap();
    Tree {
        _dir: dir,
        outer,
        repo,
        sub,
    }
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

/// `{"mcpServers": {name: {"command": command}, …}}`.
fn mcp_json(servers: &[(&str, &str)]) -> String {
    let servers: serde_json::Map<String, serde_json::Value> = servers
        .iter()
        .map(|(name, command)| {
            (
                (*name).to_owned(),
                serde_json::json!({ "command": command }),
            )
        })
        .collect();
    serde_json::json!({ "mcpServers": servers }).to_string()
}

fn session_of(value: serde_json::Value) -> McpEntries {
    McpEntries::from_session(&value)
}

fn user_of(toml_text: &str) -> McpEntries {
    let tables: BTreeMap<String, toml::Value> = toml::from_str(toml_text).unwrap();
    McpEntries::from_toml(Path::new("/home/u/.config/agentd/config.toml"), tables)
}

fn command_of(config: &McpServerConfig) -> String {
    match &config.transport {
        McpTransport::Stdio { command, .. } => command.clone(),
        McpTransport::Http { url, .. } => url.clone(),
    }
}

/// "name=command" of each server to start, then of each untrusted and disabled one.
fn summary(set: &McpServerSet) -> (Vec<String>, Vec<String>, Vec<String>) {
    let names = |configs: &[McpServerConfig]| {
        configs
            .iter()
            .map(|config| format!("{}={}", config.name, command_of(config)))
            .collect::<Vec<_>>()
    };
    (
        names(&set.servers),
        names(&set.untrusted),
        names(&set.disabled),
    )
}

fn problems(set: &McpServerSet) -> Vec<String> {
    set.problems.iter().map(ToString::to_string).collect()
}

#[test]
fn mcp_json_is_found_from_the_cwd_up_to_the_git_root_and_the_nearer_file_wins() {
    let tree = tree();
    write(
        &tree.repo.join(MCP_JSON),
        &mcp_json(&[("a", "root-a"), ("b", "root-b")]),
    );
    write(&tree.sub.join(MCP_JSON), &mcp_json(&[("a", "sub-a")]));
    // Above the git root: not the project's.
    write(&tree.outer.join(MCP_JSON), &mcp_json(&[("c", "outer-c")]));
    let set = servers_for(
        &tree.sub,
        &McpEntries::default(),
        &McpEntries::default(),
        &trusted(&tree.sub),
        &[],
        &no_env,
    );
    assert_eq!(problems(&set), Vec::<String>::new());
    assert_eq!(summary(&set).0, ["a=sub-a", "b=root-b"]);
    assert_eq!(
        set.servers[0].source,
        McpSource::Project {
            file: tree.sub.join(MCP_JSON)
        }
    );
    assert_eq!(
        set.servers[1].source,
        McpSource::Project {
            file: tree.repo.join(MCP_JSON)
        }
    );
}

#[test]
fn outside_a_repository_only_the_workspace_mcp_json_counts() {
    let dir = tempfile::tempdir().unwrap();
    let outer = std::fs::canonicalize(dir.path()).unwrap();
    let workspace = outer.join("work");
    std::fs::create_dir(&workspace).unwrap();
    write(&outer.join(MCP_JSON), &mcp_json(&[("up", "up")]));
    write(&workspace.join(MCP_JSON), &mcp_json(&[("here", "here")]));
    let set = servers_for(
        &workspace,
        &McpEntries::default(),
        &McpEntries::default(),
        &trusted(&workspace),
        &[],
        &no_env,
    );
    assert_eq!(summary(&set).0, ["here=here"]);
}

#[test]
fn precedence_is_session_over_project_over_user_and_untrusted_projects_shadow_nothing() {
    let tree = tree();
    write(
        &tree.repo.join(MCP_JSON),
        &mcp_json(&[("x", "project-x"), ("z", "project-z"), ("w", "project-w")]),
    );
    let user = user_of(
        r#"
        x = { command = "user-x" }
        y = { command = "user-y" }
        z = { command = "user-z" }
        "#,
    );
    let session = session_of(serde_json::json!({
        "x": { "command": "session-x" },
        "y": { "command": "session-y" },
        "w": { "command": "session-w" },
    }));
    // (trusted, servers, untrusted)
    let cases: &[(bool, &[&str], &[&str])] = &[
        (
            true,
            &["w=session-w", "x=session-x", "y=session-y", "z=project-z"],
            &[],
        ),
        (
            false,
            &["w=session-w", "x=session-x", "y=session-y", "z=user-z"],
            // The session's own x and w replace the project's: they are not listed as waiting.
            &["z=project-z"],
        ),
    ];
    for (is_trusted, servers, waiting) in cases {
        let project = if *is_trusted {
            trusted(&tree.repo)
        } else {
            untrusted(&tree.repo)
        };
        let set = servers_for(&tree.repo, &user, &session, &project, &[], &no_env);
        assert_eq!(problems(&set), Vec::<String>::new(), "trusted={is_trusted}");
        let (got_servers, got_untrusted, _) = summary(&set);
        assert_eq!(got_servers, *servers, "trusted={is_trusted}");
        assert_eq!(got_untrusted, *waiting, "trusted={is_trusted}");
    }
    let set = servers_for(
        &tree.repo,
        &user,
        &session,
        &trusted(&tree.repo),
        &[],
        &no_env,
    );
    assert_eq!(set.servers[0].source, McpSource::Session);
    assert_eq!(
        set.servers[3].source,
        McpSource::Project {
            file: tree.repo.join(MCP_JSON)
        }
    );
}

#[test]
fn every_field_that_takes_variables_expands_them() {
    // The user's own entries (here a session's) expand everywhere; a project's: see below.
    let tree = tree();
    let text = r#"{"mcpServers": {
            "local": {
                "command": "${BIN}/server",
                "args": ["--token", "${TOKEN}", "${MODE:-fast}"],
                "env": {"API_KEY": "${TOKEN}", "PLAIN": "p"},
                "cwd": "${TOOLS:-tools}"
            },
            "remote": {
                "type": "http",
                "url": "https://${HOST}/mcp",
                "headers": {"Authorization": "Bearer ${TOKEN}"}
            }
        }}"#;
    let session = McpEntries::from_session(
        &serde_json::from_str::<serde_json::Value>(text).unwrap()["mcpServers"],
    );
    let env = env_of(&[
        ("BIN", "/opt/bin"),
        ("TOKEN", "t0k"),
        ("HOST", "example.com"),
    ]);
    let set = servers_for(
        &tree.repo,
        &McpEntries::default(),
        &session,
        &trusted(&tree.repo),
        &[],
        &env,
    );
    assert_eq!(problems(&set), Vec::<String>::new());
    assert_eq!(
        set.servers[0].transport,
        McpTransport::Stdio {
            command: "/opt/bin/server".to_owned(),
            args: vec!["--token".to_owned(), "t0k".to_owned(), "fast".to_owned()],
            env: BTreeMap::from([
                ("API_KEY".to_owned(), "t0k".to_owned()),
                ("PLAIN".to_owned(), "p".to_owned()),
            ]),
            // Relative to the session's cwd.
            cwd: Some(tree.repo.join("tools")),
        }
    );
    assert_eq!(
        set.servers[1].transport,
        McpTransport::Http {
            url: "https://example.com/mcp".to_owned(),
            headers: BTreeMap::from([("Authorization".to_owned(), "Bearer t0k".to_owned())]),
            oauth: Default::default(),
        }
    );
    assert_eq!(
        set.servers[0].startup_timeout,
        crate::mcp::DEFAULT_STARTUP_TIMEOUT
    );
    assert_eq!(
        set.servers[0].tool_timeout,
        crate::mcp::DEFAULT_TOOL_TIMEOUT
    );
    assert!(set.servers[0].enabled);

    // Without TOKEN both entries are problems naming the variable; the other sources still work.
    let user = user_of(r#"fine = { command = "ok" }"#);
    let set = servers_for(
        &tree.repo,
        &user,
        &session,
        &trusted(&tree.repo),
        &[],
        &no_env,
    );
    assert_eq!(summary(&set).0, ["fine=ok"]);
    let found = problems(&set);
    assert_eq!(found.len(), 2, "{found:?}");
    for (problem, server) in found.iter().zip(["local", "remote"]) {
        assert!(
            problem.contains("session/create mcpServers")
                && problem.contains(&format!("server {server}:"))
                && problem.contains("BIN is not set") | problem.contains("HOST is not set"),
            "{problem}"
        );
    }
}

#[test]
fn invalid_files_and_entries_are_problems_and_the_rest_still_loads() {
    // (the .mcp.json text, the servers it yields, a part of each problem)
    let cases: &[(&str, &[&str], &[&str])] = &[
        ("{ not json", &[], &["not valid JSON"]),
        ("[1, 2]", &[], &["must hold a JSON object"]),
        (
            r#"{"mcpServers": []}"#,
            &[],
            &["mcpServers must be an object"],
        ),
        (r#"{"other": 1}"#, &[], &[]),
        (
            r#"{"mcpServers": {"ok": {"command": "c"}, "my server": {"command": "c"}, "bad": {"args": "x", "command": "c"}, "scalar": 5}}"#,
            &["ok=c"],
            &[
                "server bad: invalid type",
                "server my server: the server name \"my server\" contains ' '",
                "server scalar: the entry must be an object",
            ],
        ),
    ];
    for (text, servers, expected_problems) in cases {
        let tree = tree();
        write(&tree.repo.join(MCP_JSON), text);
        let user = user_of(r#"mine = { command = "u" }"#);
        let set = servers_for(
            &tree.repo,
            &user,
            &McpEntries::default(),
            &trusted(&tree.repo),
            &[],
            &no_env,
        );
        let mut want: Vec<&str> = servers.to_vec();
        want.push("mine=u");
        want.sort_unstable();
        assert_eq!(summary(&set).0, want, "{text}");
        let found = problems(&set);
        assert_eq!(found.len(), expected_problems.len(), "{text}: {found:?}");
        // In the order of the object's keys, which depends on serde_json's features.
        for expected in *expected_problems {
            assert!(
                found.iter().any(|problem| {
                    problem.starts_with(&tree.repo.join(MCP_JSON).display().to_string())
                        && problem.contains(expected)
                }),
                "{text}: {expected} not in {found:?}"
            );
        }
    }
}

#[test]
fn a_file_too_big_or_not_regular_is_a_problem() {
    let tree = tree();
    write(
        &tree.repo.join(MCP_JSON),
        &" ".repeat(MAX_MCP_JSON_BYTES + 1),
    );
    std::fs::create_dir(tree.sub.join(MCP_JSON)).unwrap();
    let set = servers_for(
        &tree.sub,
        &McpEntries::default(),
        &McpEntries::default(),
        &trusted(&tree.sub),
        &[],
        &no_env,
    );
    let found = problems(&set);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("cannot be read"), "{}", found[0]);
    assert!(found[1].contains("larger than"), "{}", found[1]);
}

#[test]
fn an_untrusted_project_lists_its_servers_and_the_warning_says_how_to_trust() {
    let tree = tree();
    write(
        &tree.repo.join(MCP_JSON),
        &mcp_json(&[("a", "a"), ("b", "b")]),
    );
    let state = tempfile::tempdir().unwrap();
    let trust = agentd_policy::trust::TrustStore::empty(state.path());
    let none = McpEntries::default();
    let resolution = resolve_for(&tree.sub, &none, &none, &trust, &[], &no_env);
    assert_eq!(resolution.project, untrusted(&tree.sub));
    assert_eq!(
        summary(&resolution.set),
        (vec![], vec!["a=a".to_owned(), "b=b".to_owned()], vec![])
    );
    let warnings = resolution.warnings();
    let root = tree.repo.display().to_string();
    assert!(
        warnings.len() == 1
            && warnings[0].contains(&format!("project {root} is not trusted"))
            && warnings[0].contains(&format!("{}/{MCP_JSON}", root))
            && warnings[0].contains("(a, b)")
            && warnings[0].contains(&format!("agentctl trust --show {root}"))
            && !warnings[0].contains("project/trust"),
        "{warnings:?}"
    );

    trust.trust(&tree.sub, None).unwrap();
    let resolution = resolve_for(&tree.sub, &none, &none, &trust, &[], &no_env);
    assert_eq!(summary(&resolution.set).0, ["a=a", "b=b"]);
    assert_eq!(resolution.warnings(), Vec::<String>::new());
}

/// Trust is pinned to content: a `.mcp.json` changed (or planted) after the trust starts nothing
/// until trusted again, and the warning names the file and says it changed.
#[test]
fn a_changed_or_new_mcp_json_waits_for_a_new_trust() {
    let tree = tree();
    write(&tree.repo.join(MCP_JSON), &mcp_json(&[("a", "a")]));
    let state = tempfile::tempdir().unwrap();
    let trust = agentd_policy::trust::TrustStore::empty(state.path());
    let none = McpEntries::default();
    trust.trust(&tree.sub, None).unwrap();

    write(&tree.repo.join(MCP_JSON), &mcp_json(&[("a", "evil")]));
    write(&tree.sub.join(MCP_JSON), &mcp_json(&[("planted", "p")]));
    let resolution = resolve_for(&tree.sub, &none, &none, &trust, &[], &no_env);
    assert_eq!(
        summary(&resolution.set),
        (
            vec![],
            vec!["a=evil".to_owned(), "planted=p".to_owned()],
            vec![]
        )
    );
    let warnings = resolution.warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains(&format!(
            "{} is new since you trusted",
            tree.sub.join(MCP_JSON).display()
        )) && warnings[0].contains("(planted)"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[1].contains(&format!(
            "{} changed since you trusted",
            tree.repo.join(MCP_JSON).display()
        )),
        "{}",
        warnings[1]
    );

    trust.trust(&tree.sub, None).unwrap();
    let resolution = resolve_for(&tree.sub, &none, &none, &trust, &[], &no_env);
    assert_eq!(summary(&resolution.set).0, ["a=evil", "planted=p"]);
}

#[test]
fn the_withheld_warning_names_a_few_servers_and_counts_the_rest() {
    let withheld = crate::mcp::WithheldMcpFile {
        file: Path::new("/src/app/.mcp.json").to_path_buf(),
        verdict: agentd_policy::trust::FileTrust::Untrusted,
        servers: (0..13).map(|n| format!("s{n:02}")).collect(),
    };
    let warning = withheld_warning(&untrusted(Path::new("/src/app")), &withheld);
    assert!(warning.contains("s09, 3 more)"), "{warning}");
    assert!(!warning.contains("s10"), "{warning}");
}

/// A project's `.mcp.json` expands only the variables the user lists, and only into env and
/// header values: never a provider key by default, never into a command line or a url.
#[test]
fn a_project_expands_only_listed_variables_and_only_into_env_and_headers() {
    let tree = tree();
    let env = env_of(&[
        ("OPENAI_API_KEY", "sk-secret"),
        ("GITHUB_TOKEN", "ghp"),
        ("HOST", "example.com"),
    ]);
    let cases: &[(&str, &str)] = &[
        (
            r#"{"command": "s", "env": {"K": "${OPENAI_API_KEY}"}}"#,
            "env.K: ${OPENAI_API_KEY} is not expanded",
        ),
        (
            r#"{"command": "s", "args": ["${GITHUB_TOKEN}"]}"#,
            "args[0]: ${GITHUB_TOKEN} is not expanded",
        ),
        (
            r#"{"command": "${GITHUB_TOKEN}"}"#,
            "command: ${GITHUB_TOKEN} is not expanded",
        ),
        (
            r#"{"type": "http", "url": "https://${HOST}/${GITHUB_TOKEN}"}"#,
            "url: ${HOST} is not expanded",
        ),
        (
            r#"{"type": "http", "url": "https://x.example/", "headers": {"Authorization": "${OPENAI_API_KEY}"}}"#,
            "headers.Authorization: ${OPENAI_API_KEY} is not expanded",
        ),
    ];
    for (entry, expected) in cases {
        write(
            &tree.repo.join(MCP_JSON),
            &format!(r#"{{"mcpServers": {{"s": {entry}}}}}"#),
        );
        let allowed = ["GITHUB_TOKEN".to_owned()];
        let set = servers_for(
            &tree.repo,
            &McpEntries::default(),
            &McpEntries::default(),
            &trusted(&tree.repo),
            &allowed,
            &env,
        );
        let found = problems(&set);
        assert!(set.servers.is_empty(), "{entry}: {:?}", set.servers);
        assert!(
            found.len() == 1 && found[0].contains(expected),
            "{entry}: {found:?}"
        );
        assert!(found[0].contains("expand_env"), "{entry}: {found:?}");
    }
    // Listed variables expand into env and headers; a default stands in for the others.
    write(
        &tree.repo.join(MCP_JSON),
        r#"{"mcpServers": {"s": {"command": "s", "args": ["${MODE:-fast}"], "env": {"T": "${GITHUB_TOKEN}", "K": "${OPENAI_API_KEY:-none}"}}}}"#,
    );
    let allowed = ["GITHUB_TOKEN".to_owned()];
    let set = servers_for(
        &tree.repo,
        &McpEntries::default(),
        &McpEntries::default(),
        &trusted(&tree.repo),
        &allowed,
        &env,
    );
    assert_eq!(problems(&set), Vec::<String>::new());
    assert_eq!(
        set.servers[0].transport,
        McpTransport::Stdio {
            command: "s".to_owned(),
            args: vec!["fast".to_owned()],
            env: BTreeMap::from([
                ("K".to_owned(), "none".to_owned()),
                ("T".to_owned(), "ghp".to_owned()),
            ]),
            cwd: None,
        }
    );
}

#[test]
fn disabled_entries_are_listed_and_shadow_lower_layers() {
    let user = user_of(
        r#"
        github = { command = "user-github" }
        off = { command = "off", enabled = false }
        "#,
    );
    let session = session_of(serde_json::json!({
        "github": {"command": "session-github", "enabled": false}
    }));
    let set = servers_for(
        Path::new("/"),
        &user,
        &session,
        &trusted(Path::new("/")),
        &[],
        &no_env,
    );
    assert_eq!(
        summary(&set),
        (
            vec![],
            vec![],
            vec!["github=session-github".to_owned(), "off=off".to_owned()]
        )
    );
}

#[test]
fn another_users_mcp_json_is_a_problem_and_not_used() {
    let tree = tree();
    let path = tree.repo.join(MCP_JSON);
    write(&path, &mcp_json(&[("planted", "evil")]));
    let test = "another_users_mcp_json_is_a_problem_and_not_used";
    if !agentd_core::test_support::give_to_other_user(test, &path) {
        return;
    }
    let set = servers_for(
        &tree.repo,
        &McpEntries::default(),
        &McpEntries::default(),
        &trusted(&tree.repo),
        &[],
        &no_env,
    );
    assert_eq!(set.servers, vec![]);
    let found = problems(&set);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("belongs to another user") && found[0].contains("chown"),
        "{}",
        found[0]
    );
}

#[test]
fn the_acp_array_shape_is_accepted() {
    let session = session_of(serde_json::json!([
        {
            "name": "files",
            "command": "/bin/files",
            "args": ["--root", "/src"],
            "env": [{"name": "LEVEL", "value": "debug"}],
        },
        {
            "type": "http",
            "name": "remote",
            "url": "https://h/mcp",
            "headers": [{"name": "Authorization", "value": "Bearer x"}],
        },
        {"command": "nameless"},
        {"name": "files", "command": "/bin/second"},
        {"name": "badenv", "command": "c", "env": [{"name": "A"}]},
        7,
    ]));
    let set = servers_for(
        Path::new("/"),
        &McpEntries::default(),
        &session,
        &trusted(Path::new("/")),
        &[],
        &no_env,
    );
    assert_eq!(
        set.servers[0].transport,
        McpTransport::Stdio {
            command: "/bin/files".to_owned(),
            args: vec!["--root".to_owned(), "/src".to_owned()],
            env: BTreeMap::from([("LEVEL".to_owned(), "debug".to_owned())]),
            cwd: None,
        }
    );
    assert_eq!(
        set.servers[1].transport,
        McpTransport::Http {
            url: "https://h/mcp".to_owned(),
            headers: BTreeMap::from([("Authorization".to_owned(), "Bearer x".to_owned())]),
            oauth: Default::default(),
        }
    );
    assert_eq!(set.servers.len(), 2);
    let found = problems(&set);
    assert_eq!(
        found,
        [
            "session/create mcpServers: mcpServers[2]: a server without a name; give each a \"name\"",
            "session/create mcpServers: server files: the name is listed twice; the first entry is used",
            "session/create mcpServers: server badenv: each of env must be {\"name\": …, \"value\": …} with strings",
            "session/create mcpServers: mcpServers[5]: each server must be an object with a name",
        ]
    );
}

#[test]
fn a_relative_cwd_is_resolved_against_its_source() {
    let user = user_of(r#"rel = { command = "c", cwd = "tools" }"#);
    let session = session_of(serde_json::json!({"here": {"command": "c", "cwd": "tools"}}));
    let set = servers_for(
        Path::new("/work/app"),
        &user,
        &session,
        &trusted(Path::new("/work/app")),
        &[],
        &no_env,
    );
    let McpTransport::Stdio { cwd, .. } = &set.servers[0].transport else {
        panic!("{set:?}");
    };
    assert_eq!(cwd.as_deref(), Some(Path::new("/work/app/tools")));
    assert_eq!(
        problems(&set),
        [
            "/home/u/.config/agentd/config.toml: server rel: cwd \"tools\" is relative; config.toml entries need an absolute cwd"
        ]
    );
}

#[test]
fn config_toml_entries_report_unknown_keys_and_wrong_types() {
    let user = user_of(
        r#"
        ok = { command = "c", type = "stdio", startup_timeout_secs = 5 }
        typo = { comand = "c" }
        camel = { command = "c", toolTimeoutSecs = 5 }
        wrong = { command = 5 }
        scalar = 3
        "#,
    );
    assert_eq!(user.entries.keys().collect::<Vec<_>>(), ["ok"]);
    let found: Vec<String> = user.problems.iter().map(ToString::to_string).collect();
    let expected = [
        "server camel: unknown key \"toolTimeoutSecs\"",
        "server scalar: mcp_servers.scalar must be a table",
        "server typo: unknown key \"comand\"",
        "server wrong: [mcp_servers.wrong]: invalid type",
    ];
    assert_eq!(found.len(), expected.len(), "{found:?}");
    for (problem, expected) in found.iter().zip(expected) {
        assert!(
            problem.starts_with("/home/u/.config/agentd/config.toml: ")
                && problem.contains(expected),
            "{problem}"
        );
    }
}

#[test]
fn too_many_servers_in_one_place_are_reported() {
    let servers: serde_json::Map<String, serde_json::Value> = (0..=MAX_SERVERS_PER_SOURCE)
        .map(|n| (format!("s{n:03}"), serde_json::json!({"command": "c"})))
        .collect();
    let value = serde_json::Value::Object(servers);
    let entries = McpEntries::from_session(&value);
    assert_eq!(entries.entries.len(), MAX_SERVERS_PER_SOURCE);
    assert_eq!(entries.problems.len(), 1);
    assert!(
        check_session_param(&value)
            .unwrap_err()
            .contains("at most 100")
    );
}

#[test]
fn the_session_param_must_be_an_object_or_an_array() {
    for (value, ok) in [
        (serde_json::json!(null), true),
        (serde_json::json!({}), true),
        (serde_json::json!([]), true),
        (serde_json::json!({"a": 5}), true),
        (serde_json::json!("servers"), false),
        (serde_json::json!(3), false),
    ] {
        assert_eq!(check_session_param(&value).is_ok(), ok, "{value}");
    }
}

#[test]
fn a_resolution_carries_the_trust_and_the_warnings_of_the_session() {
    let tree = tree();
    write(&tree.repo.join(MCP_JSON), &mcp_json(&[("proj", "p")]));
    let state = tempfile::tempdir().unwrap();
    let trust = agentd_policy::trust::TrustStore::empty(state.path());
    let user = user_of(r#"bad = { command = "${MISSING}" }"#);
    let session = session_of(serde_json::json!({"mine": {"command": "m"}}));
    let resolution = resolve_for(&tree.sub, &user, &session, &trust, &[], &no_env);
    assert_eq!(resolution.project.root, tree.repo);
    assert!(!resolution.project.trusted());
    assert_eq!(summary(&resolution.set).0, ["mine=m"]);
    let warnings = resolution.warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains("agentctl trust") && warnings[0].contains("(proj)"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[1].contains("server bad: command: environment variable MISSING"),
        "{}",
        warnings[1]
    );

    trust.trust(&tree.sub, None).unwrap();
    let resolution = resolve_for(&tree.sub, &user, &session, &trust, &[], &no_env);
    assert!(resolution.project.trusted());
    assert_eq!(summary(&resolution.set).0, ["mine=m", "proj=p"]);
    assert_eq!(resolution.warnings().len(), 1);
}
