//! Tests of subagent definitions: parsing both spellings, bad files, discovery order, built-ins
//! and the tool filter.

use super::*;
use pretty_assertions::assert_eq;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A repository `repo/` with a workspace `repo/app/` and a user agents dir beside them.
struct Tree {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    workspace: PathBuf,
    user: PathBuf,
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let workspace = repo.join("app");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    let user = dir.path().join("user-agents");
    Tree {
        _dir: dir,
        repo,
        workspace,
        user,
    }
}

fn discover_in(tree: &Tree) -> AgentCatalogue {
    discover(&tree.workspace, Some(&tree.user))
}

fn only(tree: &Tree, file: &str, text: &str) -> Result<AgentDefinition, String> {
    let path = tree.workspace.join(".agents/agents").join(file);
    write(&path, text);
    let catalogue = discover_in(tree);
    if let Some(problem) = catalogue.problems.iter().find(|p| p.path == path) {
        return Err(problem.reason.clone());
    }
    catalogue
        .agents
        .into_iter()
        .find(|agent| agent.source.path() == Some(path.as_path()))
        .ok_or_else(|| "not found".to_owned())
}

#[test]
fn claude_code_spelling() {
    let tree = tree();
    let agent = only(
        &tree,
        "reviewer.md",
        "---\ndescription: Reviews code\ntools: Read, Grep, Bash\ndisallowedTools: [Write]\nmodel: sonnet\nmaxTurns: 7\nmaxBudgetUsd: 1.5\nmaxTokens: 20_000\npermissionMode: acceptEdits\nmcpServers:\n  - github\nbackground: true\nskills: pdf, review\n---\n\nYou review code.\n",
    )
    .unwrap();
    assert_eq!(agent.name, "reviewer");
    assert_eq!(agent.description, "Reviews code");
    assert_eq!(agent.body, "You review code.\n");
    assert_eq!(
        agent.tools,
        Some(vec!["read_file".into(), "grep".into(), "run_shell".into()])
    );
    assert_eq!(agent.disallowed_tools, vec!["write_file".to_owned()]);
    assert_eq!(agent.model.as_deref(), Some("sonnet"));
    assert_eq!(agent.max_turns, Some(7));
    assert_eq!(agent.max_budget_usd, Some(1.5));
    assert_eq!(agent.max_tokens, Some(20_000));
    assert_eq!(agent.permission_mode.as_deref(), Some("acceptEdits"));
    assert_eq!(
        agent.mcp_servers,
        Some(AgentMcpServers {
            names: vec!["github".into()],
            inline: Default::default(),
        })
    );
    assert!(agent.background);
    assert_eq!(agent.warnings, Vec::<String>::new());
    assert_eq!(agent.skills, vec!["pdf".to_owned(), "review".to_owned()]);
}

#[test]
fn reference_spelling() {
    let tree = tree();
    let agent = only(
        &tree,
        "x.md",
        "---\nname: fixer\ndescription: Fixes\ntools:\n  - read_file\n  - edit_file\ndisallowed_tools: run_shell\nmodel: inherit\nmax_iteration_per_run: 3\nmax_budget_per_run: 2\npermission_mode: neverConfirm\n---\nFix things.",
    )
    .unwrap();
    assert_eq!(agent.name, "fixer");
    assert_eq!(
        agent.tools,
        Some(vec!["read_file".into(), "edit_file".into()])
    );
    assert_eq!(agent.disallowed_tools, vec!["run_shell".to_owned()]);
    assert_eq!(agent.model, None);
    assert_eq!(agent.max_turns, Some(3));
    assert_eq!(agent.max_budget_usd, Some(2.0));
    assert_eq!(agent.permission_mode.as_deref(), Some("bypass"));
    assert!(!agent.background);
    for (theirs, ours) in [
        ("alwaysConfirm", "default"),
        ("confirmRisky", "acceptEdits"),
    ] {
        let agent = only(
            &tree,
            "x.md",
            &format!("---\nname: fixer\ndescription: d\npermission_mode: {theirs}\n---\n"),
        )
        .unwrap();
        assert_eq!(agent.permission_mode.as_deref(), Some(ours));
    }
}

#[test]
fn every_key_and_mode_in_either_spelling() {
    let tree = tree();
    for (theirs, ours) in [
        ("always_confirm", "default"),
        ("confirm_risky", "acceptEdits"),
        ("never_confirm", "bypass"),
        ("acceptEdits", "acceptEdits"),
        ("accept_edits", "acceptEdits"),
        ("bypassPermissions", "bypass"),
        ("bypass_permissions", "bypass"),
        ("dontAsk", "default"),
        ("plan", "plan"),
    ] {
        for key in ["permission_mode", "permissionMode"] {
            let agent = only(
                &tree,
                "x.md",
                &format!("---\nname: x\ndescription: d\n{key}: {theirs}\n---\n"),
            )
            .unwrap_or_else(|err| panic!("{key}: {theirs}: {err}"));
            assert_eq!(agent.permission_mode.as_deref(), Some(ours), "{theirs}");
        }
    }
    let agent = only(
        &tree,
        "x.md",
        "---\nname: x\ndescription: d\nmax_turns: 4\nmax_budget_usd: 1\nmax_tokens: 9\ndisallowedTools: Bash\nmcp_servers: github, fs\n---\n",
    )
    .unwrap();
    assert_eq!(agent.max_turns, Some(4));
    assert_eq!(agent.max_budget_usd, Some(1.0));
    assert_eq!(agent.max_tokens, Some(9));
    assert_eq!(agent.disallowed_tools, vec!["run_shell".to_owned()]);
    assert_eq!(
        agent.mcp_servers.map(|servers| servers.names),
        Some(vec!["github".to_owned(), "fs".to_owned()])
    );
}

#[test]
fn keys_not_used_are_warnings_that_name_them() {
    let tree = tree();
    let agent = only(
        &tree,
        "x.md",
        "---\nname: x\ndescription: d\ncolor: blue\neffort: high\ncondenser: none\nfavourite_food: soup\n---\nbody",
    )
    .unwrap();
    assert_eq!(agent.warnings.len(), 4, "{:?}", agent.warnings);
    for key in ["color", "effort", "condenser", "favourite_food"] {
        assert!(
            agent
                .warnings
                .iter()
                .any(|warning| warning.contains(&format!("`{key}`"))),
            "{key}: {:?}",
            agent.warnings
        );
    }
    assert!(
        agent.warnings[3].contains("not a key agentd knows"),
        "{:?}",
        agent.warnings
    );
}

#[test]
fn inline_mcp_servers_are_json_items() {
    let tree = tree();
    let agent = only(
        &tree,
        "x.md",
        "---\nname: x\ndescription: d\nmcpServers:\n  - github\n  - '{\"fs\": {\"command\": \"node\", \"args\": [\"fs.js\"]}}'\n  - '{oops'\n---\n",
    )
    .unwrap();
    let servers = agent.mcp_servers.clone().unwrap();
    assert_eq!(servers.names, vec!["github".to_owned()]);
    assert_eq!(
        servers.inline.get("fs"),
        Some(&serde_json::json!({"command": "node", "args": ["fs.js"]}))
    );
    assert_eq!(agent.warnings.len(), 1, "{:?}", agent.warnings);
    assert!(agent.warnings[0].contains("{oops"), "{:?}", agent.warnings);
    // Inline servers are pinned by trust like hooks: the digest of the file is kept.
    assert!(agent.hooks_digest.is_some());
    let agent = only(
        &tree,
        "y.md",
        "---\nname: y\ndescription: d\nmcp_config: '{\"mcpServers\": {\"fs\": {\"command\": \"node\"}}}'\n---\n",
    )
    .unwrap();
    assert_eq!(
        agent.mcp_servers.unwrap().inline.keys().collect::<Vec<_>>(),
        vec!["fs"]
    );
}

#[test]
fn claude_codes_nested_hooks_and_mcp_servers_are_read() {
    let tree = tree();
    let agent = only(
        &tree,
        "x.md",
        "---\nname: x\ndescription: d\nmcpServers:\n  - github\n  - playwright:\n      type: stdio\n      command: npx\n      args: [\"-y\", \"@playwright/mcp\"]\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: ./check.sh\nisolation:\n  kind: worktree\n---\nbody",
    )
    .unwrap();
    let servers = agent.mcp_servers.clone().unwrap();
    assert_eq!(servers.names, vec!["github".to_owned()]);
    assert_eq!(
        servers.inline.get("playwright"),
        Some(
            &serde_json::json!({"type": "stdio", "command": "npx", "args": ["-y", "@playwright/mcp"]})
        )
    );
    let hooks: serde_json::Value = serde_json::from_str(agent.hooks.as_deref().unwrap()).unwrap();
    assert_eq!(
        hooks["PreToolUse"][0]["hooks"][0]["command"],
        serde_json::json!("./check.sh")
    );
    // An unknown nested key is a warning, not a refusal.
    assert_eq!(agent.warnings.len(), 1, "{:?}", agent.warnings);
    assert!(
        agent.warnings[0].contains("`isolation`"),
        "{:?}",
        agent.warnings
    );
}

#[test]
fn bad_files_are_problems_never_fatal() {
    let tree = tree();
    let check = |text: &str, reason: &str| {
        let got = only(&tree, "bad.md", text).unwrap_err();
        assert!(got.contains(reason), "{got:?} should say {reason:?}");
    };
    check("---\nname: a\n---\nbody", "no description");
    check("no frontmatter at all", "no description");
    check("---\ndescription: x\n", "bad frontmatter: line 1");
    check(
        "---\ndescription: x\nmaxTurns: many\n---\n",
        "maxTurns `many`",
    );
    check(
        "---\ndescription: x\nmaxTokens: 0\n---\n",
        "maxTokens `0` is not a positive whole number",
    );
    check(
        "---\ndescription: x\npermissionMode: yolo\n---\n",
        "permissionMode `yolo` is unknown",
    );
    check(
        "---\ndescription: x\nbackground: maybe\n---\n",
        "true or false",
    );
    check(
        "---\ndescription: x\nmaxTurns: 1\nmax_iteration_per_run: 2\n---\n",
        "given twice",
    );
    check("---\nname: a b\ndescription: x\n---\n", "not a usable name");
    // The rest of the catalogue is still there.
    let catalogue = discover_in(&tree);
    assert_eq!(catalogue.names(), vec![GENERAL_PURPOSE, EXPLORE]);
}

#[test]
fn other_users_file_is_refused() {
    let tree = tree();
    let path = tree.workspace.join(".claude/agents/theirs.md");
    write(&path, "---\ndescription: x\n---\nbody");
    // Only root can give a file away; elsewhere the refusal cannot be set up.
    if std::os::unix::fs::chown(&path, Some(65534), None).is_err() {
        return;
    }
    let catalogue = discover_in(&tree);
    assert_eq!(catalogue.get("theirs"), None);
    let problem = catalogue.problems.iter().find(|p| p.path == path).unwrap();
    assert!(problem.reason.contains("another user"), "{problem:?}");
}

#[test]
fn nearer_wins_and_project_wins_over_user() {
    let tree = tree();
    let md = |description: &str| format!("---\nname: same\ndescription: {description}\n---\n");
    write(&tree.user.join("same.md"), &md("user"));
    write(&tree.repo.join(".agents/agents/same.md"), &md("repo"));
    write(
        &tree.workspace.join(".claude/agents/same.md"),
        &md("workspace"),
    );
    write(
        &tree.user.join("mine.md"),
        "---\ndescription: only mine\n---\n",
    );
    let catalogue = discover_in(&tree);
    assert_eq!(catalogue.get("same").unwrap().description, "workspace");
    assert_eq!(
        catalogue.get("mine").unwrap().source,
        AgentSource::User(tree.user.join("mine.md"))
    );
    assert_eq!(catalogue.problems.len(), 2, "{:?}", catalogue.problems);
    assert!(catalogue.problems[0].reason.contains("nearer"));
    assert_eq!(
        catalogue.names(),
        vec![GENERAL_PURPOSE, EXPLORE, "mine", "same"]
    );
}

#[test]
fn built_ins_and_replacing_one() {
    let tree = tree();
    let catalogue = discover_in(&tree);
    let explore = catalogue.get(EXPLORE).unwrap();
    assert!(explore.read_only);
    assert_eq!(explore.source, AgentSource::BuiltIn);
    assert!(!catalogue.get(GENERAL_PURPOSE).unwrap().read_only);
    write(
        &tree.workspace.join(".agents/agents/explore.md"),
        "---\ndescription: my explorer\n---\nMine.",
    );
    let catalogue = discover_in(&tree);
    assert_eq!(catalogue.names(), vec![GENERAL_PURPOSE, EXPLORE]);
    assert_eq!(catalogue.get(EXPLORE).unwrap().description, "my explorer");
    assert_eq!(catalogue.get(EXPLORE).unwrap().body, "Mine.");
}

#[test]
fn unknown_lists_the_available_agents() {
    let catalogue = discover(Path::new("/nonexistent-agentd-test"), None);
    assert_eq!(
        catalogue.unknown("nope"),
        "no agent named `nope`; available agents: general-purpose, explore"
    );
}

#[test]
fn filter_never_gives_recursion_or_shared_state() {
    let registry = crate::tools::ToolRegistry::builtin();
    let mut agent = built_ins().remove(0);
    let names = |registry: &crate::tools::ToolRegistry| {
        registry
            .names()
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let all = names(&filter_tools(&agent, &registry));
    assert!(!all.contains(&"todo_write".to_owned()), "{all:?}");
    assert!(all.contains(&"write_file".to_owned()), "{all:?}");
    agent.tools = Some(vec![
        "read_file".into(),
        "todo_write".into(),
        "task".into(),
        "memory".into(),
    ]);
    assert_eq!(names(&filter_tools(&agent, &registry)), vec!["read_file"]);
    agent.tools = None;
    agent.disallowed_tools = vec!["run_shell".into()];
    assert!(!names(&filter_tools(&agent, &registry)).contains(&"run_shell".to_owned()));
    let explore = built_ins().remove(1);
    assert_eq!(
        names(&filter_tools(&explore, &registry)),
        vec!["fetch_url", "glob", "grep", "list_dir", "read_file"]
    );
}

#[test]
fn a_tools_list_keeps_the_tools_of_the_definitions_own_servers_and_wildcards() {
    let mut agent = built_ins().remove(0);
    agent.tools = Some(vec!["read_file".into(), "mcp__github__*".into()]);
    agent.mcp_servers = Some(AgentMcpServers {
        names: vec!["time".into()],
        inline: serde_json::Map::from_iter([("my.fs".to_owned(), serde_json::json!({}))]),
    });
    let filter = ToolFilter::of(&agent);
    for (kept, server) in [
        ("read_file", None),
        ("mcp__time__get_current_time", Some("time")),
        ("mcp__my_fs__read", Some("my.fs")),
        ("mcp__github__search", Some("github")),
    ] {
        assert!(filter.allows(kept, false, server), "{kept}");
    }
    for (dropped, server) in [
        ("write_file", None),
        ("mcp__everything__echo", Some("everything")),
        ("mcp__time__x", Some("timer")),
    ] {
        assert!(!filter.allows(dropped, false, server), "{dropped}");
    }
    // Without a `tools` list every tool is kept anyway.
    agent.tools = None;
    assert_eq!(ToolFilter::of(&agent).allow_servers, Vec::<String>::new());
}

#[test]
fn child_prompt_is_the_body_and_declared_skills() {
    let mut agent = built_ins().remove(0);
    agent.body = "Body.".into();
    let skills = agentd_knowledge::skills::Catalogue {
        skills: vec![agentd_knowledge::skills::Skill {
            name: "pdf".into(),
            description: "Fill PDF forms".into(),
            path: PathBuf::from("/x/pdf/SKILL.md"),
            source: agentd_knowledge::skills::SkillSource::User,
            root: PathBuf::from("/x"),
        }],
        warnings: Vec::new(),
    };
    assert_eq!(child_system_prompt(&agent, "", &skills), "Body.");
    assert_eq!(
        child_system_prompt(&agent, "\n\n<environment>", &skills),
        "Body.\n\n<environment>"
    );
    agent.skills = vec!["pdf".into(), "unknown".into()];
    let prompt = child_system_prompt(&agent, "", &skills);
    assert!(
        prompt.starts_with("Body.\n\n<available_skills>"),
        "{prompt}"
    );
    assert!(prompt.contains("- pdf: Fill PDF forms"), "{prompt}");
}

#[test]
fn a_definition_linked_out_of_the_project_or_the_config_dir_is_not_read() {
    let tree = tree();
    let base = tree.repo.parent().unwrap().to_path_buf();
    let planted =
        "---\ndescription: SECRET planted\npermissionMode: bypassPermissions\n---\nbody\n";
    write(&base.join("outside/evil.md"), planted);
    write(
        &tree.repo.join("shared/helper.md"),
        "---\ndescription: Helps\n---\nhelp\n",
    );
    let project = tree.workspace.join(".claude/agents");
    std::fs::create_dir_all(&project).unwrap();
    std::os::unix::fs::symlink(base.join("outside/evil.md"), project.join("evil.md")).unwrap();
    std::os::unix::fs::symlink(
        tree.repo.join("shared/helper.md"),
        project.join("helper.md"),
    )
    .unwrap();
    let user = base.join("config/agents");
    std::fs::create_dir_all(&user).unwrap();
    std::os::unix::fs::symlink(base.join("outside/evil.md"), user.join("mine.md")).unwrap();

    let catalogue = discover(&tree.workspace, Some(&user));
    let names = catalogue.names();
    assert!(names.contains(&"helper"), "{names:?}");
    assert!(
        !names.contains(&"evil") && !names.contains(&"mine"),
        "{names:?}"
    );
    for path in [project.join("evil.md"), user.join("mine.md")] {
        let problem = catalogue
            .problems
            .iter()
            .find(|problem| problem.path == path)
            .unwrap_or_else(|| panic!("{}: {:?}", path.display(), catalogue.problems));
        assert!(
            problem.reason.contains("through a symbolic link")
                && !problem.reason.contains("SECRET"),
            "{}",
            problem.reason
        );
    }
}
