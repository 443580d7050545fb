//! Tool search for large tool sets, with the scripted Python server `many_tools_server.py` (on
//! the real SDK, 500 tools): the first request lists `search_tools` and none of the 500; a
//! search finds a tool by a word of its description, a load is recorded in `toolsChanged` and
//! the next request lists the tool, whose call works against the server; a tool called before
//! it was loaded is loaded by that call and still asks its approval; a name no server has is
//! told to search; the loaded tools are offered again after a restart and in a fork, the
//! request's tools byte for byte as before. Below the threshold, with `search = "never"`,
//! nothing changes; with `"always"` a few tools are searched too; a subagent of a session with
//! the 500 tools searches them as well; a tool a server adds (`tools/list_changed`,
//! `results_server.py`'s `grow`) is found by the next search; a load in a run's last step is
//! recorded at the run's end.

use agentd_tests::mcp_scenario::*;
use agentd_tests::mcp_servers::{many_tools_server, results_server};
use agentd_tests::mock_llm::{Format, RecordedRequest, Reply};
use agentd_tests::scenario::*;
use protocol::event::{Event, RunStatus};
use serde_json::json;

/// The Python server can take longer than the default 5 s to start on a busy machine.
const SLOW_START: &str = "[mcp]\nstartup_grace_secs = 60\n";
const TIDE_TOOL: &str = "mcp__many__item_271";
const OTHER_TOOL: &str = "mcp__many__item_100";

fn many(args: &[&str], extra: &str) -> String {
    format!(
        "{extra}\n{}{SLOW_START}",
        server_toml("many", &many_tools_server(args), "")
    )
}

fn names(request: &RecordedRequest) -> Vec<String> {
    request_tool_names(Format::OpenAi, request)
}

fn mcp_names(request: &RecordedRequest) -> Vec<String> {
    names(request)
        .into_iter()
        .filter(|name| name.starts_with("mcp__"))
        .collect()
}

/// `(added, loaded)` of each `toolsChanged` among `events`.
fn tool_changes(events: &[Envelope]) -> Vec<(Vec<String>, Vec<String>)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ToolsChanged { added, loaded, .. } => Some((added.clone(), loaded.clone())),
            _ => None,
        })
        .collect()
}

/// The names the first request of a session offered, with `args` to the server and `extra`
/// config lines.
async fn first_request_names(args: &[&str], extra: &str) -> Vec<String> {
    let s = Scenario::start_with(Format::OpenAi, &many(args, extra)).await;
    let (mut client, session_id) = s.session().await;
    s.mock.push(Reply::text("Seen."));
    client.prompt(&session_id, "look").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    names(&s.mock.requests()[0])
}

#[tokio::test]
async fn a_large_tool_set_is_searched_loaded_and_called_and_stays_loaded_after_a_restart_and_in_a_fork()
 {
    let config = many(&[], &format!("[permissions]\nallow = [\"{TIDE_TOOL}\"]\n"));
    let mut s = Scenario::start_with(Format::OpenAi, &config).await;
    let (mut client, session_id) = s.session().await;
    s.mock.push(Reply::tool_call(
        "s1",
        "search_tools",
        json!({"query": "harbour"}),
    ));
    s.mock.push(Reply::tool_call(
        "s2",
        "search_tools",
        json!({"load": [TIDE_TOOL]}),
    ));
    s.mock.push(Reply::tool_calls(vec![
        (
            "c0",
            "mcp__many__item_999",
            json!({"key": "no such tool"}).to_string(),
        ),
        ("c1", TIDE_TOOL, json!({"key": "dover"}).to_string()),
        // Never loaded: its call loads it, and it asks like any MCP call.
        ("c2", OTHER_TOOL, json!({"key": "x"}).to_string()),
    ]));
    s.mock.push(Reply::text("High tide at noon."));
    client.prompt(&session_id, "when is high tide?").await;
    let (mut events, approval) = crate::approvals::until_approval(&mut client).await;
    assert_eq!(approval.tool, OTHER_TOOL);
    crate::approvals::respond(&mut client, &approval.approval_id, "deny", None)
        .await
        .unwrap();
    events.extend(client.events_until_run_finished().await);
    assert_eq!(run_status(&events), RunStatus::Completed);
    let requests = s.mock.wait_for_requests(4).await;

    // The first request lists search_tools and none of the 500.
    assert!(names(&requests[0]).contains(&"search_tools".to_owned()));
    assert_eq!(mcp_names(&requests[0]), Vec::<String>::new());
    assert!(names(&requests[0]).contains(&"read_file".to_owned()));
    // The search found the tool by a word of its description; the tools did not change.
    let results = request_tool_results(Format::OpenAi, &requests[1]);
    assert!(
        results[0]
            .1
            .contains("- mcp__many__item_271: Reads the tide tables of a harbour"),
        "{results:?}"
    );
    assert_eq!(requests[1].json["tools"], requests[0].json["tools"]);
    // The load shows in the next request, with the tool's parameters.
    assert_eq!(mcp_names(&requests[2]), vec![TIDE_TOOL.to_owned()]);
    let (description, parameters) = openai_tool(&requests[2], TIDE_TOOL);
    assert!(
        description.starts_with("Reads the tide tables"),
        "{description}"
    );
    assert_eq!(parameters["properties"]["key"]["type"], "string");
    // The call worked against the server; the other tool's was denied, and loaded.
    let results = request_tool_results(Format::OpenAi, &requests[3]);
    assert!(
        results[2].1.contains(
            "no MCP tool of this session has this name now; find MCP tools with search_tools"
        ),
        "{results:?}"
    );
    assert_eq!(results[3].1, "item_271 looked up dover", "{results:?}");
    assert!(results[4].1.contains("denied by the user"), "{results:?}");
    assert_eq!(
        mcp_names(&requests[3]),
        vec![OTHER_TOOL.to_owned(), TIDE_TOOL.to_owned()]
    );
    // Each load is recorded once, in the toolsChanged of the step that first lists it.
    let loaded: Vec<(Vec<String>, Vec<String>)> = tool_changes(&events)
        .into_iter()
        .filter(|(_, loaded)| !loaded.is_empty())
        .collect();
    assert_eq!(
        loaded,
        vec![
            (vec![TIDE_TOOL.to_owned()], vec![TIDE_TOOL.to_owned()]),
            (vec![OTHER_TOOL.to_owned()], vec![OTHER_TOOL.to_owned()]),
        ]
    );

    // After a crash and a restart the session offers the same tools, byte for byte.
    drop(client);
    s.daemon.kill().await;
    s.daemon.restart().await;
    let mut client = s.client().await;
    client.subscribe(&session_id, None).await;
    s.mock.push(Reply::text("Still here."));
    client.prompt(&session_id, "again").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let requests = s.mock.wait_for_requests(5).await;
    assert_eq!(requests[4].json["tools"], requests[3].json["tools"]);

    // A fork keeps them too.
    let forked = client
        .request("session/fork", json!({"sessionId": session_id}))
        .await
        .expect("session/fork");
    let fork = forked["sessionId"].as_str().unwrap().to_owned();
    client.subscribe(&fork, None).await;
    s.mock.push(Reply::text("Forked."));
    client.prompt(&fork, "and in the fork?").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let requests = s.mock.wait_for_requests(6).await;
    assert_eq!(requests[5].json["tools"], requests[3].json["tools"]);
}

#[tokio::test]
async fn below_the_threshold_or_with_search_never_every_tool_is_listed() {
    let few = first_request_names(&["--tools", "20"], "").await;
    assert_eq!(few.iter().filter(|n| n.starts_with("mcp__")).count(), 20);
    assert!(!few.contains(&"search_tools".to_owned()));
    let never = first_request_names(&[], "[tools]\nsearch = \"never\"\n").await;
    assert_eq!(never.iter().filter(|n| n.starts_with("mcp__")).count(), 500);
    assert!(!never.contains(&"search_tools".to_owned()));
    let always = first_request_names(&["--tools", "3"], "[tools]\nsearch = \"always\"\n").await;
    assert_eq!(always.iter().filter(|n| n.starts_with("mcp__")).count(), 0);
    assert!(always.contains(&"search_tools".to_owned()));
}

#[tokio::test]
async fn a_subagent_of_a_session_with_a_large_tool_set_searches_it_too() {
    let s = Scenario::start_with(Format::OpenAi, &many(&[], "")).await;
    let (mut client, session_id) = s.session().await;
    s.mock.push(Reply::tool_call(
        "t1",
        "task",
        json!({"prompt": "find the tide tool"}),
    ));
    s.mock.push(Reply::text("The child is done."));
    s.mock.push(Reply::text("Done."));
    client.prompt(&session_id, "delegate").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let requests = s.mock.wait_for_requests(3).await;
    let child = &requests[1];
    assert!(
        request_user_texts(Format::OpenAi, child)
            .iter()
            .any(|text| text.contains("find the tide tool")),
        "the second request is the child's"
    );
    assert!(names(child).contains(&"search_tools".to_owned()));
    assert_eq!(mcp_names(child), Vec::<String>::new());
}

#[tokio::test]
async fn a_tool_a_server_adds_during_a_batch_is_found_by_the_next_search() {
    let config = format!(
        "{}{SLOW_START}",
        server_toml("results", &results_server(&["--tools", "60"]), "")
    );
    let s = Scenario::start_with(Format::OpenAi, &config).await;
    let (mut client, session_id) = s.session().await;
    // Not loaded: the call loads it and runs; the server adds `grown` and says so.
    s.mock
        .push(Reply::tool_call("g1", "mcp__results__grow", json!({})));
    s.mock.push(Reply::tool_call(
        "s1",
        "search_tools",
        json!({"query": "added by grow"}),
    ));
    s.mock.push(Reply::text("Found it."));
    client.prompt(&session_id, "grow").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let requests = s.mock.wait_for_requests(3).await;
    assert_eq!(mcp_names(&requests[0]), Vec::<String>::new());
    assert_eq!(
        mcp_names(&requests[1]),
        vec!["mcp__results__grow".to_owned()]
    );
    let results = request_tool_results(Format::OpenAi, &requests[2]);
    assert_eq!(results[0].1, "grew", "{results:?}");
    assert!(
        results[1]
            .1
            .contains("- mcp__results__grown: A tool added by `grow`."),
        "{results:?}"
    );
}

#[tokio::test]
async fn a_load_in_a_runs_last_step_is_recorded_at_its_end_and_kept_after_a_restart() {
    // One model call a run: the load's step is its last.
    let mut s = Scenario::start_with(Format::OpenAi, &many(&[], "max_steps = 1")).await;
    let (mut client, session_id) = s.session().await;
    s.mock.push(Reply::tool_call(
        "s1",
        "search_tools",
        json!({"load": [TIDE_TOOL]}),
    ));
    client.prompt(&session_id, "load the tide tool").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::MaxSteps);
    assert_eq!(
        tool_changes(&events).last(),
        Some(&(Vec::new(), vec![TIDE_TOOL.to_owned()]))
    );

    drop(client);
    s.daemon.kill().await;
    s.daemon.restart().await;
    let mut client = s.client().await;
    client.subscribe(&session_id, None).await;
    s.mock.push(Reply::text("Loaded."));
    client.prompt(&session_id, "again").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let requests = s.mock.wait_for_requests(2).await;
    assert_eq!(mcp_names(&requests[1]), vec![TIDE_TOOL.to_owned()]);
}
