//! `agentctl acp` driven by the official ACP TypeScript SDK (`tests/acp/client.mjs`) against
//! the real daemon and the mock LLM: initialize, new session (with an editor MCP server),
//! a prompt whose tools show as tool calls with kinds, locations and diffs, a permission
//! answered, cancel, load (history replayed), the editor going away, and one session shared
//! with a raw socket client (either answers an approval, the other sees it resolved).

use agentd_tests::acp_client::{AcpClient, initialize, updates};
use agentd_tests::harness::Client;
use agentd_tests::mcp_servers::{everything_script, node};
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use protocol::event::{Event, RunStatus};
use serde_json::{Value, json};

use crate::approvals::{ASK, named_client, until_approval};

/// `session/new` in the workspace; the session's mode is the config's default (`bypass` in
/// scenarios, `default` with `ASK`).
async fn new_session(client: &mut AcpClient, s: &Scenario, mcp_servers: Value) -> String {
    let answer = client
        .request(
            "session/new",
            json!({"cwd": s.workspace().display().to_string(), "mcpServers": mcp_servers}),
        )
        .await
        .expect("session/new");
    let config_mode = s.daemon.env.path("config/agentd/config.toml");
    let asks = std::fs::read_to_string(config_mode)
        .unwrap()
        .contains("default_mode = \"default\"");
    let expected = if asks { "default" } else { "bypass" };
    assert_eq!(answer["modes"]["currentModeId"], expected, "{answer}");
    let modes: Vec<_> = answer["modes"]["availableModes"]
        .as_array()
        .expect("modes")
        .iter()
        .map(|mode| mode["id"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(modes, ["default", "acceptEdits", "plan", "bypass"]);
    let model = &answer["configOptions"][0];
    assert_eq!(model["id"], "model", "{answer}");
    assert_eq!(model["category"], "model");
    assert_eq!(model["currentValue"], "mock:mock-model");
    answer["sessionId"].as_str().expect("sessionId").to_owned()
}

fn prompt_params(session_id: &str, text: &str) -> Value {
    json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})
}

/// The first update of `kind` about tool call `id`.
fn tool_update<'a>(updates: &'a [Value], kind: &str, id: &str) -> &'a Value {
    updates
        .iter()
        .find(|u| u["sessionUpdate"] == kind && u["toolCallId"] == id)
        .unwrap_or_else(|| panic!("no {kind} for {id} in {updates:#?}"))
}

#[tokio::test]
async fn acp_prompt_shows_tool_calls_and_asks_permission() {
    let s = Scenario::start_with(Format::OpenAi, ASK).await;
    std::fs::write(s.workspace().join("a.txt"), "alpha\n").unwrap();
    s.mock.push(Reply::tool_call(
        "call_read",
        "read_file",
        json!({"path": "a.txt", "offset": 1}),
    ));
    s.mock.push(Reply::tool_call(
        "call_write",
        "write_file",
        json!({"path": "b.txt", "content": "beta\n"}),
    ));
    s.mock.push(Reply::text("all done"));
    let mut editor = AcpClient::start(&s.daemon.env).await;

    let init = initialize(&mut editor).await;
    assert_eq!(init["protocolVersion"], 1);
    let capabilities = &init["agentCapabilities"];
    assert_eq!(capabilities["loadSession"], true, "{init}");
    assert_eq!(capabilities["promptCapabilities"]["embeddedContext"], true);
    for capability in ["list", "resume", "close"] {
        assert!(
            capabilities["sessionCapabilities"][capability].is_object(),
            "{capability} in {init}"
        );
    }
    let session_id = new_session(&mut editor, &s, json!([])).await;
    assert!(session_id.starts_with("ses_"), "{session_id}");

    let prompt = editor
        .send_request("session/prompt", prompt_params(&session_id, "copy it"))
        .await;
    let (seen, key, permission) = editor.until_permission().await;
    let seen = updates(&seen);
    let read = tool_update(&seen, "tool_call", "call_read");
    assert_eq!(read["kind"], "read");
    let a_txt = s.workspace().join("a.txt").display().to_string();
    assert_eq!(read["locations"][0]["path"], a_txt.as_str());
    assert_eq!(read["locations"][0]["line"], 1);
    assert_eq!(
        tool_update(&seen, "tool_call_update", "call_read")["status"],
        "in_progress"
    );
    let write = tool_update(&seen, "tool_call", "call_write");
    assert_eq!(write["kind"], "edit");
    let b_txt = s.workspace().join("b.txt").display().to_string();
    assert_eq!(write["content"][0]["type"], "diff");
    assert_eq!(write["content"][0]["path"], b_txt.as_str());
    assert_eq!(write["content"][0]["newText"], "beta\n");

    assert_eq!(permission["sessionId"], session_id.as_str());
    assert_eq!(permission["toolCall"]["toolCallId"], "call_write");
    assert_eq!(permission["toolCall"]["kind"], "edit");
    let options: Vec<(String, String)> = permission["options"]
        .as_array()
        .expect("options")
        .iter()
        .map(|o| {
            (
                o["optionId"].as_str().unwrap().to_owned(),
                o["kind"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        options.contains(&("allowOnce".to_owned(), "allow_once".to_owned())),
        "{options:?}"
    );
    assert!(
        options.contains(&("allowSession".to_owned(), "allow_always".to_owned())),
        "{options:?}"
    );
    assert!(
        options.contains(&("deny".to_owned(), "reject_once".to_owned())),
        "{options:?}"
    );
    editor.choose(key, "allowOnce").await;

    let rest = editor
        .until(|m| m["type"] == "response" && m["id"] == prompt)
        .await;
    let answer = editor.answer(prompt).await.expect("session/prompt");
    assert_eq!(answer["stopReason"], "end_turn");
    let rest = updates(&rest);
    assert_eq!(
        tool_update(&rest, "tool_call_update", "call_write")["status"],
        "in_progress"
    );
    let text: String = rest
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(text, "all done");
    assert!(
        rest.iter()
            .any(|u| u["toolCallId"] == "call_write" && u["status"] == "completed"),
        "{rest:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(s.workspace().join("b.txt")).unwrap(),
        "beta\n"
    );
}

#[tokio::test]
async fn acp_cancel_ends_the_turn_and_closing_stdin_leaves_runs_alone() {
    let s = Scenario::start(Format::OpenAi).await;
    for _ in 0..3 {
        s.mock.push(Reply::stall());
    }
    let mut editor = AcpClient::start(&s.daemon.env).await;
    initialize(&mut editor).await;
    let session_id = new_session(&mut editor, &s, json!([])).await;

    let prompt = editor
        .send_request("session/prompt", prompt_params(&session_id, "wait"))
        .await;
    s.mock.wait_for_requests(1).await;
    editor
        .notify("session/cancel", json!({"sessionId": session_id}))
        .await;
    let answer = editor.answer(prompt).await.expect("session/prompt");
    assert_eq!(answer["stopReason"], "cancelled");

    // `$/cancel_request` for the turn cancels its run too.
    let prompt = editor
        .send_request("session/prompt", prompt_params(&session_id, "wait"))
        .await;
    s.mock.wait_for_requests(2).await;
    editor.abort(prompt).await;
    let answer = editor.answer(prompt).await.expect("session/prompt");
    assert_eq!(answer["stopReason"], "cancelled");

    // A third turn is left running when the editor goes away.
    editor
        .send_request("session/prompt", prompt_params(&session_id, "wait again"))
        .await;
    s.mock.wait_for_requests(3).await;
    let exit = editor.close().await;
    assert_eq!(exit["code"], 0, "{exit}");
    let mut raw = s.client().await;
    let got = raw
        .request("session/get", json!({"sessionId": session_id}))
        .await
        .expect("session/get");
    assert_eq!(got["session"]["status"], "running", "{got}");
    raw.cancel(&session_id).await;
}

#[tokio::test]
async fn acp_load_replays_the_history_before_answering() {
    let s = Scenario::start(Format::OpenAi).await;
    s.mock.push(Reply::text("general kenobi"));
    let mut editor = AcpClient::start(&s.daemon.env).await;
    initialize(&mut editor).await;
    let session_id = new_session(&mut editor, &s, json!([])).await;
    let answer = editor
        .request("session/prompt", prompt_params(&session_id, "hello there"))
        .await
        .expect("session/prompt");
    assert_eq!(answer["stopReason"], "end_turn");
    assert_eq!(editor.close().await["code"], 0);

    let mut editor = AcpClient::start(&s.daemon.env).await;
    initialize(&mut editor).await;
    let refused = editor
        .request("session/prompt", prompt_params(&session_id, "again"))
        .await
        .expect_err("a session must be opened before prompting");
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("open it with session/new, session/load or session/resume")),
        "{refused}"
    );
    let listed = editor
        .request(
            "session/list",
            json!({"cwd": s.workspace().display().to_string()}),
        )
        .await
        .expect("session/list");
    assert_eq!(listed["sessions"][0]["sessionId"], session_id.as_str());
    let load = editor
        .send_request(
            "session/load",
            json!({
                "sessionId": session_id,
                "cwd": s.workspace().display().to_string(),
                "mcpServers": [],
            }),
        )
        .await;
    let replayed_raw = editor
        .until(|m| m["type"] == "response" && m["id"] == load)
        .await;
    let answer = editor.answer(load).await.expect("session/load");
    assert_eq!(answer["modes"]["currentModeId"], "bypass");
    let replayed: Vec<(String, String)> = updates(&replayed_raw)
        .iter()
        .map(|u| {
            (
                u["sessionUpdate"].as_str().unwrap_or_default().to_owned(),
                u["content"]["text"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        replayed,
        [
            ("user_message_chunk".to_owned(), "hello there".to_owned()),
            (
                "agent_message_chunk".to_owned(),
                "general kenobi".to_owned()
            ),
            // How full the context was after the last model call.
            ("usage_update".to_owned(), String::new()),
        ]
    );
    let usage = updates_of_kind(&replayed_raw, "usage_update");
    assert!(
        usage[0]["size"].as_u64().is_some_and(|size| size > 0),
        "{usage:?}"
    );
    assert_eq!(
        usage[0]["used"],
        json!(15),
        "the mock's 10 in + 5 out: {usage:?}"
    );
}

/// The `session/update`s of one kind among `messages`.
fn updates_of_kind(messages: &[Value], kind: &str) -> Vec<Value> {
    updates(messages)
        .into_iter()
        .filter(|update| update["sessionUpdate"] == kind)
        .collect()
}

#[tokio::test]
async fn acp_new_session_attaches_the_editors_mcp_servers() {
    let s = Scenario::start(Format::OpenAi).await;
    let mut editor = AcpClient::start(&s.daemon.env).await;
    initialize(&mut editor).await;
    let servers = json!([{
        "name": "everything",
        "command": node(),
        "args": [everything_script(), "stdio"],
        "env": [],
    }]);
    let session_id = new_session(&mut editor, &s, servers).await;
    let mut raw = s.client().await;
    let got = raw
        .request("session/get", json!({"sessionId": session_id}))
        .await
        .expect("session/get");
    assert_eq!(got["mcpServers"], json!(["everything"]), "{got}");
}

/// Two approvals of one run: the raw socket client answers the first (the editor's request
/// is withdrawn), the editor answers the second (the raw client sees who decided).
#[tokio::test]
async fn acp_and_a_socket_client_share_one_sessions_approvals() {
    let s = Scenario::start_with(Format::OpenAi, ASK).await;
    s.mock.push(Reply::tool_call(
        "call_one",
        "run_shell",
        json!({"command": "echo one"}),
    ));
    s.mock.push(Reply::tool_call(
        "call_two",
        "run_shell",
        json!({"command": "echo two"}),
    ));
    s.mock.push(Reply::text("both ran"));
    let mut editor = AcpClient::start(&s.daemon.env).await;
    initialize(&mut editor).await;
    let session_id = new_session(&mut editor, &s, json!([])).await;
    let mut raw: Client = named_client(&s, "terminal").await;
    raw.subscribe(&session_id, Some(0)).await;

    let prompt = editor
        .send_request("session/prompt", prompt_params(&session_id, "run both"))
        .await;
    let (_, first) = until_approval(&mut raw).await;
    assert_eq!(first.tool_call_id, "call_one");
    let (_, key, permission) = editor.until_permission().await;
    assert_eq!(permission["toolCall"]["toolCallId"], "call_one");
    assert_eq!(permission["toolCall"]["kind"], "execute");
    crate::approvals::respond(&mut raw, &first.approval_id, "allowOnce", None)
        .await
        .expect("the raw client answers first");
    let withdrawn = editor
        .until(|m| m["type"] == "permissionAborted" || m["type"] == "permission")
        .await;
    assert_eq!(
        withdrawn.last().unwrap(),
        &json!({"type": "permissionAborted", "key": key})
    );

    let (_, key, permission) = editor.until_permission().await;
    assert_eq!(permission["toolCall"]["toolCallId"], "call_two");
    editor.choose(key, "allowOnce").await;
    let events = raw
        .persisted_events_until(|event| matches!(event, Event::RunFinished { .. }))
        .await;
    let decided: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ApprovalResolved {
                tool_call_id,
                decided_by,
                ..
            } => Some((tool_call_id.clone(), decided_by.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        decided,
        [
            ("call_one".to_owned(), "client:terminal".to_owned()),
            (
                "call_two".to_owned(),
                "client:acp:acp-test-client".to_owned()
            ),
        ]
    );
    assert_eq!(run_status(&events), RunStatus::Completed);
    let answer = editor.answer(prompt).await.expect("session/prompt");
    assert_eq!(answer["stopReason"], "end_turn");
}

/// A background task's end reaches the editor after the prompt turn that started it ended:
/// the task's own tool call completes with its output.
#[tokio::test]
async fn acp_background_task_events_flow_outside_the_prompt_turn() {
    let s = Scenario::start(Format::OpenAi).await;
    let gate = s.workspace().join("gate");
    mkfifo(&gate);
    s.mock.push(Reply::tool_call(
        "call_bg",
        "run_shell",
        json!({"command": "read line < gate; echo \"got $line\"", "runInBackground": true}),
    ));
    s.mock.push(Reply::text("started it"));
    let mut editor = AcpClient::start(&s.daemon.env).await;
    initialize(&mut editor).await;
    let session_id = new_session(&mut editor, &s, json!([])).await;
    let prompt = editor
        .send_request("session/prompt", prompt_params(&session_id, "start it"))
        .await;
    let in_turn = editor
        .until(|m| m["type"] == "response" && m["id"] == prompt)
        .await;
    let answer = editor.answer(prompt).await.expect("session/prompt");
    assert_eq!(answer["stopReason"], "end_turn");
    let in_turn = updates(&in_turn);
    let task = in_turn
        .iter()
        .find(|u| {
            u["sessionUpdate"] == "tool_call"
                && u["toolCallId"]
                    .as_str()
                    .is_some_and(|id| id.starts_with("task_"))
        })
        .unwrap_or_else(|| panic!("no task tool call in {in_turn:#?}"))
        .clone();
    assert_eq!(task["kind"], "execute");

    write_fifo(&gate, "go\n").await;
    let after = updates(
        &editor
            .until(|m| {
                m["params"]["update"]["toolCallId"] == task["toolCallId"]
                    && m["params"]["update"]["status"] == "completed"
            })
            .await,
    );
    let finished = after.last().unwrap();
    assert_eq!(finished["sessionUpdate"], "tool_call_update");
    assert!(
        finished["content"][0]["content"]["text"]
            .as_str()
            .is_some_and(|text| text.contains("exited with code 0")),
        "{finished:#}"
    );
}

/// What the editor may choose and how a wrong choice is answered (the choices themselves go to
/// `session/update`).
#[tokio::test]
async fn acp_unknown_modes_and_options_are_refused_with_the_choices() {
    let s = Scenario::start(Format::OpenAi).await;
    let mut editor = AcpClient::start(&s.daemon.env).await;
    initialize(&mut editor).await;
    let session_id = new_session(&mut editor, &s, json!([])).await;
    let refused = editor
        .request(
            "session/set_mode",
            json!({"sessionId": session_id, "modeId": "yolo"}),
        )
        .await
        .expect_err("an unknown mode");
    assert_eq!(
        refused["message"],
        "unknown mode yolo; the modes are default, acceptEdits, plan and bypass"
    );
    let refused = editor
        .request(
            "session/set_config_option",
            json!({"sessionId": session_id, "configId": "temperature", "value": "hot"}),
        )
        .await
        .expect_err("an unknown option");
    assert_eq!(
        refused["message"],
        "unknown config option temperature; agentd offers `model`"
    );
    // A known mode and a configured model change the daemon's session for its next run.
    editor
        .request(
            "session/set_mode",
            json!({"sessionId": session_id, "modeId": "plan"}),
        )
        .await
        .expect("session/set_mode plan");
    editor
        .request(
            "session/set_config_option",
            json!({"sessionId": session_id, "configId": "model", "value": "mock:other-model"}),
        )
        .await
        .expect("the model option");
    let mut raw = s.client().await;
    let got = raw
        .request("session/get", json!({"sessionId": session_id}))
        .await
        .unwrap();
    assert_eq!(got["session"]["permissionMode"], json!("plan"), "{got}");
    assert_eq!(got["session"]["model"], json!("other-model"), "{got}");
}

/// `session/resume` follows a session from now (no replay), a todo list shows as a plan, the
/// step limit ends the turn with `max_turn_requests`, and `session/close` stops following.
#[tokio::test]
async fn acp_resume_plan_step_limit_and_close() {
    let s = Scenario::start_with(Format::OpenAi, "max_steps = 1").await;
    s.mock.push(Reply::text("first answer"));
    s.mock.push(Reply::tool_call(
        "call_todo",
        "todo_write",
        json!({"items": [
            {"content": "read the code", "status": "completed"},
            {"content": "fix the bug", "status": "in_progress"},
        ]}),
    ));
    let mut raw = s.client().await;
    let session_id = create_session(&mut raw, &s.workspace()).await;
    raw.subscribe(&session_id, Some(0)).await;
    raw.prompt(&session_id, "before the editor").await;
    raw.events_until_run_finished().await;

    let mut editor = AcpClient::start(&s.daemon.env).await;
    initialize(&mut editor).await;
    let resume = editor
        .send_request(
            "session/resume",
            json!({"sessionId": session_id, "cwd": s.workspace().display().to_string(), "mcpServers": []}),
        )
        .await;
    let before = editor
        .until(|m| m["type"] == "response" && m["id"] == resume)
        .await;
    editor.answer(resume).await.expect("session/resume");
    assert!(updates(&before).is_empty(), "no replay: {before:#?}");

    let prompt = editor
        .send_request("session/prompt", prompt_params(&session_id, "plan it"))
        .await;
    let turn = editor
        .until(|m| m["type"] == "response" && m["id"] == prompt)
        .await;
    let answer = editor.answer(prompt).await.expect("session/prompt");
    assert_eq!(answer["stopReason"], "max_turn_requests");
    let turn = updates(&turn);
    let plan = turn
        .iter()
        .find(|u| u["sessionUpdate"] == "plan")
        .unwrap_or_else(|| panic!("no plan in {turn:#?}"));
    let entries: Vec<(&str, &str)> = plan["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["content"].as_str().unwrap(),
                e["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        [
            ("read the code", "completed"),
            ("fix the bug", "in_progress")
        ]
    );
    assert_eq!(
        tool_update(&turn, "tool_call", "call_todo")["kind"],
        "think"
    );

    editor
        .request("session/close", json!({"sessionId": session_id}))
        .await
        .expect("session/close");
    let refused = editor
        .request("session/prompt", prompt_params(&session_id, "again"))
        .await
        .expect_err("a closed session is not followed");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("not open in this bridge"),
        "{refused}"
    );
}

/// An editor configured with `agentctl acp` needs no daemon running: the bridge starts it, as
/// every agentctl command does, and the daemon outlives the bridge.
#[tokio::test]
async fn acp_starts_the_daemon_when_none_runs() {
    let mock = agentd_tests::mock_llm::MockLlm::start().await;
    let env = agentd_tests::harness::TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    let mut editor = AcpClient::start(&env).await;
    initialize(&mut editor).await;
    let answer = editor
        .request(
            "session/new",
            json!({"cwd": env.workspace().display().to_string(), "mcpServers": []}),
        )
        .await
        .expect("session/new starts the daemon");
    assert!(answer["sessionId"].as_str().unwrap().starts_with("ses_"));
    assert_eq!(editor.close().await["code"], 0);
    // `daemon status` never starts one: it answers only while the bridge's daemon runs.
    let status = env.run_agentctl(&["daemon", "status"]).await;
    assert!(
        status.status.success(),
        "the daemon the bridge started should still run: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    let stopped = env.run_agentctl(&["daemon", "stop"]).await;
    assert!(stopped.status.success());
}

/// An approval still pending when the editor loads the session is asked once the history is
/// replayed; one decided before is not. A rejection reaches the model and the run goes on.
#[tokio::test]
async fn acp_load_asks_the_approvals_still_pending_and_a_rejection_goes_to_the_model() {
    let s = Scenario::start_with(Format::OpenAi, ASK).await;
    s.mock.push(Reply::tool_call(
        "call_early",
        "run_shell",
        json!({"command": "echo early"}),
    ));
    s.mock.push(Reply::tool_call(
        "call_late",
        "run_shell",
        json!({"command": "echo late"}),
    ));
    s.mock.push(Reply::text("fine, skipped it"));
    let mut raw: Client = named_client(&s, "terminal").await;
    let session_id = create_session(&mut raw, &s.workspace()).await;
    raw.subscribe(&session_id, Some(0)).await;
    raw.prompt(&session_id, "run them").await;
    let (_, early) = until_approval(&mut raw).await;
    crate::approvals::respond(&mut raw, &early.approval_id, "allowOnce", None)
        .await
        .unwrap();
    let (_, late) = until_approval(&mut raw).await;
    assert_eq!(late.tool_call_id, "call_late");

    let mut editor = AcpClient::start(&s.daemon.env).await;
    initialize(&mut editor).await;
    let load = editor
        .send_request(
            "session/load",
            json!({"sessionId": session_id, "cwd": s.workspace().display().to_string(), "mcpServers": []}),
        )
        .await;
    let (seen, key, permission) = editor.until_permission().await;
    assert!(
        seen.iter()
            .any(|m| m["type"] == "response" && m["id"] == load),
        "the load is answered before the pending approval is asked: {seen:#?}"
    );
    assert_eq!(permission["toolCall"]["toolCallId"], "call_late");
    editor.choose(key, "deny").await;

    let events = raw
        .persisted_events_until(|event| matches!(event, Event::RunFinished { .. }))
        .await;
    let decided: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ApprovalResolved {
                tool_call_id,
                decided_by,
                ..
            } => Some((tool_call_id.clone(), decided_by.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        decided,
        [(
            "call_late".to_owned(),
            "client:acp:acp-test-client".to_owned()
        )]
    );
    assert_eq!(run_status(&events), RunStatus::Completed);
    let failed = editor
        .until(|m| {
            m["params"]["update"]["toolCallId"] == "call_late"
                && m["params"]["update"]["status"] == "failed"
        })
        .await;
    assert!(!failed.is_empty());
}

/// A line that is not UTF-8 and one over the line limit are each answered `-32700` (id
/// null), and `agentctl acp` goes on: the request after them is answered. It used to exit.
#[tokio::test]
async fn acp_answers_a_non_utf8_or_over_long_line_with_a_parse_error_and_goes_on() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let daemon = agentd_tests::harness::Daemon::start().await;
    let mut child = daemon
        .env
        .agentctl()
        .arg("acp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start agentctl acp");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let writer = tokio::spawn(async move {
        stdin.write_all(b"\xff\xfe{\"jsonrpc\"}\n").await.unwrap();
        let mut long = vec![b'x'; agentctl::transport::MAX_LINE_BYTES + 10];
        long.push(b'\n');
        stdin.write_all(&long).await.unwrap();
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}});
        stdin
            .write_all(format!("{initialize}\n").as_bytes())
            .await
            .unwrap();
        stdin
    });
    let mut next = async || -> Value {
        let line = tokio::time::timeout(agentd_tests::harness::WAIT, lines.next_line())
            .await
            .expect("a line from agentctl acp in time")
            .expect("read agentctl acp")
            .expect("agentctl acp ended its output");
        serde_json::from_str(&line).expect("JSON")
    };
    for expected in ["not UTF-8", "longer than"] {
        let answer = next().await;
        assert_eq!(
            answer["error"]["code"],
            protocol::error::PARSE_ERROR,
            "{answer}"
        );
        assert!(answer["id"].is_null(), "{answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(expected), "{answer}");
    }
    let answer = next().await;
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}");
    let stdin = writer.await.expect("writer");
    drop(stdin);
    let status = tokio::time::timeout(agentd_tests::harness::WAIT, child.wait())
        .await
        .expect("agentctl acp ends once stdin closes")
        .expect("wait");
    assert!(status.success(), "{status}");
}
