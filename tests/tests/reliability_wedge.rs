//! A session never wedges and no panic is silent: hostile durations from the model endpoint and
//! the config end runs cleanly (or are refused), a run that panics ends `failed` with its tool
//! calls paired, a handler that panics is answered -32603, every panic is logged with a
//! backtrace and counted in `daemon/status`, and `agentctl run` ends instead of hanging.

use std::time::{Duration, SystemTime};

use agentd_tests::harness::{Client, Daemon, TestEnv, decode, text};
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::scenario::*;
use agentd_tests::test_seams;
use pretty_assertions::assert_eq;
use protocol::daemon::DaemonStatusResult;
use protocol::error as codes;
use protocol::event::{Event, RunStatus};
use protocol::session::{
    SessionCancelResult, SessionDeleteResult, SessionGetResult, SessionStatus,
};
use serde_json::json;

use crate::approvals::{shell, until_approval};

/// The session is idle, a cancel finds nothing to cancel, a new prompt completes and the
/// session can be deleted: nothing is left wedged.
async fn assert_session_usable(s: &Scenario, client: &mut Client, session_id: &str) {
    let get: SessionGetResult = decode(
        client
            .request("session/get", json!({"sessionId": session_id}))
            .await
            .expect("session/get"),
    );
    assert_eq!(get.session.status, SessionStatus::Idle);
    assert_eq!(get.session.run_id, None);
    let cancel: SessionCancelResult = decode(client.cancel(session_id).await);
    assert!(!cancel.cancelled, "nothing should be running: {cancel:?}");

    s.mock.push(Reply::text("back to normal"));
    client.prompt(session_id, "are you there?").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed, "{events:#?}");

    let deleted: SessionDeleteResult = decode(
        client
            .request("session/delete", json!({"sessionId": session_id}))
            .await
            .expect("session/delete"),
    );
    assert!(deleted.deleted);
}

async fn status(client: &mut Client) -> DaemonStatusResult {
    decode(
        client
            .request("daemon/status", json!({}))
            .await
            .expect("daemon/status"),
    )
}

/// Waits until the daemon's log file holds `needle` (the log writer flushes on its own thread).
async fn wait_for_log(daemon: &Daemon, needle: &str) -> String {
    wait_until(&format!("{needle:?} in the daemon log"), || {
        daemon.log().contains(needle)
    })
    .await;
    daemon.log()
}

/// The log holds the panic with its message and a backtrace that names daemon code.
fn assert_panic_logged(log: &str, message: &str) {
    let at = log
        .find(message)
        .unwrap_or_else(|| panic!("{message:?} not in the log:\n{log}"));
    let entry = &log[at..];
    let backtrace = entry
        .find("backtrace:")
        .map(|start| &entry[start..])
        .unwrap_or_else(|| panic!("no backtrace after the panic:\n{entry}"));
    assert!(
        backtrace.contains("agentd::"),
        "the backtrace names no daemon frame:\n{backtrace}"
    );
}

both_formats!(a_huge_retry_after_ends_the_run_failed_and_the_session_keeps_working);
async fn a_huge_retry_after_ends_the_run_failed_and_the_session_keeps_working(format: Format) {
    // Three retries (config_toml), each told to wait "forever"; the waits are capped at
    // retry_max_delay_ms (200 ms) and the fourth failure ends the run.
    let s = Scenario::start(format).await;
    s.mock
        .push(Reply::error(429, "slow down").with_header("retry-after", "1e300"));
    s.mock
        .push(Reply::error(429, "slow down").with_header("retry-after-ms", "1e300"));
    s.mock
        .push(Reply::error(503, "busy").with_header("retry-after", "18446744073709551616"));
    s.mock
        .push(Reply::error(503, "still busy").with_header("retry-after-ms", "1e308"));
    let (mut client, session_id) = s.session().await;
    client.prompt(&session_id, "hello").await;
    let events = client.events_until_run_finished().await;

    assert_eq!(run_status(&events), RunStatus::Failed, "{events:#?}");
    let error = run_error(&events);
    assert!(error.contains("still busy"), "{error}");
    let retries: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Error {
                message,
                will_retry: true,
                ..
            } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(retries.len(), 3, "{events:#?}");
    for message in retries {
        assert!(message.contains("retrying in 0.2s"), "{message}");
    }
    assert_eq!(s.mock.requests().len(), 4);
    assert_session_usable(&s, &mut client, &session_id).await;
    assert_eq!(status(&mut client).await.panics, 0);
}

both_formats!(huge_token_counts_saturate_instead_of_ending_the_run);
async fn huge_token_counts_saturate_instead_of_ending_the_run(format: Format) {
    let s = Scenario::start(format).await;
    s.mock.push(Reply::text("one").usage(u64::MAX, u64::MAX, 3));
    s.mock.push(Reply::text("two").usage(u64::MAX, u64::MAX, 3));
    let (mut client, session_id) = s.session().await;
    for prompt in ["first", "second"] {
        client.prompt(&session_id, prompt).await;
        let events = client.events_until_run_finished().await;
        assert_eq!(run_status(&events), RunStatus::Completed, "{events:#?}");
    }
    let get: SessionGetResult = decode(
        client
            .request("session/get", json!({"sessionId": session_id}))
            .await
            .expect("session/get"),
    );
    assert_eq!(get.session.usage.input_tokens, u64::MAX);
    assert_eq!(get.session.usage.output_tokens, u64::MAX);
    assert_eq!(get.session.usage.cached_input_tokens, 6);
    // The last prompt was reported over the hard context limit: the next run first compacts
    // (a summary call) and then carries on.
    s.mock.push(Reply::text("the user said first and second"));
    assert_session_usable(&s, &mut client, &session_id).await;
}

both_formats!(an_approval_timeout_beyond_the_limit_is_a_config_error);
async fn an_approval_timeout_beyond_the_limit_is_a_config_error(format: Format) {
    let s = Scenario::start_with(
        format,
        "[permissions]\ndefault_mode = \"default\"\napproval_timeout_secs = 9223372036854775807\n",
    )
    .await;
    let mut client = s.client().await;
    let error = status(&mut client)
        .await
        .config_error
        .expect("the timeout is reported as a config error");
    assert!(
        error.contains("permissions.approval_timeout_secs = 9223372036854775807 is too large")
            && error.contains("at most 604800 seconds"),
        "{error}"
    );
    let refused = client
        .request(
            "session/create",
            json!({"cwd": s.workspace().display().to_string()}),
        )
        .await
        .expect_err("no session without a usable config");
    assert_eq!(refused.code, i64::from(codes::CONFIG_ERROR), "{refused:?}");
    assert!(
        refused.message.contains("approval_timeout_secs"),
        "{refused:?}"
    );
}

both_formats!(a_run_asking_with_the_longest_approval_timeout_does_not_wedge);
async fn a_run_asking_with_the_longest_approval_timeout_does_not_wedge(format: Format) {
    let s = Scenario::start_with(
        format,
        "[permissions]\ndefault_mode = \"default\"\napproval_timeout_secs = 604800\n",
    )
    .await;
    s.mock.push(shell("c1", "touch wedge"));
    let (mut client, session_id) = s.session().await;
    client.prompt(&session_id, "make a file").await;
    let (_, approval) = until_approval(&mut client).await;
    let expires = humantime::parse_rfc3339(&approval.expires_at).expect("expiresAt is a date");
    let week = Duration::from_secs(604_800);
    let ahead = expires
        .duration_since(SystemTime::now())
        .expect("expiresAt is ahead");
    assert!(
        ahead > week - Duration::from_secs(60) && ahead <= week,
        "{approval:?}"
    );
    let cancel: SessionCancelResult = decode(client.cancel(&session_id).await);
    assert!(cancel.cancelled);
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Cancelled, "{events:#?}");
    assert!(!s.workspace().join("wedge").exists());
    assert_session_usable(&s, &mut client, &session_id).await;
}

both_formats!(a_run_that_panics_ends_failed_with_its_tool_calls_paired);
async fn a_run_that_panics_ends_failed_with_its_tool_calls_paired(format: Format) {
    let s = Scenario::start_with_vars(format, "", &[(test_seams::PANIC_TOOL, "explode")]).await;
    s.mock.push(Reply::tool_calls(vec![
        ("call_a", "read_file", r#"{"path":"notes.txt"}"#),
        ("call_b", "explode", "{}"),
    ]));
    let (mut client, session_id) = s.session().await;
    client.prompt(&session_id, "go").await;
    let events = client.events_until_run_finished().await;

    assert_eq!(run_status(&events), RunStatus::Failed, "{events:#?}");
    let error = run_error(&events);
    assert!(
        error.starts_with("internal error")
            && error.contains("test panic in a run calling explode"),
        "{error}"
    );
    let paired = tool_results(&events);
    assert_eq!(
        paired
            .iter()
            .map(|(id, output, is_error)| (id.as_str(), output.as_str(), *is_error))
            .collect::<Vec<_>>(),
        vec![
            (
                "call_a",
                "not run: the run failed before this tool call finished",
                true
            ),
            (
                "call_b",
                "not run: the run failed before this tool call finished",
                true
            ),
        ]
    );
    assert_seqs_increase(&events);

    let log = wait_for_log(&s.daemon, "test panic in a run calling explode").await;
    assert_panic_logged(&log, "test panic in a run calling explode");
    assert_eq!(status(&mut client).await.panics, 1);

    // The next request pairs every tool call: the provider accepts the history.
    assert_session_usable(&s, &mut client, &session_id).await;
    let requests = s.mock.requests();
    let last = requests.last().expect("a request");
    let results: Vec<String> = request_tool_results(format, last)
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(results, vec!["call_a", "call_b"]);
}

#[tokio::test]
async fn a_handler_that_panics_answers_internal_error_and_the_daemon_keeps_serving() {
    let env = TestEnv::new().var(test_seams::PANIC_METHOD, "session/list");
    let daemon = Daemon::start_in(env).await;
    let mut client = daemon.client().await;
    let error = client
        .request("session/list", json!({}))
        .await
        .expect_err("the handler panics");
    assert_eq!(error.code, i64::from(codes::INTERNAL_ERROR), "{error:?}");
    assert!(
        error.message.starts_with("internal error")
            && error.message.contains("session/list")
            && error
                .message
                .contains("test panic in the handler of session/list"),
        "{error:?}"
    );

    // The same connection and a new one are served; the panic is counted and logged.
    assert_eq!(status(&mut client).await.panics, 1);
    let mut other = daemon.client().await;
    assert_eq!(status(&mut other).await.panics, 1);
    let log = wait_for_log(&daemon, "test panic in the handler of session/list").await;
    assert_panic_logged(&log, "test panic in the handler of session/list");
}

#[tokio::test]
async fn agentctl_run_exits_1_when_the_endpoint_asks_to_retry_after_forever() {
    let mock = MockLlm::start().await;
    for header in [
        "retry-after",
        "retry-after-ms",
        "retry-after",
        "retry-after-ms",
    ] {
        mock.push(Reply::error(503, "overloaded for a long while").with_header(header, "1e300"));
    }
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    let output = env.run_agentctl(&["run", "hello"]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("overloaded for a long while"), "{stderr}");

    mock.push(Reply::text("fine now"));
    let output = env.run_agentctl(&["run", "hello again"]).await;
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        text(&output.stderr)
    );
    assert!(stdout.contains("fine now"), "{stdout}");
}
