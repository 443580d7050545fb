//! Subagent definitions written for other tools, end to end: the design notes' snake_case
//! (`permission_mode: always_confirm`) and Claude Code's keys, `mcpServers` giving the child
//! those servers instead of its parent's (named from the user's config, or inline in a project
//! definition only once trust pins it), keys agentd does not use as warnings, the `task` tool's
//! `subagent_type`, and the parent's environment block and project notes in the child's prompt.

use std::path::Path;

use agentd_tests::mcp_scenario::{request_tool_names, server_toml};
use agentd_tests::mcp_servers::{everything_stdio, time_stdio};
use agentd_tests::mock_llm::{Format, RecordedRequest, Reply};
use agentd_tests::scenario::*;
use protocol::agents::AgentsListResult;
use protocol::event::{Event, RunStatus};
use serde_json::{Value, json};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The design notes' spelling, with Claude Code's `mcpServers` and a key agentd does not use.
const CHECKER: &str = "---\nname: checker\ndescription: Tells the time\npermission_mode: always_confirm\nmcpServers:\n  - time\ncolor: blue\n---\nYou tell the time.\n";

const NOTES: &str = "PROJECT-NOTE: run the tests with make check.";

/// The user's servers `everything` and `time`, started within the first request's wait; the
/// parent runs in acceptEdits, so a child in `always_confirm` runs tighter.
fn config() -> String {
    format!(
        "[permissions]\ndefault_mode = \"acceptEdits\"\n[mcp]\nstartup_grace_secs = 60\n{}{}",
        server_toml("everything", &everything_stdio(), ""),
        server_toml("time", &time_stdio(), "")
    )
}

fn system_prompt(request: &RecordedRequest) -> String {
    request.json["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn task_output(events: &[Envelope]) -> (String, bool) {
    events
        .iter()
        .find_map(|envelope| match &envelope.event {
            Event::ToolCompleted {
                tool,
                output,
                is_error,
                ..
            } if tool == "task" => Some((output.clone(), *is_error)),
            _ => None,
        })
        .expect("a task tool result")
}

/// The child session of the task that finished in `events`: its header and its warnings.
fn child_of(s: &Scenario, events: &[Envelope]) -> (Value, Vec<String>) {
    let child_id = events
        .iter()
        .find_map(|envelope| match &envelope.event {
            Event::TaskFinished { task } => task.child_session_id.clone(),
            _ => None,
        })
        .expect("a finished task with its child session");
    let file = std::fs::read_to_string(
        s.daemon
            .env
            .path("state")
            .join("agentd/sessions")
            .join(format!("{child_id}.jsonl")),
    )
    .unwrap();
    let mut lines = file.lines();
    let header: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let warnings = lines
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|entry| {
            let event = entry.get("event").unwrap_or(&entry);
            (event["type"] == "warning").then(|| event["message"].as_str().map(str::to_owned))?
        })
        .collect();
    (header, warnings)
}

#[tokio::test]
async fn a_definition_in_the_notes_spelling_runs_with_its_own_servers_notes_and_environment() {
    let s = Scenario::start_with(Format::OpenAi, &config()).await;
    let cwd = s.workspace().canonicalize().unwrap();
    write(&cwd.join(".claude/agents/checker.md"), CHECKER);
    write(&cwd.join("AGENTS.md"), NOTES);
    // Claude Code's spelling of the agent field.
    s.mock.push(Reply::tool_call(
        "call_t",
        "task",
        json!({"prompt": "what time is it?", "subagent_type": "checker"}),
    ));
    s.mock.push(Reply::text("It is noon."));
    s.mock.push(Reply::text("The checker says noon."));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "ask the checker").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(task_output(&events), ("It is noon.".to_owned(), false));

    let requests = s.mock.requests();
    assert_eq!(requests.len(), 3, "parent, child, parent");
    let parent_tools = request_tool_names(Format::OpenAi, &requests[0]);
    assert!(
        parent_tools
            .iter()
            .any(|tool| tool == "mcp__everything__echo")
            && parent_tools
                .iter()
                .any(|tool| tool.starts_with("mcp__time__")),
        "the parent has both servers: {parent_tools:?}"
    );
    let child_tools = request_tool_names(Format::OpenAi, &requests[1]);
    assert!(
        child_tools
            .iter()
            .any(|tool| tool.starts_with("mcp__time__")),
        "the child has the server its definition names: {child_tools:?}"
    );
    assert!(
        !child_tools
            .iter()
            .any(|tool| tool.starts_with("mcp__everything__")),
        "and not the parent's others: {child_tools:?}"
    );

    // The child's prompt: its body, then the environment block and the notes its parent has.
    let parent_system = system_prompt(&requests[0]);
    let child_system = system_prompt(&requests[1]);
    assert!(
        child_system.starts_with("You tell the time.\n\n<environment>\n"),
        "{child_system}"
    );
    let environment = |system: &str| {
        let start = system.find("<environment>").expect(system);
        let end = system.find("</environment>").expect(system);
        system[start..end].to_owned()
    };
    assert_eq!(environment(&child_system), environment(&parent_system));
    assert!(
        environment(&child_system).contains(&format!("workspace: {}\n", cwd.display())),
        "{child_system}"
    );
    let notes = format!(
        "<project_notes source=\"{}\">\n{NOTES}\n</project_notes>",
        cwd.join("AGENTS.md").display()
    );
    assert!(child_system.contains(&notes), "{child_system}");
    assert!(parent_system.contains(&notes), "{parent_system}");
    assert!(
        !child_system.contains("<available_agents>"),
        "{child_system}"
    );

    // `always_confirm` is the default mode, tighter than the parent's acceptEdits; `color`
    // is a warning naming it, in the child's log and in agents/list.
    let (header, warnings) = child_of(&s, &events);
    assert_eq!(header["permissionMode"], json!("default"), "{header}");
    assert!(
        warnings
            .iter()
            .any(|warning| warning.contains("checker.md") && warning.contains("`color`")),
        "{warnings:?}"
    );
    let listed: AgentsListResult = agentd_tests::harness::decode(
        client
            .request("agents/list", json!({"cwd": cwd.display().to_string()}))
            .await
            .unwrap(),
    );
    let checker = listed
        .agents
        .iter()
        .find(|agent| agent.name == "checker")
        .expect("the definition is in the catalogue");
    assert_eq!(checker.warnings.len(), 1, "{:?}", checker.warnings);
    assert!(
        checker.warnings[0].contains("`color` is not used"),
        "{:?}",
        checker.warnings
    );
    assert!(listed.problems.is_empty(), "{:?}", listed.problems);
}

#[tokio::test]
async fn a_project_definitions_inline_server_starts_only_once_trust_pins_it() {
    let s = Scenario::start_with(Format::OpenAi, "[mcp]\nstartup_grace_secs = 60\n").await;
    let cwd = s.workspace().canonicalize().unwrap();
    // Claude Code's shape: the server as nested YAML under its name.
    let time = time_stdio();
    let args = serde_json::to_string(&time.args).unwrap();
    let command = serde_json::to_string(&time.command).unwrap();
    write(
        &cwd.join(".agents/agents/clock.md"),
        &format!(
            "---\nname: clock\ndescription: Has a clock\nmcpServers:\n  - clock:\n      type: stdio\n      command: {command}\n      args: {args}\n---\nYou read the clock.\n"
        ),
    );
    let delegate = |call: &str| {
        s.mock.push(Reply::tool_call(
            call,
            "task",
            json!({"prompt": "read the clock", "agent_type": "clock"}),
        ));
        s.mock.push(Reply::text("read it"));
        s.mock.push(Reply::text("done"));
    };
    delegate("call_1");
    let (mut client, session) = s.session().await;
    client.prompt(&session, "delegate").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(task_output(&events), ("read it".to_owned(), false));
    let child_tools = request_tool_names(Format::OpenAi, &s.mock.requests()[1]);
    assert!(
        !child_tools
            .iter()
            .any(|tool| tool.starts_with("mcp__clock__")),
        "an untrusted project's inline server does not start: {child_tools:?}"
    );
    let (_, warnings) = child_of(&s, &events);
    assert!(
        warnings.iter().any(|warning| warning
            .contains("agent `clock` defines (clock) do not start")
            && warning.contains("agentctl trust")),
        "{warnings:?}"
    );

    client
        .request("project/trust", json!({"path": cwd.display().to_string()}))
        .await
        .unwrap();
    delegate("call_2");
    client.prompt(&session, "delegate, trusted").await;
    client.events_until_run_finished().await;
    let child_tools = request_tool_names(Format::OpenAi, &s.mock.requests()[4]);
    assert!(
        child_tools
            .iter()
            .any(|tool| tool.starts_with("mcp__clock__")),
        "once trusted, the child has its definition's server: {child_tools:?}"
    );
}

/// Claude Code's hooks as nested YAML under `hooks:`: active while the subagent runs.
const GUARDED: &str = "---\nname: guarded\ndescription: Writes files, guarded\ntools: write_file\nhooks:\n  PreToolUse:\n    - matcher: write_file\n      hooks:\n        - type: command\n          command: cat > /dev/null; echo the guard says no >&2; exit 2\n---\nYou write files.\n";

#[tokio::test]
async fn hooks_written_as_nested_yaml_apply_while_the_subagent_runs() {
    let s = Scenario::start(Format::OpenAi).await;
    write(
        &s.daemon.env.path("config").join("agentd/agents/guarded.md"),
        GUARDED,
    );
    s.mock.push(Reply::tool_call(
        "call_t",
        "task",
        json!({"prompt": "write it", "subagent_type": "guarded"}),
    ));
    s.mock.push(Reply::tool_call(
        "call_w",
        "write_file",
        json!({"path": "guarded.txt", "content": "x"}),
    ));
    s.mock.push(Reply::text("the child is done"));
    s.mock.push(Reply::text("the parent is done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "delegate").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert!(
        !s.workspace().join("guarded.txt").exists(),
        "the definition's hook blocked the write"
    );
    let requests = s.mock.requests();
    assert!(
        requests[2].body.contains("the guard says no"),
        "the child's next request reads why: {}",
        requests[2].body
    );
}
