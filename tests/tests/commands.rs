//! Slash commands end to end: `commands/list` (built-ins, project and user command files with
//! `dir:name` namespacing, skills, bad files reported), `session/command` (built-ins with no
//! model call, a templated command expanding its arguments into a run's prompt, `allowed-tools`
//! narrowing the run's tools, an unknown name's nearest names), `agentctl run "/help"`, and
//! `agentctl acp` announcing the list and running a slash prompt as a command.

use std::path::{Path, PathBuf};

use agentd_tests::acp_client::{AcpClient, initialize, updates};
use agentd_tests::harness::{Client, decode, text};
use agentd_tests::mcp_scenario::request_tool_names;
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::pty::Pty;
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::commands::{CommandSource, CommandsListResult, SessionCommandResult};
use serde_json::{Value, json};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The workspace, canonical, with command files: a project `fix` (templated), `git:commit` in
/// a subdirectory, `reader` (only `Read`), a broken one, and a user `hello`.
fn plant_commands(s: &Scenario) -> PathBuf {
    let cwd = s.workspace().canonicalize().unwrap();
    write(
        &cwd.join(".agents/commands/fix.md"),
        "---\ndescription: Fix an issue\nargument-hint: <issue> <file>\n---\nFix issue $1 in $2. All: $ARGUMENTS\n",
    );
    write(
        &cwd.join(".claude/commands/git/commit.md"),
        "---\ndescription: Write a commit\n---\nCommit with message: $ARGUMENTS\n",
    );
    write(
        &cwd.join(".claude/commands/reader.md"),
        "---\ndescription: Read only\nallowed-tools: Read\n---\nRead the README\n",
    );
    write(
        &cwd.join(".agents/commands/broken.md"),
        "---\ndescription: never closed\n",
    );
    write(
        &s.daemon.env.path("config").join("agentd/commands/hello.md"),
        "Say hello to $1\n",
    );
    cwd
}

async fn command(
    client: &mut Client,
    session_id: &str,
    name: &str,
    args: &str,
) -> SessionCommandResult {
    decode(
        client
            .request(
                "session/command",
                json!({"sessionId": session_id, "name": name, "args": args}),
            )
            .await
            .unwrap_or_else(|err| panic!("/{name} {args}: {}", err.message)),
    )
}

/// A whole JSON-RPC response (with `error.data`), for an id no other call uses.
async fn raw_response(client: &mut Client, method: &str, params: Value) -> Value {
    let id = json!("raw-1");
    let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    client.send_line(&line.to_string()).await;
    client.response_for(&id).await
}

#[tokio::test]
async fn built_in_commands_answer_with_no_model_request() {
    let s = Scenario::start(Format::OpenAi).await;
    let (mut client, session_id) = s.session().await;
    for name in [
        "help", "status", "memory", "skills", "agents", "tasks", "mcp", "todos", "cost", "model",
        "mode", "hooks", "compact",
    ] {
        let result = command(&mut client, &session_id, name, "").await;
        let output = result.output.unwrap_or_default();
        assert!(!output.trim().is_empty(), "/{name} said nothing");
        assert_eq!(result.run_id, None, "/{name} started a run");
    }
    let help = command(&mut client, &session_id, "/help", "")
        .await
        .output
        .unwrap();
    assert!(help.contains("/compact [focus]"), "{help}");
    let status = command(&mut client, &session_id, "status", "")
        .await
        .output
        .unwrap();
    assert!(
        status.contains(&session_id) && status.contains("idle"),
        "{status}"
    );

    // `/mode` goes through `session/update`.
    let mode = command(&mut client, &session_id, "mode", "plan")
        .await
        .output
        .unwrap();
    assert_eq!(mode, "mode plan from the next run");
    let got = client
        .request("session/get", json!({"sessionId": session_id}))
        .await
        .unwrap();
    assert_eq!(got["session"]["permissionMode"], "plan");

    // `/clear` makes a new session with the same settings.
    let cleared = command(&mut client, &session_id, "clear", "").await;
    let new_id = cleared.session_id.expect("/clear names the new session");
    assert_ne!(new_id, session_id);
    let got = client
        .request("session/get", json!({"sessionId": new_id}))
        .await
        .unwrap();
    assert_eq!(got["session"]["permissionMode"], "plan");

    let err = client
        .request(
            "session/command",
            json!({"sessionId": session_id, "name": "status", "args": "now"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, i64::from(protocol::error::INVALID_PARAMS));
    assert_eq!(s.mock.requests().len(), 0, "a built-in called the model");
}

#[tokio::test]
async fn cost_lists_each_run_and_the_session() {
    let s = Scenario::start(Format::OpenAi).await;
    let (mut client, session_id) = s.session().await;
    s.mock.push(Reply::text("one"));
    let run_id = client.prompt(&session_id, "first").await;
    client.events_until_run_finished().await;
    let cost = command(&mut client, &session_id, "cost", "")
        .await
        .output
        .unwrap();
    let lines: Vec<&str> = cost.lines().collect();
    assert_eq!(lines.len(), 2, "{cost}");
    assert!(
        lines[0].starts_with(&format!("{run_id} completed: ")),
        "{cost}"
    );
    assert!(lines[1].starts_with("session: "), "{cost}");
    assert_eq!(s.mock.requests().len(), 1);
}

both_formats!(a_command_file_expands_its_arguments_into_the_prompt_of_a_run);
async fn a_command_file_expands_its_arguments_into_the_prompt_of_a_run(format: Format) {
    let s = Scenario::start(format).await;
    plant_commands(&s);
    let (mut client, session_id) = s.session().await;
    s.mock.push(Reply::text("fixed"));
    let started = command(&mut client, &session_id, "/fix", "42 src/lib.rs").await;
    assert_eq!(started.output, None);
    let run_id = started.run_id.expect("a command file starts a run");
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), protocol::event::RunStatus::Completed);
    assert!(
        events.iter().any(
            |e| matches!(&e.event, protocol::event::Event::RunStarted { run_id: r, .. } if *r == run_id)
        ),
        "{:?}",
        kinds(&events)
    );
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 1);
    let users = request_user_texts(format, &requests[0]);
    assert_eq!(
        users.last().map(String::as_str),
        Some("Fix issue 42 in src/lib.rs. All: 42 src/lib.rs\n")
    );
    // The run is offered every tool: no `allowed-tools`.
    assert!(request_tool_names(format, &requests[0]).len() > 3);

    // A user command, with `$1`.
    s.mock.push(Reply::text("hi"));
    command(&mut client, &session_id, "hello", "Ada Lovelace").await;
    client.events_until_run_finished().await;
    let users = request_user_texts(format, &s.mock.requests()[1]);
    assert_eq!(users.last().map(String::as_str), Some("Say hello to Ada\n"));
}

#[tokio::test]
async fn allowed_tools_only_narrow_the_tools_of_the_commands_run() {
    let s = Scenario::start(Format::OpenAi).await;
    plant_commands(&s);
    let (mut client, session_id) = s.session().await;
    s.mock.push(Reply::text("read"));
    command(&mut client, &session_id, "reader", "").await;
    client.events_until_run_finished().await;
    s.mock.push(Reply::text("plain"));
    client.prompt(&session_id, "a plain prompt").await;
    client.events_until_run_finished().await;
    let requests = s.mock.requests();
    assert_eq!(
        request_tool_names(Format::OpenAi, &requests[0]),
        ["read_file"]
    );
    assert!(
        request_tool_names(Format::OpenAi, &requests[1]).len() > 1,
        "the next run has its tools back"
    );
}

#[tokio::test]
async fn the_list_namespaces_subdirectories_and_reports_bad_files() {
    let s = Scenario::start(Format::OpenAi).await;
    let cwd = plant_commands(&s);
    write(
        &cwd.join(".claude/skills/pdf/SKILL.md"),
        "---\ndescription: Fill PDF forms\n---\nUse fill.py\n",
    );
    let mut client = s.client().await;
    let listed: CommandsListResult = decode(
        client
            .request("commands/list", json!({"cwd": cwd.display().to_string()}))
            .await
            .unwrap(),
    );
    assert_eq!(listed.commands[0].name, "help");
    assert_eq!(listed.commands[0].source, CommandSource::Builtin);
    let others: Vec<(&str, CommandSource)> = listed
        .commands
        .iter()
        .filter(|c| c.source != CommandSource::Builtin)
        .map(|c| (c.name.as_str(), c.source))
        .collect();
    assert_eq!(
        others,
        [
            ("fix", CommandSource::Project),
            ("git:commit", CommandSource::Project),
            ("hello", CommandSource::User),
            ("pdf", CommandSource::Skill),
            ("reader", CommandSource::Project),
        ]
    );
    let commit = listed
        .commands
        .iter()
        .find(|c| c.name == "git:commit")
        .unwrap();
    assert_eq!(
        commit.path.as_deref(),
        Some(
            cwd.join(".claude/commands/git/commit.md")
                .display()
                .to_string()
                .as_str()
        )
    );
    let fix = listed.commands.iter().find(|c| c.name == "fix").unwrap();
    assert_eq!(fix.argument_hint.as_deref(), Some("<issue> <file>"));
    assert_eq!(listed.problems.len(), 1, "{:?}", listed.problems);
    assert!(listed.problems[0].path.ends_with("broken.md"));
    assert!(listed.problems[0].reason.contains("bad frontmatter"));

    // A namespaced command runs by its `dir:name`, a skill by its name.
    let session_id = create_session(&mut client, &cwd).await;
    client.subscribe(&session_id, Some(0)).await;
    s.mock.push(Reply::text("committed"));
    command(&mut client, &session_id, "git:commit", "tidy up").await;
    client.events_until_run_finished().await;
    s.mock.push(Reply::text("filled"));
    command(&mut client, &session_id, "pdf", "fill form.pdf").await;
    client.events_until_run_finished().await;
    let requests = s.mock.requests();
    let first = request_user_texts(Format::OpenAi, &requests[0]);
    assert_eq!(
        first.last().map(String::as_str),
        Some("Commit with message: tidy up\n")
    );
    let second = request_user_texts(Format::OpenAi, &requests[1]);
    let skill_prompt = second.last().unwrap();
    assert!(
        skill_prompt.contains("Use fill.py")
            && skill_prompt.ends_with("The user's request: fill form.pdf"),
        "{skill_prompt}"
    );
}

#[tokio::test]
async fn an_unknown_command_names_the_nearest_ones() {
    let s = Scenario::start(Format::OpenAi).await;
    plant_commands(&s);
    let (mut client, session_id) = s.session().await;
    let response = raw_response(
        &mut client,
        "session/command",
        json!({"sessionId": session_id, "name": "/fxi", "args": "1"}),
    )
    .await;
    let error = &response["error"];
    assert_eq!(error["code"], protocol::error::INVALID_PARAMS);
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with("unknown command /fxi; did you mean /fix"),
        "{message}"
    );
    assert_eq!(error["data"]["suggest"]["method"], "commands/list");
    assert_eq!(error["data"]["suggest"]["names"][0], "fix");
    assert_eq!(s.mock.requests().len(), 0);
}

#[tokio::test]
async fn agentctl_run_help_prints_the_commands_without_a_model_call() {
    let s = Scenario::start(Format::OpenAi).await;
    plant_commands(&s);
    let out = s.daemon.env.run_agentctl(&["run", "/help"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("/help") && stdout.contains("/git:commit"),
        "{stdout}"
    );
    assert!(stdout.contains("/fix <issue> <file>"), "{stdout}");
    // The file not used and why, in words (no wire method to call).
    assert!(
        stdout.contains("1 command file(s) not used:\n")
            && stdout.contains("broken.md: ")
            && !stdout.contains("commands/list"),
        "{stdout}"
    );
    let out = s.daemon.env.run_agentctl(&["run", "/nosuch"]).await;
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("unknown command /nosuch"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(s.mock.requests().len(), 0);
}

#[tokio::test]
async fn acp_receives_the_command_list_and_runs_a_slash_prompt_as_a_command() {
    let s = Scenario::start(Format::OpenAi).await;
    plant_commands(&s);
    let mut editor = AcpClient::start(&s.daemon.env).await;
    initialize(&mut editor).await;
    let created = editor
        .request(
            "session/new",
            json!({"cwd": s.workspace().display().to_string(), "mcpServers": []}),
        )
        .await
        .unwrap();
    let session = created["sessionId"].as_str().unwrap().to_owned();
    let seen = editor
        .until(|m| {
            m["type"] == "update"
                && m["params"]["update"]["sessionUpdate"] == "available_commands_update"
        })
        .await;
    let update = &updates(&seen).last().unwrap().clone();
    let commands = update["availableCommands"].as_array().unwrap();
    let named = |name: &str| {
        commands
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {update}"))
    };
    assert_eq!(named("help")["description"], "list the commands");
    assert_eq!(named("compact")["input"]["hint"], "[focus]");
    assert_eq!(named("fix")["input"]["hint"], "<issue> <file>");
    named("git:commit");

    // A built-in prompt is answered by the daemon: its text comes as the agent's message.
    let prompt = editor
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "/status"}]}),
        )
        .await;
    let seen = editor
        .until(|m| m["type"] == "response" && m["id"] == prompt)
        .await;
    assert_eq!(seen.last().unwrap()["result"]["stopReason"], "end_turn");
    let said: String = updates(&seen)
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(said.contains(&format!("session {session}")), "{said}");
    assert_eq!(s.mock.requests().len(), 0);

    // A command file's prompt is a run, followed like a prompt.
    s.mock.push(Reply::text("fixed it"));
    let answer = editor
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "/fix 7 a.rs"}]}),
        )
        .await
        .unwrap();
    assert_eq!(answer["stopReason"], "end_turn");
    let users = request_user_texts(Format::OpenAi, &s.mock.requests()[0]);
    assert_eq!(
        users.last().map(String::as_str),
        Some("Fix issue 7 in a.rs. All: 7 a.rs\n")
    );
}

#[tokio::test]
async fn chat_completes_a_command_name_with_tab_and_runs_it_in_its_session() {
    let s = Scenario::start(Format::OpenAi).await;
    plant_commands(&s);
    s.mock.push(Reply::text("Committed."));
    let mut command = s.daemon.env.agentctl();
    command.arg("chat");
    let mut pty = Pty::spawn(command, 100, 30);
    pty.expect("/help for commands").await;
    pty.expect("› ").await;
    // `/gi` has one completion; the rest of the line follows it.
    pty.send("/gi\t");
    pty.expect("/git:commit").await;
    pty.send(" tidy\r");
    pty.expect("Committed.").await;
    let users = request_user_texts(Format::OpenAi, &s.mock.requests()[0]);
    assert_eq!(
        users.last().map(String::as_str),
        Some("Commit with message: tidy\n")
    );
    // A built-in answers in the chat's session, with no model call.
    pty.send("/todos\r");
    pty.expect("no todo list").await;
    pty.send("/nosuch\r");
    pty.expect("unknown command /nosuch").await;
    assert_eq!(s.mock.requests().len(), 1);
    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}

#[tokio::test]
async fn mcp_prompts_of_a_sessions_servers_are_commands() {
    let s = Scenario::start_with(Format::OpenAi, &agentd_tests::mcp_scenario::everything("")).await;
    let (mut client, session_id) = s.session().await;
    // A first run starts the session's server (it waits for it to be ready).
    s.mock.push(Reply::text("ready"));
    client.prompt(&session_id, "hello").await;
    client.events_until_run_finished().await;
    let tools = request_tool_names(Format::OpenAi, &s.mock.requests()[0]);
    assert!(
        tools.iter().any(|t| t.starts_with("mcp__everything__")),
        "{tools:?}"
    );

    let cwd = s.workspace().canonicalize().unwrap();
    let listed: CommandsListResult = decode(
        client
            .request(
                "commands/list",
                json!({"cwd": cwd.display().to_string(), "sessionId": session_id}),
            )
            .await
            .unwrap(),
    );
    let args_prompt = listed
        .commands
        .iter()
        .find(|c| c.name == "mcp__everything__args-prompt")
        .unwrap_or_else(|| {
            panic!(
                "no args-prompt in {:?} ({:?})",
                listed.commands, listed.problems
            )
        });
    assert_eq!(args_prompt.source, CommandSource::Mcp);
    assert_eq!(args_prompt.argument_hint.as_deref(), Some("<city> [state]"));

    s.mock.push(Reply::text("sunny"));
    command(
        &mut client,
        &session_id,
        "mcp__everything__args-prompt",
        "Paris state=Texas",
    )
    .await;
    client.events_until_run_finished().await;
    let users = request_user_texts(Format::OpenAi, &s.mock.requests()[1]);
    assert_eq!(
        users.last().map(String::as_str),
        Some("What's weather in Paris, Texas?")
    );

    // A required argument left out is refused before the server is asked.
    let err = client
        .request(
            "session/command",
            json!({"sessionId": session_id, "name": "mcp__everything__args-prompt"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, i64::from(protocol::error::INVALID_PARAMS));
    assert!(err.message.contains("city is required"), "{}", err.message);
    assert_eq!(s.mock.requests().len(), 2);
}

#[tokio::test]
async fn an_extensions_commands_are_listed_and_run_by_it() {
    let s = Scenario::start(Format::OpenAi).await;
    let registration = json!({
        "name": "greeter",
        "commands": [
            {"name": "greet", "description": "Say hello", "argumentHint": "[name]"},
            {"name": "ask", "description": "Ask the model"},
        ],
    });
    let answer: agentd_tests::extension::Answer = Box::new(|request: &Value| {
        let params = &request["params"];
        match params["command"].as_str() {
            Some("greet") => {
                Some(json!({"output": format!("hello {}", params["args"].as_str().unwrap_or(""))}))
            }
            Some("ask") => Some(json!({"output": "asking", "prompt": "say hi to the user"})),
            _ => Some(json!({})),
        }
    });
    let _extension =
        agentd_tests::extension::FakeExtension::start(s.daemon.socket(), registration, answer)
            .await;
    let (mut client, session_id) = s.session().await;
    let cwd = s.workspace().canonicalize().unwrap();
    let listed: CommandsListResult = decode(
        client
            .request("commands/list", json!({"cwd": cwd.display().to_string()}))
            .await
            .unwrap(),
    );
    let greet = listed
        .commands
        .iter()
        .find(|command| command.name == "greet")
        .expect("the extension's command is listed");
    assert_eq!(greet.source, CommandSource::Extension);
    assert_eq!(greet.argument_hint.as_deref(), Some("[name]"));

    let greeted = command(&mut client, &session_id, "greet", "Ada").await;
    assert_eq!(greeted.output.as_deref(), Some("hello Ada"));
    assert_eq!(greeted.run_id, None);
    assert_eq!(
        s.mock.requests().len(),
        0,
        "an extension's answer called the model"
    );

    // A command whose extension answers with a prompt starts a run of it.
    s.mock.push(Reply::text("hi!"));
    let asked = command(&mut client, &session_id, "ask", "").await;
    assert!(asked.run_id.is_some(), "{asked:?}");
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), protocol::event::RunStatus::Completed);
    let requests = s.mock.requests();
    assert!(
        requests[0].body.contains("say hi to the user"),
        "{}",
        requests[0].body
    );
}

#[tokio::test]
async fn hooks_lists_a_projects_hooks_that_do_not_run_until_trusted() {
    let s = Scenario::start(Format::OpenAi).await;
    let cwd = s.workspace().canonicalize().unwrap();
    write(
        &cwd.join(".claude/settings.json"),
        r#"{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"./check.sh"}]}]}}"#,
    );
    let (mut client, session_id) = s.session().await;
    let hooks = command(&mut client, &session_id, "hooks", "")
        .await
        .output
        .unwrap();
    assert!(hooks.contains("settings.json"), "{hooks}");
    assert!(
        hooks.contains("PreToolUse [Bash]: ./check.sh") && hooks.contains("does not run"),
        "{hooks}"
    );
}
