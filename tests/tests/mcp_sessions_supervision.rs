//! MCP supervision as sessions see it, with real servers: a crash mid-call is an error result
//! and the restarted server serves the next run; a server that never starts costs a warning,
//! not the session; tool timeouts; cancelling a run cancels its call; two sessions share one
//! process; a session's servers are released when it unloads or is deleted.

use agentd_tests::mcp_scenario::*;
use agentd_tests::mcp_servers::ServerCommand;
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::event::{Event, RunStatus};
use serde_json::json;

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
    // And an entry that cannot be used at all: a problem, said at each run.
    let config = format!(
        "[mcp]\nstartup_grace_secs = 1\n{}{}[mcp_servers.nothing]\nargs = [\"x\"]\n",
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
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("config.toml") && w.contains("nothing")),
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
async fn a_session_releases_its_servers_when_it_unloads_or_is_deleted() {
    let config = format!(
        "[mcp]\nidle_stop_secs = 1\n[sessions]\nidle_unload_secs = 1\n{}",
        everything("")
    );
    let s = Scenario::start_with(Format::OpenAi, &config).await;
    // Deleted: its lease ends, the unused server stops after the idle period.
    let (mut client, session_id) = s.session().await;
    s.mock.push(Reply::text("one"));
    client.prompt(&session_id, "one").await;
    client.events_until_run_finished().await;
    the_one_server(s.daemon.pid(), EVERYTHING_MARKER).await;
    client
        .request("session/delete", json!({"sessionId": session_id}))
        .await
        .expect("session/delete");
    no_server_left(s.daemon.pid(), EVERYTHING_MARKER).await;

    // Unloaded when idle (nobody subscribed): the same.
    let mut other = s.client().await;
    let idle_id = create_session(&mut other, &s.workspace()).await;
    s.mock.push(Reply::text("two"));
    other.subscribe(&idle_id, Some(0)).await;
    other.prompt(&idle_id, "two").await;
    other.events_until_run_finished().await;
    the_one_server(s.daemon.pid(), EVERYTHING_MARKER).await;
    drop(other);
    no_server_left(s.daemon.pid(), EVERYTHING_MARKER).await;
}
