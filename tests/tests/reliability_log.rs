//! No acknowledged entry is lost: torn tails, cancelled appends, a full disk (through the
//! daemon's test-only write fault seam), approvals that cannot be persisted, `clientRequestId`
//! and queued follow-ups across a cancel and a restart.

use agentd_tests::harness::Client;
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::{
    Scenario, assert_seqs_increase, assert_tool_calls_paired, create_session, run_status,
    session_file,
};
use protocol::event::{Event, RunStatus};
use serde_json::{Value, json};

use crate::approvals::ASK;

/// The session's history from `session/get`.
async fn history(client: &mut Client, session: &str) -> Vec<Value> {
    let got = client
        .request(
            "session/get",
            json!({"sessionId": session, "includeHistory": true}),
        )
        .await
        .expect("session/get");
    got["history"].as_array().expect("history").clone()
}

/// Asserts every tool call in a history has exactly one result.
fn assert_history_paired(history: &[Value]) {
    for message in history {
        for call in message["toolCalls"].as_array().into_iter().flatten() {
            let id = &call["id"];
            let results = history
                .iter()
                .filter(|m| m["role"] == "tool" && m["toolCallId"] == *id)
                .count();
            assert_eq!(
                results, 1,
                "tool call {id} has {results} results: {history:#?}"
            );
        }
    }
}

async fn stop_and_restart(s: &mut Scenario) {
    s.daemon.signal(libc::SIGTERM);
    let status = s.daemon.wait_exit().await;
    assert!(status.success(), "{status}");
    s.daemon.restart().await;
}

both_formats!(a_torn_tail_never_swallows_the_next_entry);
async fn a_torn_tail_never_swallows_the_next_entry(format: Format) {
    let mut s = Scenario::start(format).await;
    s.mock.push(Reply::tool_call("c1", "list_dir", json!({})));
    s.mock.push(Reply::text("listed"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "first").await;
    client.events_until_run_finished().await;
    drop(client);
    s.daemon.signal(libc::SIGTERM);
    assert!(s.daemon.wait_exit().await.success());

    // As if the daemon died writing the tool result: the file ends after the assistant's tool
    // call with half a line.
    let path = session_file(&s.daemon.env, &session);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let call = lines
        .iter()
        .position(|line| line.starts_with(r#"{"type":"message""#) && line.contains("\"c1\""))
        .expect("the assistant message with the tool call");
    let mut torn = lines[..=call].join("\n");
    torn.push_str("\n{\"type\":\"message\",\"message\":{\"role\":\"tool\",\"toolCa");
    std::fs::write(&path, torn).unwrap();

    // Two restarts and two prompts: the repaired result must survive both.
    s.daemon.restart().await;
    let mut client = s.client().await;
    client.subscribe(&session, None).await;
    s.mock.push(Reply::text("two"));
    client.prompt(&session, "second").await;
    assert_eq!(
        run_status(&client.events_until_run_finished().await),
        RunStatus::Completed
    );
    drop(client);
    stop_and_restart(&mut s).await;
    let mut client = s.client().await;
    assert_history_paired(&history(&mut client, &session).await);
    client.subscribe(&session, None).await;
    s.mock.push(Reply::text("three"));
    client.prompt(&session, "third").await;
    assert_eq!(
        run_status(&client.events_until_run_finished().await),
        RunStatus::Completed
    );
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 4);
    for request in &requests {
        assert_tool_calls_paired(format, request);
    }
    assert_history_paired(&history(&mut client, &session).await);
}

#[tokio::test]
async fn fifteen_cancels_mid_stream_leave_strictly_increasing_seqs() {
    let s = Scenario::start(Format::OpenAi).await;
    let (mut client, session) = s.session().await;
    for round in 0..15 {
        // Streams its first words, then waits: the cancel lands mid-stream.
        s.mock
            .push(Reply::text(format!("round {round} goes on and on")).stall_after_events(4));
        let run_id = client.prompt(&session, &format!("round {round}")).await;
        loop {
            if matches!(client.next_event().await.event, Event::MessageDelta { .. }) {
                break;
            }
        }
        let cancel = client
            .request("session/cancel", json!({"sessionId": session}))
            .await
            .unwrap();
        assert_eq!(cancel["runId"], json!(run_id), "{cancel}");
        let events = client.events_until_run_finished().await;
        assert_eq!(run_status(&events), RunStatus::Cancelled);
    }
    let info = client
        .request("session/get", json!({"sessionId": session}))
        .await
        .unwrap();
    let last = info["session"]["lastSeq"].as_u64().unwrap();

    let mut replayed = s.client().await;
    replayed.subscribe(&session, Some(0)).await;
    let events = replayed.events_through_seq(last).await;
    assert_seqs_increase(&events);
    assert_eq!(events.len() as u64, last, "a seq is missing: {events:#?}");
    assert!(events.iter().all(|e| !e.not_persisted), "{events:#?}");
    let text = std::fs::read_to_string(session_file(&s.daemon.env, &session)).unwrap();
    let seqs: Vec<u64> = text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok()?["seq"].as_u64())
        .collect();
    assert_eq!(seqs, (1..=last).collect::<Vec<u64>>());
}

both_formats!(a_run_whose_end_cannot_be_written_still_ends_and_the_log_recovers);
async fn a_run_whose_end_cannot_be_written_still_ends_and_the_log_recovers(format: Format) {
    let (mut s, fault) = Scenario::start_with_write_fault(format, "").await;
    let (mut client, session) = s.session().await;
    std::fs::write(&fault, r#""type":"runFinished""#).unwrap();

    s.mock.push(Reply::text("hello"));
    client.prompt(&session, "first").await;
    let events = client.events_until_run_finished().await;
    let finished = events.last().unwrap();
    assert!(finished.not_persisted, "{finished:?}");
    match &finished.event {
        Event::RunFinished { status, error, .. } => {
            assert_eq!(*status, RunStatus::Failed);
            let error = error.as_deref().unwrap_or_default();
            assert!(error.contains("could not be written"), "{error}");
        }
        other => panic!("expected runFinished, got {other:?}"),
    }
    let status = client.request("daemon/status", json!({})).await.unwrap();
    assert_eq!(status["counts"]["activeRuns"], json!(0), "{status}");

    // agentctl run ends too (exit 1, failed), instead of waiting for an end never written.
    s.mock.push(Reply::text("again"));
    let output = s
        .daemon
        .env
        .run_agentctl(&["run", "--session", &session, "again"])
        .await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("could not be written"),
        "{output:?}"
    );
    client.events_until_run_finished().await;

    // Space returns: the session goes on, and the log is whole after a restart.
    std::fs::remove_file(&fault).unwrap();
    s.mock.push(Reply::text("recovered"));
    client.prompt(&session, "third").await;
    assert_eq!(
        run_status(&client.events_until_run_finished().await),
        RunStatus::Completed
    );
    let before = client
        .request("session/get", json!({"sessionId": session}))
        .await
        .unwrap();
    drop(client);
    stop_and_restart(&mut s).await;
    let mut client = s.client().await;
    let messages: Vec<String> = history(&mut client, &session)
        .await
        .iter()
        .map(|m| {
            format!(
                "{}:{}",
                m["role"].as_str().unwrap(),
                m["content"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        messages,
        [
            "user:first",
            "assistant:hello",
            "user:again",
            "assistant:again",
            "user:third",
            "assistant:recovered"
        ]
    );
    let info = client
        .request("session/get", json!({"sessionId": session}))
        .await
        .unwrap();
    let last = info["session"]["lastSeq"].as_u64().unwrap();
    // The seqs the unsaved ends took are not given out again after a restart.
    assert_eq!(info["session"]["lastSeq"], before["session"]["lastSeq"]);
    client.subscribe(&session, Some(0)).await;
    let replayed = client.events_through_seq(last).await;
    assert_seqs_increase(&replayed);
    // The two ends that could not be written are reported as gaps, not skipped silently.
    let gaps = replayed
        .iter()
        .filter(|e| e.not_persisted && matches!(&e.event, Event::Warning { message } if message.contains("could not be read")))
        .count();
    assert_eq!(gaps, 2, "{replayed:#?}");
}

#[tokio::test]
async fn a_failed_session_create_leaves_no_file_and_the_daemon_serves() {
    let (s, fault) = Scenario::start_with_write_fault(Format::OpenAi, "").await;
    let mut client = s.client().await;
    std::fs::write(&fault, "").unwrap();
    let err = client
        .request(
            "session/create",
            json!({"cwd": s.workspace().display().to_string()}),
        )
        .await
        .unwrap_err();
    assert!(err.message.contains("no space left"), "{err:?}");
    let sessions_dir = s.daemon.env.path("state").join("agentd").join("sessions");
    let files: Vec<_> = std::fs::read_dir(&sessions_dir)
        .map(|dir| dir.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(files.is_empty(), "{files:?}");
    let list = client.request("session/list", json!({})).await.unwrap();
    assert_eq!(list["sessions"], json!([]), "{list}");

    std::fs::remove_file(&fault).unwrap();
    create_session(&mut client, &s.workspace()).await;
}

both_formats!(an_approval_whose_request_cannot_be_written_is_not_left_pending);
async fn an_approval_whose_request_cannot_be_written_is_not_left_pending(format: Format) {
    let (s, fault) = Scenario::start_with_write_fault(format, ASK).await;
    let (mut client, session) = s.session().await;
    std::fs::write(&fault, r#""type":"approvalRequested""#).unwrap();
    s.mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "touch asked"}),
    ));
    client.prompt(&session, "touch it").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Failed, "{events:#?}");
    let pending = client.request("approval/list", json!({})).await.unwrap();
    assert_eq!(pending["approvals"], json!([]), "{pending}");
    assert_history_paired(&history(&mut client, &session).await);
    assert!(!s.workspace().join("asked").exists());

    std::fs::remove_file(&fault).unwrap();
    s.mock.push(Reply::text("ok"));
    client.prompt(&session, "go on").await;
    client.events_until_run_finished().await;
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 2);
    assert_tool_calls_paired(format, &requests[1]);
}

#[tokio::test]
async fn a_client_request_id_finds_its_run_after_a_restart() {
    let mut s = Scenario::start(Format::OpenAi).await;
    let (mut client, session) = s.session().await;
    s.mock.push(Reply::text("once"));
    let prompt = json!({"sessionId": session, "text": "only once", "clientRequestId": "req-1"});
    let first = client
        .request("session/prompt", prompt.clone())
        .await
        .unwrap();
    client.events_until_run_finished().await;
    drop(client);
    stop_and_restart(&mut s).await;

    let mut client = s.client().await;
    let again = client.request("session/prompt", prompt).await.unwrap();
    assert_eq!(again["runId"], first["runId"], "{again}");
    assert_eq!(again["queued"], json!(false), "{again}");
    assert_eq!(s.mock.requests().len(), 1);
}

#[tokio::test]
async fn steers_and_follow_ups_queued_before_a_cancel_or_a_crash_are_reported() {
    // Resumes off: a crashed run ends and reports what it did not deliver (with them on, the
    // resumed run delivers it).
    let mut s = Scenario::start_with(Format::OpenAi, crate::restart_resume::RESUME_OFF).await;
    let (mut client, session) = s.session().await;
    s.mock.push(Reply::stall());
    client.prompt(&session, "one").await;
    client
        .persisted_events_until(|event| matches!(event, Event::TurnStarted { .. }))
        .await;
    let queued = client
        .request(
            "session/followUp",
            json!({"sessionId": session, "text": "later, please"}),
        )
        .await
        .unwrap();
    assert_eq!(queued["queued"], json!(true), "{queued}");
    client.cancel(&session).await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Cancelled);
    assert!(
        events.iter().any(
            |e| matches!(&e.event, Event::Warning { message } if message.contains("later, please"))
        ),
        "the queued follow-up is reported: {events:#?}"
    );

    // Queued, then the daemon dies: reported when the session loads again.
    s.mock.push(Reply::stall());
    client.prompt(&session, "two").await;
    client
        .persisted_events_until(|event| matches!(event, Event::TurnStarted { .. }))
        .await;
    client.follow_up(&session, "after the crash").await;
    client
        .persisted_events_until(|event| matches!(event, Event::FollowUpQueued { .. }))
        .await;
    let steered = client.steer(&session, "steer lost in the crash").await;
    assert_eq!(steered["queued"], json!(true), "{steered}");
    client
        .persisted_events_until(|event| matches!(event, Event::SteerQueued { .. }))
        .await;
    drop(client);
    s.daemon.kill().await;
    s.daemon.restart().await;
    let mut client = s.client().await;
    client.subscribe(&session, Some(0)).await;
    let replayed = client
        .persisted_events_until(|event| {
            matches!(
                event,
                Event::RunFinished {
                    status: RunStatus::Interrupted,
                    ..
                }
            )
        })
        .await;
    for text in ["after the crash", "steer lost in the crash"] {
        assert!(
            replayed
                .iter()
                .any(|e| matches!(&e.event, Event::Warning { message } if message.contains(text))),
            "{text:?} is reported: {replayed:#?}"
        );
    }
}

#[tokio::test]
async fn the_seq_of_an_unsaved_end_is_not_given_out_again_after_a_restart() {
    let (mut s, fault) = Scenario::start_with_write_fault(Format::OpenAi, "").await;
    let (mut client, session) = s.session().await;
    std::fs::write(&fault, r#""type":"runFinished""#).unwrap();
    s.mock.push(Reply::text("hello"));
    client.prompt(&session, "first").await;
    let unsaved = client.events_until_run_finished().await.pop().unwrap();
    assert!(unsaved.not_persisted, "{unsaved:?}");
    drop(client);
    // Stopped before any later write: the gap is recorded on the way out. After the restart
    // the interrupted run is closed with a new seq, after the unsaved one.
    s.daemon.signal(libc::SIGTERM);
    assert!(s.daemon.wait_exit().await.success());
    std::fs::remove_file(&fault).unwrap();
    s.daemon.restart().await;
    let mut client = s.client().await;
    let info = client
        .request("session/get", json!({"sessionId": session}))
        .await
        .unwrap();
    assert_eq!(
        info["session"]["lastSeq"].as_u64().unwrap(),
        unsaved.seq + 1,
        "{info} vs the unsaved end at seq {}",
        unsaved.seq
    );
}

#[tokio::test]
async fn a_message_that_cannot_be_written_is_neither_announced_nor_kept() {
    let (mut s, fault) = Scenario::start_with_write_fault(Format::OpenAi, "").await;
    let (mut client, session) = s.session().await;
    // Only the user message line of this prompt fails (its event and runStarted differ).
    std::fs::write(&fault, r#"{"role":"user","content":"lost words"}"#).unwrap();
    client.prompt(&session, "lost words").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Failed, "{events:#?}");
    assert!(
        !events
            .iter()
            .any(|e| matches!(&e.event, Event::MessageCompleted { .. })),
        "a message that was not written was announced: {events:#?}"
    );
    assert_eq!(history(&mut client, &session).await, Vec::<Value>::new());

    // Space returns: the next prompt goes on from a history without it, in memory and on disk.
    std::fs::remove_file(&fault).unwrap();
    s.mock.push(Reply::text("fine"));
    client.prompt(&session, "kept").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed, "{events:#?}");
    let contents = |history: Vec<Value>| -> Vec<String> {
        history
            .iter()
            .map(|m| {
                format!(
                    "{}:{}",
                    m["role"].as_str().unwrap(),
                    m["content"].as_str().unwrap()
                )
            })
            .collect()
    };
    let expected = ["user:kept", "assistant:fine"];
    assert_eq!(contents(history(&mut client, &session).await), expected);
    let sent = s.mock.requests().last().unwrap().body.clone();
    assert!(!sent.contains("lost words"), "{sent}");
    drop(client);
    stop_and_restart(&mut s).await;
    let mut client = s.client().await;
    assert_eq!(contents(history(&mut client, &session).await), expected);
}
