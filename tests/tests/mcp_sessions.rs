//! Sessions using MCP tools end to end, with real servers (npm server-everything, PyPI
//! mcp-server-time): a scripted model calls `mcp__<server>__<tool>` through `agentctl run`;
//! names and schemas pass through to the provider; images reach it in both formats; progress
//! becomes `toolProgress`; permissions by `readOnlyHint`, rules and modes; the recorded
//! `toolsChanged` when the session's servers change. Supervision as sessions see it is in
//! `mcp_sessions_supervision`.

use std::path::Path;

use agentd_tests::harness::{TestEnv, text};
use agentd_tests::mcp_scenario::*;
use agentd_tests::mcp_servers::{everything_stdio, time_stdio};
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::event::{Event, RunStatus};
use serde_json::{Value, json};

/// The Python time server can take longer than the default 5 s to start on a busy machine:
/// runs wait for it (a ready server ends the wait at once).
const SLOW_START: &str = "[mcp]\nstartup_grace_secs = 60\n";

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
        "{}{}{SLOW_START}",
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
    let long = "mcp__everything__trigger-long-running-operation";
    s.mock.push(Reply::tool_calls(vec![
        (
            "long",
            long,
            json!({"duration": 1.6, "steps": 4}).to_string(),
        ),
        (
            "flood",
            long,
            json!({"duration": 1, "steps": 100}).to_string(),
        ),
    ]));
    s.mock.push(Reply::text("done"));
    client.prompt(&session_id, "run the long operation").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let progress_of = |id: &str| -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match &e.event {
                Event::ToolProgress {
                    tool_call_id,
                    message,
                    ..
                } if tool_call_id == id => Some(message.clone()),
                _ => None,
            })
            .collect()
    };
    let progress = progress_of("long");
    // Each is 0.4 s after the last (over the 250 ms throttle); the last one may race the
    // result (it is sent right before it), the others may not.
    assert_eq!(progress[..3], ["1/4", "2/4", "3/4"], "{progress:?}");
    assert!(progress.len() <= 4, "{progress:?}");
    // A server notifying every 10 ms is throttled (at most one report per 250 ms).
    let flood = progress_of("flood");
    assert!(!flood.is_empty() && flood.len() <= 6, "{flood:?}");
    let results = tool_results(&events);
    assert!(
        results[0].1.starts_with("Long running operation completed"),
        "{results:?}"
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
    // An allow rule names one writing tool; another is not named.
    let config = format!(
        "[permissions]\nallow = [\"mcp__everything__toggle-simulated-logging\"]\n{}",
        everything("")
    );
    let s = Scenario::start_with(Format::OpenAi, &config).await;
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
            "allowed",
            "mcp__everything__toggle-simulated-logging",
            "{}".to_owned(),
        ),
        (
            "rw",
            "mcp__everything__gzip-file-as-resource",
            json!({"name": "x.gz", "data": "data:text/plain,hello"}).to_string(),
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
    assert_eq!(approval.tool, "mcp__everything__gzip-file-as-resource");
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
    let result = |id: &str| {
        results
            .iter()
            .find(|(call, ..)| call == id)
            .unwrap()
            .clone()
    };
    assert_eq!(result("ro"), ("ro".to_owned(), "Echo: x".to_owned(), false));
    assert!(!result("allowed").2, "{results:?}");
    assert!(result("rw").2, "{results:?}");
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
            initial,
            ..
        },
    ] = changes[..]
    else {
        panic!("expected one toolsChanged in {:?}", kinds(&first));
    };
    assert!(removed.is_empty() && changed.is_empty());
    // The tools the session starts with: marked, so a client need not announce them.
    assert!(*initial);
    let requests = s.mock.wait_for_requests(2).await;
    let offered: Vec<String> = request_tool_names(Format::OpenAi, &requests[0])
        .into_iter()
        .filter(|name| name.starts_with("mcp__everything__"))
        .collect();
    assert_eq!(*added, offered);
    // It comes before the model call that offers them (server status events, which the
    // server's own task appends, may come between).
    let first_kinds: Vec<String> = kinds(&first)
        .into_iter()
        .filter(|kind| kind != "mcpServerStatus")
        .collect();
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
async fn a_server_added_between_runs_joins_and_the_change_is_recorded() {
    let s = Scenario::start_with(Format::OpenAi, SLOW_START).await;
    let cwd = s.workspace();
    let mcp_json_path = cwd.join(".mcp.json");
    std::fs::write(
        &mcp_json_path,
        mcp_json(&[("everything", everything_stdio())]),
    )
    .unwrap();
    let (mut client, session_id) = s.session().await;
    client
        .request("project/trust", json!({"path": cwd.display().to_string()}))
        .await
        .expect("project/trust");
    s.mock.push(Reply::text("one"));
    client.prompt(&session_id, "first").await;
    client.events_until_run_finished().await;
    let pid = the_one_server(s.daemon.pid(), EVERYTHING_MARKER).await;

    std::fs::write(
        &mcp_json_path,
        mcp_json(&[("everything", everything_stdio()), ("time", time_stdio())]),
    )
    .unwrap();
    // Trust is pinned to content: the changed file applies once trusted again.
    client
        .request("project/trust", json!({"path": cwd.display().to_string()}))
        .await
        .expect("project/trust");
    s.mock.push(Reply::text("two"));
    client.prompt(&session_id, "second").await;
    let events = client.events_until_run_finished().await;
    let changes: Vec<(Vec<String>, Vec<String>)> = events
        .iter()
        .filter_map(|e| match &e.event {
            // A change of a session's tools, not the tools it started with.
            Event::ToolsChanged {
                added,
                removed,
                initial: false,
                ..
            } => Some((added.clone(), removed.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        changes,
        [(
            vec![
                "mcp__time__convert_time".to_owned(),
                "mcp__time__get_current_time".to_owned()
            ],
            Vec::new()
        )]
    );
    let requests = s.mock.wait_for_requests(2).await;
    let names = request_tool_names(Format::OpenAi, &requests[1]);
    assert!(names.contains(&"mcp__time__get_current_time".to_owned()));
    // The session kept its lease on the server it already used: the same process.
    assert_eq!(
        descendants_running(s.daemon.pid(), EVERYTHING_MARKER),
        [pid]
    );
}

#[tokio::test]
async fn an_untrusted_projects_servers_do_not_start_and_each_run_says_how_to_trust() {
    let s = Scenario::start(Format::OpenAi).await;
    let cwd = s.workspace();
    std::fs::write(
        cwd.join(".mcp.json"),
        mcp_json(&[("everything", everything_stdio())]),
    )
    .unwrap();
    let (mut client, session_id) = s.session().await;
    for word in ["one", "two"] {
        s.mock.push(Reply::text(word));
        client.prompt(&session_id, word).await;
        let events = client.events_until_run_finished().await;
        let warnings = warnings(&events);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("is not trusted")
                && warnings[0].contains("(everything)")
                && warnings[0].contains("agentctl trust")
                && !warnings[0].contains("project/trust"),
            "{warnings:?}"
        );
    }
    let requests = s.mock.wait_for_requests(2).await;
    assert!(
        !request_tool_names(Format::OpenAi, &requests[1])
            .iter()
            .any(|name| name.starts_with("mcp__"))
    );
    assert!(descendants_running(s.daemon.pid(), EVERYTHING_MARKER).is_empty());
}

#[tokio::test]
async fn a_streamable_http_server_serves_a_session_too() {
    let server = agentd_tests::mcp_servers::EverythingHttp::start().await;
    let config = format!(
        "[mcp_servers.web]\ntype = \"http\"\nurl = {}\n",
        Value::String(server.url())
    );
    let s = Scenario::start_with(Format::Anthropic, &config).await;
    let (mut client, session_id) = s.session().await;
    s.mock.push(Reply::tool_call(
        "web",
        "mcp__web__echo",
        json!({"message": "over http"}),
    ));
    s.mock.push(Reply::text("ok"));
    client.prompt(&session_id, "echo over http").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(
        tool_results(&events),
        [("web".to_owned(), "Echo: over http".to_owned(), false)]
    );
    let requests = s.mock.wait_for_requests(2).await;
    assert!(
        request_tool_names(Format::Anthropic, &requests[0]).contains(&"mcp__web__echo".to_owned())
    );
}
