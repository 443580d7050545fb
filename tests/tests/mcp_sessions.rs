//! Sessions using MCP tools end to end, with real servers (npm server-everything, PyPI
//! mcp-server-time): a scripted model calls `mcp__<server>__<tool>` through `agentctl run`;
//! names and schemas pass through to the provider; images reach it in both formats; progress
//! becomes `toolProgress`; a crash mid-call is an error result and the restarted server serves
//! the next run; a server that never starts costs a warning, not the session; tool timeouts;
//! the recorded `toolsChanged`; one server process for two sessions; permissions by
//! `readOnlyHint` and rules.

use std::path::Path;
use std::time::{Duration, Instant};

use agentd_tests::harness::{TestEnv, WAIT, text};
use agentd_tests::mcp_servers::{ServerCommand, everything_stdio, time_stdio};
use agentd_tests::mock_llm::{Format, MockLlm, RecordedRequest, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::event::{Event, RunStatus};
use serde_json::{Value, json};

/// `[mcp_servers.<name>]` running `server`, with `extra` lines in the table.
fn server_toml(name: &str, server: &ServerCommand, extra: &str) -> String {
    let quote = |text: &str| Value::String(text.to_owned()).to_string();
    let args: Vec<String> = server.args.iter().map(|arg| quote(arg)).collect();
    let env: Vec<String> = server
        .env
        .iter()
        .map(|(key, value)| format!("{key} = {}", quote(value)))
        .collect();
    format!(
        "[mcp_servers.{name}]\ncommand = {}\nargs = [{}]\nenv = {{ {} }}\n{extra}\n",
        quote(&server.command),
        args.join(", "),
        env.join(", ")
    )
}

fn everything(extra: &str) -> String {
    server_toml("everything", &everything_stdio(), extra)
}

/// The tool names of a recorded request, in its order, in either format.
fn request_tool_names(format: Format, request: &RecordedRequest) -> Vec<String> {
    request.json["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|tool| {
            let name = match format {
                Format::OpenAi => &tool["function"]["name"],
                Format::Anthropic => &tool["name"],
            };
            name.as_str().unwrap_or_default().to_owned()
        })
        .collect()
}

/// The tool `name` of a recorded request (OpenAI format): `(description, parameters)`.
fn openai_tool(request: &RecordedRequest, name: &str) -> (String, Value) {
    let tool = request.json["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|tool| tool["function"]["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name} in {}", request.json["tools"]));
    (
        tool["function"]["description"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        tool["function"]["parameters"].clone(),
    )
}

/// Warnings among `events`.
fn warnings(events: &[Envelope]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Warning { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// The pids of live processes descending from `ancestor` whose command line contains
/// `marker`.
fn descendants_running(ancestor: u32, marker: &str) -> Vec<u32> {
    let parent_of = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The fields after the command name (which may hold spaces) start after the last ')'.
        let rest = &stat[stat.rfind(')')? + 2..];
        let mut fields = rest.split(' ');
        let state = fields.next()?;
        if state == "Z" {
            return None;
        }
        fields.next()?.parse().ok()
    };
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains(marker) {
            continue;
        }
        let mut current = pid;
        let mut hops = 0;
        while let Some(parent) = parent_of(current) {
            if parent == ancestor {
                found.push(pid);
                break;
            }
            if parent <= 1 || hops > 64 {
                break;
            }
            current = parent;
            hops += 1;
        }
    }
    found
}

/// Waits (polling the outside world, bounded by [`WAIT`]) until exactly one process of
/// `ancestor` runs `marker`; returns its pid.
async fn the_one_server(ancestor: u32, marker: &str) -> u32 {
    let deadline = Instant::now() + WAIT;
    loop {
        let pids = descendants_running(ancestor, marker);
        if pids.len() == 1 {
            return pids[0];
        }
        assert!(
            Instant::now() < deadline,
            "expected one {marker} process of {ancestor}, found {pids:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits (polling the outside world, bounded by [`WAIT`]) until exactly one process of
/// `ancestor` runs `marker` and it is not `old`; returns its pid.
async fn the_one_server_but(ancestor: u32, marker: &str, old: u32) -> u32 {
    let deadline = Instant::now() + WAIT;
    loop {
        let pids = descendants_running(ancestor, marker);
        if pids.len() == 1 && pids[0] != old {
            return pids[0];
        }
        assert!(
            Instant::now() < deadline,
            "expected one new {marker} process of {ancestor}, found {pids:?} (old {old})"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

const EVERYTHING_MARKER: &str = "server-everything";

#[tokio::test]
async fn agentctl_run_calls_mcp_tools_with_their_names_and_schemas() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_calls(vec![
        (
            "c1",
            "mcp__everything__echo",
            json!({"message": "hello"}).to_string(),
        ),
        (
            "c2",
            "mcp__everything__get-sum",
            json!({"a": 2, "b": 3}).to_string(),
        ),
        (
            "c3",
            "mcp__time__get_current_time",
            json!({"timezone": "UTC"}).to_string(),
        ),
    ]));
    mock.push(Reply::text("Echoed, summed and timed."));
    let servers = format!(
        "{}{}",
        everything(""),
        server_toml("time", &time_stdio(), "")
    );
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, &servers));
    let output = env.run_agentctl(&["run", "use the MCP tools"]).await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "stderr:\n{stderr}");
    assert!(stdout.contains("Echoed, summed and timed."), "{stdout}");

    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "{stderr}");
    // Names and schemas pass through, sorted with the built-ins.
    let names = request_tool_names(Format::OpenAi, &requests[0]);
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    for name in [
        "mcp__everything__echo",
        "mcp__everything__get-sum",
        "mcp__everything__trigger-long-running-operation",
        "mcp__time__get_current_time",
        "mcp__time__convert_time",
        "read_file",
    ] {
        assert!(names.contains(&name.to_owned()), "{name} not in {names:?}");
    }
    let (description, parameters) = openai_tool(&requests[0], "mcp__everything__echo");
    assert_eq!(description, "Echoes back the input string");
    assert_eq!(parameters["properties"]["message"]["type"], "string");
    assert_eq!(parameters["required"], json!(["message"]));
    // The results reach the model.
    let results = request_tool_results(Format::OpenAi, &requests[1]);
    assert_eq!(results[0], ("c1".to_owned(), "Echo: hello".to_owned()));
    assert_eq!(
        results[1],
        ("c2".to_owned(), "The sum of 2 and 3 is 5.".to_owned())
    );
    let time: Value = serde_json::from_str(&results[2].1)
        .unwrap_or_else(|_| panic!("not JSON: {}", results[2].1));
    assert_eq!(time["timezone"], "UTC", "{time}");
}

#[tokio::test]
async fn images_of_mcp_results_reach_the_provider_in_both_formats() {
    for format in FORMATS {
        let s = Scenario::start_with(format, &everything("")).await;
        let (mut client, session_id) = s.session().await;
        s.mock.push(Reply::tool_call(
            "img",
            "mcp__everything__get-tiny-image",
            json!({}),
        ));
        s.mock.push(Reply::text("A logo."));
        client.prompt(&session_id, "show me the image").await;
        let events = client.events_until_run_finished().await;
        assert_eq!(run_status(&events), RunStatus::Completed, "{format:?}");
        let requests = s.mock.wait_for_requests(2).await;
        let messages = requests[1].json["messages"].as_array().unwrap().clone();
        match format {
            Format::OpenAi => {
                let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
                assert_eq!(
                    tool["content"],
                    "Here's the image you requested:\nThe image above is the MCP logo."
                );
                let images = messages.last().unwrap();
                assert_eq!(images["role"], "user", "{images}");
                assert_eq!(images["content"][1]["type"], "image_url");
                let url = images["content"][1]["image_url"]["url"].as_str().unwrap();
                assert!(
                    url.starts_with("data:image/png;base64,iVBORw0KGgo"),
                    "{url}"
                );
            }
            Format::Anthropic => {
                let result = messages
                    .iter()
                    .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                    .find(|block| block["type"] == "tool_result")
                    .unwrap();
                let blocks = result["content"].as_array().unwrap();
                assert_eq!(blocks[0]["type"], "text");
                assert_eq!(blocks[1]["type"], "image");
                assert_eq!(blocks[1]["source"]["media_type"], "image/png");
                let data = blocks[1]["source"]["data"].as_str().unwrap();
                assert!(data.starts_with("iVBORw0KGgo"), "{format:?}");
            }
        }
    }
}

#[tokio::test]
async fn progress_notifications_become_tool_progress_events() {
    let s = Scenario::start_with(Format::OpenAi, &everything("")).await;
    let (mut client, session_id) = s.session().await;
    s.mock.push(Reply::tool_call(
        "long",
        "mcp__everything__trigger-long-running-operation",
        json!({"duration": 0.4, "steps": 4}),
    ));
    s.mock.push(Reply::text("done"));
    client.prompt(&session_id, "run the long operation").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let progress: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ToolProgress {
                tool_call_id,
                message,
                ..
            } if tool_call_id == "long" => Some(message.clone()),
            _ => None,
        })
        .collect();
    // The last one may race the result (it is sent right before it); the others may not.
    assert_eq!(progress[..3], ["1/4", "2/4", "3/4"], "{progress:?}");
    assert!(progress.len() <= 4, "{progress:?}");
    let results = tool_results(&events);
    assert!(
        results[0].1.starts_with("Long running operation completed"),
        "{results:?}"
    );
}

#[tokio::test]
async fn a_server_killed_mid_call_is_an_error_result_then_restarts_for_the_next_call() {
    let s = Scenario::start_with(Format::OpenAi, &everything("")).await;
    let (mut client, session_id) = s.session().await;
    s.mock.push(Reply::tool_call(
        "long",
        "mcp__everything__trigger-long-running-operation",
        json!({"duration": 60, "steps": 600}),
    ));
    s.mock.push(Reply::text("the server crashed"));
    client.prompt(&session_id, "run the long operation").await;
    // The call is in flight once its first progress arrives: kill the server then.
    loop {
        let event = client.next_event().await;
        if matches!(event.event, Event::ToolProgress { .. }) {
            break;
        }
    }
    let pid = the_one_server(s.daemon.pid(), EVERYTHING_MARKER).await;
    // SAFETY: kill(2) on a pid we just found among the daemon's descendants.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let results = tool_results(&events);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].2, "{results:?}");
    assert!(
        results[0].1.starts_with("MCP server everything exited: "),
        "{results:?}"
    );

    // Once the restarted process runs, the next run waits (at most the startup grace) for it
    // to be ready, and its call works.
    let restarted = the_one_server_but(s.daemon.pid(), EVERYTHING_MARKER, pid).await;
    s.mock.push(Reply::tool_call(
        "again",
        "mcp__everything__echo",
        json!({"message": "back"}),
    ));
    s.mock.push(Reply::text("it is back"));
    client.prompt(&session_id, "try again").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(
        tool_results(&events),
        [("again".to_owned(), "Echo: back".to_owned(), false)]
    );
    assert_eq!(
        descendants_running(s.daemon.pid(), EVERYTHING_MARKER),
        [restarted]
    );
}

#[tokio::test]
async fn a_server_that_never_starts_costs_a_warning_not_the_session() {
    let broken = ServerCommand {
        command: "/nonexistent/mcp-server".to_owned(),
        args: Vec::new(),
        env: Default::default(),
    };
    // A server that runs but never answers `initialize`: the run waits the grace, not longer.
    let silent = ServerCommand {
        command: "/bin/sleep".to_owned(),
        args: vec!["600".to_owned()],
        env: Default::default(),
    };
    let config = format!(
        "[mcp]\nstartup_grace_secs = 1\n{}{}",
        server_toml("broken", &broken, ""),
        server_toml("silent", &silent, "")
    );
    let s = Scenario::start_with(Format::OpenAi, &config).await;
    let (mut client, session_id) = s.session().await;
    s.mock.push(Reply::text("still here"));
    client.prompt(&session_id, "hello").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let warnings = warnings(&events);
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("MCP server broken ") && w.contains("/nonexistent/mcp-server")),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w
            == "MCP server silent is still starting after 1 s; its tools join once it is ready"),
        "{warnings:?}"
    );
    let requests = s.mock.wait_for_requests(1).await;
    let names = request_tool_names(Format::OpenAi, &requests[0]);
    assert!(
        !names.iter().any(|name| name.starts_with("mcp__")),
        "{names:?}"
    );
}

#[tokio::test]
async fn a_call_over_the_tool_timeout_is_an_error_result() {
    let s = Scenario::start_with(Format::OpenAi, &everything("tool_timeout_secs = 1")).await;
    let (mut client, session_id) = s.session().await;
    s.mock.push(Reply::tool_call(
        "long",
        "mcp__everything__trigger-long-running-operation",
        json!({"duration": 30, "steps": 3}),
    ));
    s.mock.push(Reply::text("too slow"));
    client.prompt(&session_id, "run the long operation").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(
        tool_results(&events),
        [(
            "long".to_owned(),
            "MCP tool trigger-long-running-operation of everything timed out after 1 s and was cancelled".to_owned(),
            true
        )]
    );
}

#[tokio::test]
async fn the_tool_set_change_is_recorded_before_the_call_that_first_offers_it() {
    let s = Scenario::start_with(Format::OpenAi, &everything("")).await;
    let (mut client, session_id) = s.session().await;
    s.mock.push(Reply::text("one"));
    s.mock.push(Reply::text("two"));
    client.prompt(&session_id, "first").await;
    let first = client.events_until_run_finished().await;
    client.prompt(&session_id, "second").await;
    let second = client.events_until_run_finished().await;
    let changes: Vec<&Event> = first
        .iter()
        .map(|e| &e.event)
        .filter(|event| matches!(event, Event::ToolsChanged { .. }))
        .collect();
    let [
        Event::ToolsChanged {
            added,
            removed,
            changed,
            ..
        },
    ] = changes[..]
    else {
        panic!("expected one toolsChanged in {:?}", kinds(&first));
    };
    assert!(removed.is_empty() && changed.is_empty());
    let requests = s.mock.wait_for_requests(2).await;
    let offered: Vec<String> = request_tool_names(Format::OpenAi, &requests[0])
        .into_iter()
        .filter(|name| name.starts_with("mcp__everything__"))
        .collect();
    assert_eq!(*added, offered);
    // It comes before the model call that offers them.
    let first_kinds = kinds(&first);
    let at = first_kinds
        .iter()
        .position(|k| k == "toolsChanged")
        .unwrap();
    assert_eq!(first_kinds[at - 1], "turnStarted", "{first_kinds:?}");
    // The same tools next time: nothing recorded, and the same tools array.
    assert!(!kinds(&second).contains(&"toolsChanged".to_owned()));
    assert_eq!(requests[0].json["tools"], requests[1].json["tools"]);
}

#[tokio::test]
async fn two_sessions_share_one_server_process() {
    let s = Scenario::start_with(Format::OpenAi, &everything("")).await;
    let (mut first, first_id) = s.session().await;
    let (mut second, second_id) = s.session().await;
    for (client, session_id, word) in [
        (&mut first, &first_id, "one"),
        (&mut second, &second_id, "two"),
    ] {
        s.mock.push(Reply::tool_call(
            word,
            "mcp__everything__echo",
            json!({"message": word}),
        ));
        s.mock.push(Reply::text(word));
        client.prompt(session_id, word).await;
        let events = client.events_until_run_finished().await;
        assert_eq!(
            tool_results(&events),
            [(word.to_owned(), format!("Echo: {word}"), false)]
        );
    }
    assert_eq!(
        descendants_running(s.daemon.pid(), EVERYTHING_MARKER).len(),
        1
    );
}

#[tokio::test]
async fn permissions_follow_read_only_hints_and_rules() {
    let config = format!(
        "[permissions]\ndeny = [\"mcp__everything__get-sum\"]\n{}",
        everything("")
    );
    let s = Scenario::start_with(Format::OpenAi, &config).await;
    let mut client = s.client().await;
    let cwd = s.workspace();
    let session_id = plan_session(&mut client, &cwd).await;
    client.subscribe(&session_id, Some(0)).await;
    s.mock.push(Reply::tool_calls(vec![
        (
            "ro",
            "mcp__everything__echo",
            json!({"message": "x"}).to_string(),
        ),
        (
            "deny",
            "mcp__everything__get-sum",
            json!({"a": 1, "b": 2}).to_string(),
        ),
        (
            "rw",
            "mcp__everything__toggle-simulated-logging",
            "{}".to_owned(),
        ),
    ]));
    s.mock.push(Reply::text("planned"));
    client.prompt(&session_id, "plan it").await;
    let events = client.events_until_run_finished().await;
    let results = tool_results(&events);
    assert_eq!(results[0], ("ro".to_owned(), "Echo: x".to_owned(), false));
    assert!(
        results[1].2
            && results[1]
                .1
                .contains("is denied by the rule `mcp__everything__get-sum`"),
        "{results:?}"
    );
    assert!(
        results[2].2 && results[2].1.contains("plan mode: only read-only tools run"),
        "{results:?}"
    );
}

#[tokio::test]
async fn in_default_mode_read_only_mcp_tools_run_and_others_ask() {
    let s = Scenario::start_with(Format::OpenAi, &everything("")).await;
    let mut client = s.client().await;
    let session_id = mode_session(&mut client, &s.workspace(), "default").await;
    client.subscribe(&session_id, Some(0)).await;
    s.mock.push(Reply::tool_calls(vec![
        (
            "ro",
            "mcp__everything__echo",
            json!({"message": "x"}).to_string(),
        ),
        (
            "rw",
            "mcp__everything__toggle-simulated-logging",
            "{}".to_owned(),
        ),
    ]));
    s.mock.push(Reply::text("asked"));
    client.prompt(&session_id, "go").await;
    // Only the tool the server does not mark read-only asks; the answer is no.
    let approval = loop {
        if let Event::ApprovalRequested { approval, .. } = client.next_event().await.event {
            break approval;
        }
    };
    assert_eq!(approval.tool, "mcp__everything__toggle-simulated-logging");
    client
        .request(
            "approval/respond",
            json!({"approvalId": approval.approval_id, "decision": "deny"}),
        )
        .await
        .expect("approval/respond");
    let events = client.events_until_run_finished().await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.event, Event::ApprovalRequested { .. })),
        "{:?}",
        kinds(&events)
    );
    let results = tool_results(&events);
    assert_eq!(results[0], ("ro".to_owned(), "Echo: x".to_owned(), false));
    assert!(results[1].2, "{results:?}");
}

/// A session in plan mode (only read-only tools run).
async fn plan_session(client: &mut agentd_tests::harness::Client, cwd: &Path) -> String {
    mode_session(client, cwd, "plan").await
}

/// A session in `mode`.
async fn mode_session(
    client: &mut agentd_tests::harness::Client,
    cwd: &Path,
    mode: &str,
) -> String {
    let result = client
        .request(
            "session/create",
            json!({"cwd": cwd.display().to_string(), "permissionMode": mode}),
        )
        .await
        .expect("session/create");
    result["sessionId"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn cancelling_the_run_cancels_the_mcp_call_and_keeps_the_server() {
    let s = Scenario::start_with(Format::OpenAi, &everything("")).await;
    let (mut client, session_id) = s.session().await;
    s.mock.push(Reply::tool_call(
        "long",
        "mcp__everything__trigger-long-running-operation",
        json!({"duration": 60, "steps": 600}),
    ));
    client.prompt(&session_id, "run the long operation").await;
    loop {
        if matches!(client.next_event().await.event, Event::ToolProgress { .. }) {
            break;
        }
    }
    let pid = the_one_server(s.daemon.pid(), EVERYTHING_MARKER).await;
    client.cancel(&session_id).await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Cancelled);
    assert_eq!(
        tool_results(&events),
        [("long".to_owned(), "cancelled".to_owned(), true)]
    );
    // The server was told, not killed: the same process serves the next run.
    s.mock.push(Reply::tool_call(
        "after",
        "mcp__everything__echo",
        json!({"message": "still here"}),
    ));
    s.mock.push(Reply::text("ok"));
    client.prompt(&session_id, "again").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(
        tool_results(&events),
        [("after".to_owned(), "Echo: still here".to_owned(), false)]
    );
    assert_eq!(
        descendants_running(s.daemon.pid(), EVERYTHING_MARKER),
        [pid]
    );
}
