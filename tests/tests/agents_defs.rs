//! Subagent definitions end to end: the `<available_agents>` catalogue in a top-level
//! session's frozen system prompt, `agents/list` and `agentctl agents list [--json]`, and
//! `session/create {agentType}` / `agentctl run --agent NAME`: the definition's prompt (+ its
//! skills' catalogue) and its filtered tools, never `task`, `memory` or `todo_write`.

use std::path::{Path, PathBuf};

use agentd_tests::harness::{TestEnv, decode, text};
use agentd_tests::mcp_scenario::request_tool_names;
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::agents::{AgentSource, AgentsListResult};
use protocol::event::{Event, RunStatus};
use serde_json::json;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const REVIEWER_BODY: &str = "You review code. Report findings only.\n";

/// A git root with a nested `app/` cwd: a project agent that lists forbidden tools and a skill,
/// a user agent, a bad file, and a skill. Returns the cwd.
fn plant_agents(env: &TestEnv) -> PathBuf {
    let root = env.workspace();
    let cwd = root.join("app");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    write(
        &cwd.join(".claude/agents/reviewer.md"),
        &format!(
            "---\ndescription: Reviews a change for bugs\ntools: Read, Grep, task, memory, TodoWrite\nskills: [pdf]\nmodel: inherit\n---\n{REVIEWER_BODY}"
        ),
    );
    write(
        &root.join(".agents/agents/broken.md"),
        "---\nname: broken\n---\nno description\n",
    );
    write(
        &env.path("config").join("agentd/agents/helper.md"),
        "---\nname: helper\ndescription: The user's helper\nmax_iteration_per_run: 3\nbackground: true\n---\nHelp.\n",
    );
    write(
        &cwd.join(".claude/skills/pdf/SKILL.md"),
        "---\ndescription: Fill PDF forms\n---\nbody\n",
    );
    cwd.canonicalize().unwrap()
}

#[tokio::test]
async fn the_catalogue_is_in_a_top_level_sessions_prompt() {
    let s = Scenario::start(Format::OpenAi).await;
    let cwd = plant_agents(&s.daemon.env);
    s.mock.push(Reply::text("ok"));
    let mut client = s.client().await;
    let session = create_session(&mut client, &cwd).await;
    client.subscribe(&session, Some(0)).await;
    client.prompt(&session, "hi").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let system = request_system_text(Format::OpenAi, &s.mock.requests()[0]);
    let start = system.find("<available_agents>").expect(&system);
    let section = &system[start..];
    let names: Vec<&str> = section
        .lines()
        .filter_map(|line| line.strip_prefix("- "))
        .collect();
    assert_eq!(
        names,
        [
            "general-purpose: General-purpose agent for multi-step tasks: researching, searching code, making changes. Use it when a task needs its own context.",
            "explore: Read-only agent that explores a codebase fast: finds files, searches code, reads and answers questions about it. It cannot change anything.",
            "helper: The user's helper",
            "reviewer: Reviews a change for bugs",
        ],
        "{section}"
    );
    assert!(section.contains("task tool"), "{section}");
    assert!(section.ends_with("</available_agents>"), "{section}");
    assert!(!system.contains(REVIEWER_BODY), "no bodies: {system}");
}

#[tokio::test]
async fn agents_list_shows_agents_and_problems() {
    let s = Scenario::start(Format::OpenAi).await;
    let cwd = plant_agents(&s.daemon.env);
    let mut client = s.client().await;
    let result: AgentsListResult = decode(
        client
            .request("agents/list", json!({"cwd": cwd.display().to_string()}))
            .await
            .unwrap(),
    );
    let names: Vec<(&str, AgentSource)> = result
        .agents
        .iter()
        .map(|agent| (agent.name.as_str(), agent.source))
        .collect();
    assert_eq!(
        names,
        [
            ("general-purpose", AgentSource::BuiltIn),
            ("explore", AgentSource::BuiltIn),
            ("helper", AgentSource::User),
            ("reviewer", AgentSource::Project),
        ]
    );
    assert!(result.agents[1].read_only);
    assert!(result.agents[2].background);
    let reviewer = &result.agents[3];
    assert_eq!(
        reviewer.path.as_deref(),
        Some(cwd.join(".claude/agents/reviewer.md").to_str().unwrap())
    );
    assert_eq!(
        reviewer.tools.as_deref(),
        Some(&["read_file", "grep", "task", "memory", "todo_write"].map(String::from)[..])
    );
    assert_eq!(result.problems.len(), 1, "{:?}", result.problems);
    assert!(
        result.problems[0]
            .path
            .ends_with(".agents/agents/broken.md")
    );
    assert!(
        result.problems[0].reason.contains("no description"),
        "{:?}",
        result.problems
    );
    let refused = client
        .request("agents/list", json!({"cwd": "relative"}))
        .await
        .unwrap_err();
    assert_eq!(refused.code, -32602);
}

#[tokio::test]
async fn an_unknown_agent_type_is_refused_with_the_available_ones() {
    let s = Scenario::start(Format::OpenAi).await;
    let cwd = plant_agents(&s.daemon.env);
    let mut client = s.client().await;
    let refused = client
        .request(
            "session/create",
            json!({"cwd": cwd.display().to_string(), "agentType": "nope"}),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code, -32602);
    assert_eq!(
        refused.message,
        "no agent named `nope`; available agents: general-purpose, explore, helper, reviewer"
    );
}

/// An `agentctl` environment whose daemon talks to `mock` (OpenAI format) without asking.
fn cli_env(mock: &MockLlm) -> TestEnv {
    TestEnv::new()
        .var("OPENAI_API_KEY", "sk-test")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .config("[permissions]\ndefault_mode = \"bypass\"\n")
}

#[tokio::test]
async fn run_as_an_agent_has_its_prompt_and_only_its_allowed_tools() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text("Reviewed."));
    let env = cli_env(&mock);
    let cwd = plant_agents(&env);
    let cwd_arg = cwd.display().to_string();
    let output = env
        .run_agentctl(&["run", "--cwd", &cwd_arg, "--agent", "reviewer", "review it"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("Reviewed."));
    let request = &mock.requests()[0];
    // The body, the environment block (as a top-level session's), then the skills it declares.
    let system = request_system_text(Format::OpenAi, request);
    let environment = system.find("\n\n<environment>\n").expect(&system);
    assert_eq!(&system[..environment], REVIEWER_BODY.trim_end());
    assert!(
        system.contains(&format!("workspace: {}\n", cwd.display())),
        "{system}"
    );
    assert!(
        system.ends_with(
            "</environment>\n\n<available_skills>\nSkills are instructions for specific tasks. When a task matches a skill's description, call load_skill with its name before starting, then follow what it says.\n- pdf: Fill PDF forms\n</available_skills>"
        ),
        "{system}"
    );
    assert_eq!(
        request_user_texts(Format::OpenAi, request),
        ["review it".to_owned()]
    );
    assert_eq!(
        request_tool_names(Format::OpenAi, request),
        ["grep", "read_file"]
    );
}

#[tokio::test]
async fn run_as_explore_gets_only_read_only_tools_and_no_catalogues() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text("Found."));
    let env = cli_env(&mock);
    let cwd = plant_agents(&env);
    let cwd_arg = cwd.display().to_string();
    let output = env
        .run_agentctl(&["run", "--cwd", &cwd_arg, "--agent", "explore", "find it"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let request = &mock.requests()[0];
    let system = request_system_text(Format::OpenAi, request);
    assert!(
        system.starts_with("You are a read-only subagent"),
        "{system}"
    );
    for absent in ["<available_agents>", "<memory>", "<available_skills>"] {
        assert!(!system.contains(absent), "{absent} in {system}");
    }
    let tools = request_tool_names(Format::OpenAi, request);
    for tool in [
        "write_file",
        "edit_file",
        "run_shell",
        "todo_write",
        "memory",
    ] {
        assert!(!tools.contains(&tool.to_owned()), "{tool} in {tools:?}");
    }
    for tool in ["read_file", "grep", "glob", "list_dir", "fetch_url"] {
        assert!(tools.contains(&tool.to_owned()), "{tool} not in {tools:?}");
    }
}

#[tokio::test]
async fn agentctl_agents_list_prints_a_table_the_problems_and_json() {
    let mock = MockLlm::start().await;
    let env = cli_env(&mock);
    let cwd = plant_agents(&env);
    let cwd_arg = cwd.display().to_string();
    let output = env
        .run_agentctl(&["agents", "list", "--cwd", &cwd_arg])
        .await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|line| !line.starts_with(' '))
        .map(|line| line.get(..35).unwrap_or(line).trim_end())
        .collect();
    assert_eq!(
        rows,
        [
            "NAME             SOURCE    DESCRIPT",
            "general-purpose  built-in  General-",
            "explore          built-in  Read-onl",
            "helper           user      The user",
            "reviewer         project   Reviews",
        ],
        "{stdout}"
    );
    assert!(stdout.contains("[read-only]"), "{stdout}");
    assert!(
        stdout.contains(&format!("{cwd_arg}/.claude/agents/reviewer.md")),
        "{stdout}"
    );
    assert_eq!(stderr.matches("warning: ").count(), 1, "{stderr}");
    assert!(stderr.contains("broken.md"), "{stderr}");

    let output = env
        .run_agentctl(&["agents", "list", "--json", "--cwd", &cwd_arg])
        .await;
    assert_eq!(output.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["agents"][3]["name"], "reviewer");
    assert_eq!(json["agents"][1]["readOnly"], true);
    assert_eq!(json["agents"][0]["source"], "builtIn");
    assert_eq!(json["problems"].as_array().unwrap().len(), 1);
}

/// Plants `.agents/agents/<name>.md` asking for permission mode `mode` (in the reference's or
/// our spelling) in the scenario's workspace.
fn plant_mode_agent(s: &Scenario, name: &str, mode: &str) {
    write(
        &s.workspace().join(format!(".agents/agents/{name}.md")),
        &format!("---\ndescription: {name}\npermission_mode: {mode}\n---\nBody.\n"),
    );
}

async fn create_as(
    client: &mut agentd_tests::harness::Client,
    cwd: &Path,
    params: serde_json::Value,
) -> serde_json::Value {
    let mut params = params;
    params["cwd"] = json!(cwd.display().to_string());
    client.request("session/create", params).await.unwrap()
}

#[tokio::test]
async fn an_agents_permission_mode_may_tighten_the_session_never_loosen_it() {
    let s = Scenario::start_with(
        Format::OpenAi,
        "[permissions]\ndefault_mode = \"acceptEdits\"\n",
    )
    .await;
    plant_mode_agent(&s, "planner", "plan");
    plant_mode_agent(&s, "yolo", "neverConfirm");
    let cwd = s.workspace();
    let mut client = s.client().await;
    let created = create_as(&mut client, &cwd, json!({"agentType": "planner"})).await;
    assert_eq!(created["session"]["permissionMode"], "plan");
    // The client's explicit choice wins over the definition's.
    let created = create_as(
        &mut client,
        &cwd,
        json!({"agentType": "planner", "permissionMode": "default"}),
    )
    .await;
    assert_eq!(created["session"]["permissionMode"], "default");
    // Looser than the session would be: not used, and the session's log says why.
    let created = create_as(&mut client, &cwd, json!({"agentType": "yolo"})).await;
    assert_eq!(created["session"]["permissionMode"], "acceptEdits");
    let session = created["sessionId"].as_str().unwrap().to_owned();
    client.subscribe(&session, Some(0)).await;
    let events = client.events_through_seq(2).await;
    let warnings: Vec<&str> = events
        .iter()
        .filter_map(|envelope| match &envelope.event {
            Event::Warning { message } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with(
            "agent `yolo` asks for permission mode bypass, looser than the session's (acceptEdits)"
        ),
        "{warnings:?}"
    );
}

#[tokio::test]
async fn an_agents_model_is_used_when_it_names_a_configured_provider() {
    let s = Scenario::start(Format::OpenAi).await;
    let write_agent = |name: &str, model: &str| {
        write(
            &s.workspace().join(format!(".agents/agents/{name}.md")),
            &format!("---\ndescription: {name}\nmodel: {model}\n---\nBody.\n"),
        );
    };
    write_agent("pinned", "mock:pinned-model");
    write_agent("alias", "sonnet");
    write_agent("inherits", "inherit");
    let cwd = s.workspace();
    let mut client = s.client().await;
    let created = create_as(&mut client, &cwd, json!({"agentType": "pinned"})).await;
    assert_eq!(created["session"]["model"], "pinned-model");
    // The client's model wins.
    let created = create_as(
        &mut client,
        &cwd,
        json!({"agentType": "pinned", "model": "mock:chosen"}),
    )
    .await;
    assert_eq!(created["session"]["model"], "chosen");
    let created = create_as(&mut client, &cwd, json!({"agentType": "inherits"})).await;
    assert_eq!(created["session"]["model"], "mock-model");
    // Claude Code's alias names no provider here: the session keeps the default, and says so.
    let created = create_as(&mut client, &cwd, json!({"agentType": "alias"})).await;
    assert_eq!(created["session"]["model"], "mock-model");
    let session = created["sessionId"].as_str().unwrap().to_owned();
    client.subscribe(&session, Some(0)).await;
    let events = client.events_through_seq(2).await;
    let warning = events.iter().find_map(|envelope| match &envelope.event {
        Event::Warning { message } => Some(message.clone()),
        _ => None,
    });
    assert_eq!(
        warning.as_deref(),
        Some(
            "agent `alias` asks for model `sonnet`, which names no configured provider (`provider` or `provider:model`); the session uses mock-model of mock"
        )
    );
}

#[tokio::test]
async fn explore_keeps_read_only_mcp_tools_and_drops_the_others() {
    let config = agentd_tests::mcp_scenario::everything("");
    let s = Scenario::start_with(Format::OpenAi, &config).await;
    s.mock.push(Reply::text("explored"));
    let mut client = s.client().await;
    let cwd = s.workspace();
    let created = create_as(&mut client, &cwd, json!({"agentType": "explore"})).await;
    let session = created["sessionId"].as_str().unwrap().to_owned();
    client.subscribe(&session, Some(0)).await;
    client.prompt(&session, "look around").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let tools = request_tool_names(Format::OpenAi, &s.mock.requests()[0]);
    assert!(
        tools.contains(&"mcp__everything__echo".to_owned()),
        "a read-only MCP tool stays: {tools:?}"
    );
    assert!(
        !tools.contains(&"mcp__everything__toggle-simulated-logging".to_owned()),
        "a writing MCP tool goes: {tools:?}"
    );
    assert!(!tools.contains(&"run_shell".to_owned()), "{tools:?}");
}

#[tokio::test]
async fn an_agents_max_turns_caps_its_runs_model_calls() {
    let s = Scenario::start(Format::OpenAi).await;
    write(
        &s.workspace().join(".agents/agents/brief.md"),
        "---\ndescription: brief\nmaxTurns: 1\n---\nBe brief.\n",
    );
    s.mock
        .push(Reply::tool_call("c1", "list_dir", json!({"path": "."})));
    s.mock.push(Reply::text("never asked for"));
    let mut client = s.client().await;
    let cwd = s.workspace();
    let created = create_as(&mut client, &cwd, json!({"agentType": "brief"})).await;
    let session = created["sessionId"].as_str().unwrap().to_owned();
    client.subscribe(&session, Some(0)).await;
    client.prompt(&session, "go").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::MaxSteps);
    assert_eq!(s.mock.requests().len(), 1);
}
