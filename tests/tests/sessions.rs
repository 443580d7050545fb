//! Sessions end to end through raw JSON-RPC against the real daemon and the mock LLM, in both
//! wire formats: methods and their errors, prompt conflicts and idempotency, subscriptions and
//! replay, restarts and crashes, the daemon-wide stream and the byte-exact request prefix.

use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::error as codes;
use protocol::event::{Event, RunStatus};
use serde_json::{Value, json};

both_formats!(session_methods_validate_and_paginate);
async fn session_methods_validate_and_paginate(format: Format) {
    let s = Scenario::start(format).await;
    let mut client = s.client().await;
    for params in [
        json!({"cwd": "relative/dir"}),
        json!({"cwd": s.workspace().join("missing").display().to_string()}),
        json!({}),
    ] {
        let err = client
            .request("session/create", params.clone())
            .await
            .unwrap_err();
        assert_eq!(err.code, codes::INVALID_PARAMS as i64, "{params}: {err:?}");
    }
    for method in ["session/get", "session/delete"] {
        let err = client
            .request(method, json!({"sessionId": "ses_nope"}))
            .await
            .unwrap_err();
        assert_eq!(err.code, codes::NOT_FOUND as i64, "{method}: {err:?}");
    }

    let first = create_session(&mut client, &s.workspace()).await;
    let second = create_session(&mut client, &s.workspace()).await;
    let page = client
        .request("session/list", json!({"limit": 1}))
        .await
        .unwrap();
    assert_eq!(page["sessions"].as_array().unwrap().len(), 1, "{page}");
    let cursor = page["nextCursor"].as_str().expect("nextCursor").to_owned();
    let rest = client
        .request("session/list", json!({"limit": 1, "cursor": cursor}))
        .await
        .unwrap();
    assert_eq!(rest["sessions"].as_array().unwrap().len(), 1, "{rest}");
    assert!(rest.get("nextCursor").is_none(), "{rest}");
    let mut ids = vec![
        page["sessions"][0]["sessionId"]
            .as_str()
            .unwrap()
            .to_owned(),
        rest["sessions"][0]["sessionId"]
            .as_str()
            .unwrap()
            .to_owned(),
    ];
    ids.sort();
    let mut expected = vec![first.clone(), second.clone()];
    expected.sort();
    assert_eq!(ids, expected);

    let file = session_file(&s.daemon.env, &first);
    assert!(file.is_file(), "{}", file.display());
    let deleted = client
        .request("session/delete", json!({"sessionId": first}))
        .await
        .unwrap();
    assert_eq!(deleted, json!({"deleted": true}));
    assert!(!file.exists(), "the session file is removed");
    let err = client
        .request("session/get", json!({"sessionId": first}))
        .await
        .unwrap_err();
    assert_eq!(err.code, codes::NOT_FOUND as i64);
    let list = client.request("session/list", json!({})).await.unwrap();
    assert_eq!(list["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(list["sessions"][0]["sessionId"], json!(second));
}

both_formats!(a_prompt_during_a_run_conflicts_or_queues_and_request_ids_are_idempotent);
async fn a_prompt_during_a_run_conflicts_or_queues_and_request_ids_are_idempotent(format: Format) {
    let s = Scenario::start(format).await;
    let gate = s.workspace().join("gate.fifo");
    mkfifo(&gate);
    s.mock.push(Reply::tool_call(
        "c_wait",
        "run_shell",
        json!({"command": "cat gate.fifo"}),
    ));
    s.mock.push(Reply::text("first"));
    s.mock.push(Reply::text("queued answer"));
    let (mut client, session) = s.session().await;
    let first = client
        .request(
            "session/prompt",
            json!({"sessionId": session, "text": "go", "clientRequestId": "req-1"}),
        )
        .await
        .unwrap();
    let run_id = first["runId"].as_str().unwrap().to_owned();
    assert_eq!(first["queued"], json!(false));
    // The same request id again is the same run, not a conflict.
    let again = client
        .request(
            "session/prompt",
            json!({"sessionId": session, "text": "go", "clientRequestId": "req-1"}),
        )
        .await
        .unwrap();
    assert_eq!(again["runId"], json!(run_id));
    let mut events = client
        .persisted_events_until(|event| matches!(event, Event::ToolStarted { .. }))
        .await;

    let err = client
        .request(
            "session/prompt",
            json!({"sessionId": session, "text": "interrupting"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, codes::CONFLICT as i64);
    assert!(
        err.message.contains("steer") && err.message.contains("follow"),
        "{}",
        err.message
    );
    let queued = client
        .request(
            "session/prompt",
            json!({"sessionId": session, "text": "later please", "queueIfBusy": true}),
        )
        .await
        .unwrap();
    assert_eq!(queued, json!({"runId": run_id, "queued": true}));
    write_fifo(&gate, "x\n").await;
    events.extend(client.events_until_run_finished().await);
    assert_eq!(run_status(&events), RunStatus::Completed);
    let runs = events
        .iter()
        .filter(|e| matches!(e.event, Event::RunStarted { .. }))
        .count();
    assert_eq!(runs, 1, "one run for one request id: {events:#?}");
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        request_user_texts(format, &requests[2]),
        ["go", "later please"]
    );
    // After the run, the id still maps to the same run.
    let after = client
        .request(
            "session/prompt",
            json!({"sessionId": session, "text": "go", "clientRequestId": "req-1"}),
        )
        .await
        .unwrap();
    assert_eq!(after["runId"], json!(run_id));
    let got = client
        .request("session/get", json!({"sessionId": session}))
        .await
        .unwrap();
    assert_eq!(got["session"]["status"], "idle");
    assert_eq!(s.mock.requests().len(), 3);
}

both_formats!(two_subscribers_see_the_same_events);
async fn two_subscribers_see_the_same_events(format: Format) {
    let s = Scenario::start(format).await;
    s.mock
        .push(Reply::tool_call("c1", "list_dir", json!({})).with_text("looking"));
    s.mock.push(Reply::text("done"));
    let (mut first, session) = s.session().await;
    let mut second = s.client().await;
    second.subscribe(&session, Some(0)).await;
    first.prompt(&session, "hello").await;
    let a = first.events_until_run_finished().await;
    let b = second.events_until_run_finished().await;
    assert_eq!(a, b);
    assert_seqs_increase(&a);
    assert_eq!(run_status(&a), RunStatus::Completed);
}

both_formats!(replay_after_a_seq_then_live_without_gap_or_duplicate);
async fn replay_after_a_seq_then_live_without_gap_or_duplicate(format: Format) {
    let s = Scenario::start(format).await;
    s.mock.push(Reply::tool_call("c1", "list_dir", json!({})));
    s.mock.push(Reply::text("first run done"));
    s.mock.push(Reply::text("second run done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "one").await;
    let first_run = client.events_until_run_finished().await;
    // Persisted seqs have no holes.
    for (i, e) in first_run.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1, "{first_run:#?}");
    }
    let k = first_run[4].seq;

    let mut late = s.client().await;
    late.subscribe(&session, Some(k)).await;
    let replayed = late.events_until_run_finished().await;
    let expected: Vec<Envelope> = first_run.iter().filter(|e| e.seq > k).cloned().collect();
    assert_eq!(replayed, expected);

    // Live events continue right after the replay.
    client.prompt(&session, "two").await;
    let live = late.events_until_run_finished().await;
    let own = client.events_until_run_finished().await;
    assert_eq!(live, own);
    assert_eq!(live[0].seq, first_run.last().unwrap().seq + 1, "{live:#?}");
    for pair in live.windows(2) {
        assert_eq!(pair[1].seq, pair[0].seq + 1, "gap or duplicate: {live:#?}");
    }
    // A subscriber caught up to the end gets only new events.
    let info = client
        .request("session/get", json!({"sessionId": session}))
        .await
        .unwrap();
    assert_eq!(info["session"]["lastSeq"], json!(live.last().unwrap().seq));
}

both_formats!(a_session_survives_a_restart_and_continues);
async fn a_session_survives_a_restart_and_continues(format: Format) {
    let mut s = Scenario::start(format).await;
    s.mock.push(Reply::tool_call("c1", "list_dir", json!({})));
    s.mock.push(Reply::text("before restart"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "first").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    drop(client);

    s.daemon.signal(libc::SIGTERM);
    let status = s.daemon.wait_exit().await;
    assert!(status.success(), "{status}");
    s.daemon.restart().await;

    let mut client = s.client().await;
    let list = client.request("session/list", json!({})).await.unwrap();
    assert_eq!(list["sessions"][0]["sessionId"], json!(session), "{list}");
    let got = client
        .request(
            "session/get",
            json!({"sessionId": session, "includeHistory": true}),
        )
        .await
        .unwrap();
    let roles: Vec<&str> = got["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"], "{got}");
    assert_eq!(got["history"][3]["content"], "before restart");

    client.subscribe(&session, None).await;
    s.mock.push(Reply::text("after restart"));
    client.prompt(&session, "second").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        request_transcript(format, &requests[2]),
        [
            "user:first",
            "call:c1",
            "result:c1",
            "assistant:before restart",
            "user:second",
        ]
    );
    assert_prefix_extension(format, &requests[1], &requests[2]);
}

both_formats!(a_crash_mid_run_is_recorded_as_interrupted_after_restart);
async fn a_crash_mid_run_is_recorded_as_interrupted_after_restart(format: Format) {
    // Resumes off: the run ends interrupted (with them on it goes on: `restart_resume`).
    let mut s = Scenario::start_with(format, crate::restart_resume::RESUME_OFF).await;
    s.mock.push(Reply::tool_call(
        "c_block",
        "run_shell",
        json!({"command": "echo $$ > shell.pid; exec sleep 60"}),
    ));
    let (mut client, session) = s.session().await;
    let run_id = client.prompt(&session, "block").await;
    client
        .persisted_events_until(|event| matches!(event, Event::ToolStarted { .. }))
        .await;
    let pid_file = s.workspace().join("shell.pid");
    wait_until("the shell pid file", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|text| text.ends_with('\n'))
    })
    .await;
    let shell: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    s.daemon.kill().await;
    // The crashed daemon could not kill its tool's process group; the test cleans up.
    // SAFETY: kill has no memory-safety preconditions; the group is the shell's own.
    unsafe {
        libc::kill(-shell, libc::SIGKILL);
    }
    drop(client);
    s.daemon.restart().await;

    let mut client = s.client().await;
    let got = client
        .request(
            "session/get",
            json!({"sessionId": session, "includeHistory": true}),
        )
        .await
        .unwrap();
    assert_eq!(got["session"]["status"], "idle", "{got}");
    let last = got["history"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "tool", "{got}");
    assert_eq!(last["toolCallId"], "c_block");
    assert_eq!(last["isError"], json!(true));
    assert!(
        last["content"].as_str().unwrap().starts_with("interrupted"),
        "{last}"
    );
    client.subscribe(&session, Some(0)).await;
    let replayed = client.events_until_run_finished().await;
    assert!(
        matches!(&replayed.last().unwrap().event, Event::RunFinished { run_id: r, status: RunStatus::Interrupted, .. } if *r == run_id),
        "{replayed:#?}"
    );

    // The conversation goes on, with the interrupted result paired with its call.
    s.mock.push(Reply::text("carrying on"));
    client.prompt(&session, "continue").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 2);
    let seen = request_tool_results(format, &requests[1]);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, "c_block");
    assert!(seen[0].1.starts_with("interrupted"), "{seen:?}");
}

both_formats!(requests_of_a_session_extend_each_other_byte_for_byte);
async fn requests_of_a_session_extend_each_other_byte_for_byte(format: Format) {
    let s = Scenario::start(format).await;
    std::fs::write(s.workspace().join("a.txt"), "alpha\n").unwrap();
    s.mock
        .push(Reply::tool_call("c1", "read_file", json!({"path": "a.txt"})).with_text("reading"));
    s.mock.push(Reply::tool_calls(vec![
        ("c2", "glob", json!({"pattern": "*.txt"}).to_string()),
        ("c3", "grep", json!({"pattern": "alpha"}).to_string()),
    ]));
    s.mock.push(Reply::text("found it"));
    s.mock.push(Reply::text("second answer"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "find alpha").await;
    client.events_until_run_finished().await;
    client.prompt(&session, "and again").await;
    client.events_until_run_finished().await;

    let requests = s.mock.requests();
    assert_eq!(requests.len(), 4);
    for pair in requests.windows(2) {
        assert_prefix_extension(format, &pair[0], &pair[1]);
    }
}

/// `next` extends `previous`: the same system prompt and tools, byte for byte, and the
/// previous body up to the end of its messages is a prefix of the next body (Anthropic's
/// moving `cache_control` breakpoint removed first).
fn assert_prefix_extension(
    format: Format,
    previous: &agentd_tests::mock_llm::RecordedRequest,
    next: &agentd_tests::mock_llm::RecordedRequest,
) {
    let (short, long) = (
        without_cache_control(&previous.body),
        without_cache_control(&next.body),
    );
    // The messages array is the body's last field: cut its closing brackets (OpenAI: the array
    // and the body; Anthropic also the last message's content array and the message).
    let closing = match format {
        Format::OpenAi => "]}",
        Format::Anthropic => "]}]}",
    };
    let prefix = short
        .strip_suffix(closing)
        .unwrap_or_else(|| panic!("{format:?} body does not end with {closing}: {short}"));
    assert!(
        long.starts_with(prefix),
        "{format:?}: the next body does not extend the previous one\nprevious: {short}\nnext:     {long}"
    );
    assert!(long.len() > short.len());
    for field in ["system", "tools", "model"] {
        assert_eq!(
            previous.json.get(field),
            next.json.get(field),
            "{field} changed"
        );
    }
    let previous_messages = previous.json["messages"].as_array().unwrap();
    let next_messages = next.json["messages"].as_array().unwrap();
    assert!(next_messages.len() >= previous_messages.len());
    if format == Format::OpenAi {
        assert!(previous.json["system"].is_null());
        assert_eq!(previous_messages[0], next_messages[0], "system message");
        assert_eq!(
            &next_messages[..previous_messages.len()],
            &previous_messages[..]
        );
    }
}

both_formats!(daemon_subscribers_see_lifecycle_events_of_every_session);
async fn daemon_subscribers_see_lifecycle_events_of_every_session(format: Format) {
    let s = Scenario::start(format).await;
    let mut watcher = s.client().await;
    watcher
        .request("daemon/subscribe", json!({}))
        .await
        .unwrap();
    s.mock.push(Reply::text("hi"));
    let mut client = s.client().await;
    let session = create_session(&mut client, &s.workspace()).await;
    let run_id = client.prompt(&session, "hello").await;

    let mut seen: Vec<Value> = Vec::new();
    loop {
        let message = watcher.next_notification().await;
        assert_eq!(
            message["method"],
            protocol::event::DAEMON_EVENT,
            "{message}"
        );
        let envelope = message["params"].clone();
        assert_eq!(envelope["sessionId"], json!(session), "{envelope}");
        let done = envelope["event"]["type"] == "runFinished";
        seen.push(envelope);
        if done {
            break;
        }
    }
    let types: Vec<&str> = seen
        .iter()
        .map(|e| e["event"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["sessionCreated", "runStarted", "runFinished"]);
    assert_eq!(seen[1]["event"]["runId"], json!(run_id));
    assert_eq!(seen[2]["event"]["status"], "completed");
    let seqs: Vec<u64> = seen.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[1] > w[0]), "{seqs:?}");
}

both_formats!(a_graceful_stop_mid_run_ends_it_interrupted_once);
async fn a_graceful_stop_mid_run_ends_it_interrupted_once(format: Format) {
    // Resumes off: the run ends interrupted (with them on it goes on: `restart_resume`).
    let mut s = Scenario::start_with(format, crate::restart_resume::RESUME_OFF).await;
    let gate = s.workspace().join("gate.fifo");
    mkfifo(&gate);
    s.mock.push(Reply::tool_call(
        "c_wait",
        "run_shell",
        json!({"command": "cat gate.fifo"}),
    ));
    let (mut client, session) = s.session().await;
    let run_id = client.prompt(&session, "block").await;
    client
        .persisted_events_until(|event| matches!(event, Event::ToolStarted { .. }))
        .await;
    s.daemon.signal(libc::SIGTERM);
    let status = s.daemon.wait_exit().await;
    assert!(status.success(), "{status}");
    // What the daemon sent before it exited is still in the socket.
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Interrupted, "{events:#?}");
    drop(client);
    s.daemon.restart().await;

    let mut client = s.client().await;
    let got = client
        .request(
            "session/get",
            json!({"sessionId": session, "includeHistory": true}),
        )
        .await
        .unwrap();
    let history = got["history"].as_array().unwrap();
    let results: Vec<&Value> = history.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(results.len(), 1, "one result for the one call: {got}");
    assert_eq!(results[0]["toolCallId"], "c_wait");
    client.subscribe(&session, Some(0)).await;
    let last_seq = got["session"]["lastSeq"].as_u64().unwrap();
    let replayed = client.events_through_seq(last_seq).await;
    let finished: Vec<&Event> = replayed
        .iter()
        .map(|e| &e.event)
        .filter(|e| matches!(e, Event::RunFinished { .. }))
        .collect();
    assert_eq!(finished.len(), 1, "runFinished once: {replayed:#?}");
    assert!(
        matches!(finished[0], Event::RunFinished { run_id: r, status: RunStatus::Interrupted, .. } if *r == run_id)
    );
}

both_formats!(a_client_disconnecting_never_cancels_its_run);
async fn a_client_disconnecting_never_cancels_its_run(format: Format) {
    let s = Scenario::start(format).await;
    let gate = s.workspace().join("gate.fifo");
    mkfifo(&gate);
    s.mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "read line < gate.fifo; echo got $line"}),
    ));
    s.mock.push(Reply::text("finished without my client"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "work while I am away").await;
    client
        .persisted_events_until(|event| matches!(event, Event::ToolStarted { .. }))
        .await;
    drop(client);

    // The run goes on without any client; a new one replays how it ended.
    write_fifo(&gate, "go\n").await;
    let mut observer = s.client().await;
    observer.subscribe(&session, Some(0)).await;
    let events = observer.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert!(
        events.iter().any(
            |e| matches!(&e.event, Event::ToolCompleted { output, .. } if output.contains("got go"))
        ),
        "{events:#?}"
    );
}

/// A subscriber that stops reading never slows the run; when it reads again it gets a
/// `lagged` marker and then every persisted event, with no gap and no duplicate.
#[tokio::test]
async fn a_subscriber_that_stops_reading_lags_then_resyncs_without_gaps() {
    let s = Scenario::start(Format::OpenAi).await;
    // Far more events than the connection queue (1024), the socket buffer and the session's
    // live buffer (256) hold together: a few model turns with hundreds of parallel calls each,
    // so the history (and each request) stays small.
    std::fs::write(s.workspace().join("big.txt"), "tiny\n").unwrap();
    for turn in 0..4 {
        let calls: Vec<(String, String, String)> = (0..500)
            .map(|i| {
                (
                    format!("c{turn}_{i}"),
                    "read_file".to_owned(),
                    json!({"path": "big.txt"}).to_string(),
                )
            })
            .collect();
        s.mock.push(Reply::tool_calls(calls));
    }
    s.mock.push(Reply::text("read it all"));

    let (mut slow, session) = s.session().await;
    let mut observer = s.client().await;
    observer.subscribe(&session, Some(0)).await;
    slow.prompt(&session, "read big.txt many times").await;
    // `slow` reads nothing from here on, yet the run finishes.
    let observed = observer.events_until_run_finished().await;
    assert_eq!(run_status(&observed), RunStatus::Completed);
    let last_seq = observed.last().unwrap().seq;

    let mut seqs = Vec::new();
    let mut lagged = false;
    loop {
        let envelope = slow.next_event().await;
        match envelope.event {
            Event::Lagged {} => lagged = true,
            ref event if event.is_persisted() => {
                seqs.push(envelope.seq);
                if matches!(event, Event::RunFinished { .. }) {
                    break;
                }
            }
            _ => {}
        }
    }
    assert!(lagged, "the slow subscriber was never told it lagged");
    let expected: Vec<u64> = (1..=last_seq).collect();
    assert_eq!(seqs.len(), expected.len(), "gaps or duplicates");
    assert_eq!(seqs, expected);
}

#[tokio::test]
async fn unsubscribe_stops_one_subscription_and_keeps_the_others() {
    let s = Scenario::start(Format::OpenAi).await;
    s.mock.push(Reply::text("hello"));
    let mut client = s.client().await;
    let session = create_session(&mut client, &s.workspace()).await;
    let dropped = client.subscribe(&session, None).await;
    let kept = client.subscribe(&session, None).await;
    assert!(client.unsubscribe(&dropped).await);
    client.prompt(&session, "hi").await;
    loop {
        let message = client.next_notification().await;
        let subscription = &message["params"]["subscriptionId"];
        assert_ne!(subscription, &dropped, "event after unsubscribe: {message}");
        assert_eq!(subscription, &kept);
        if message["params"]["event"]["type"] == "runFinished" {
            break;
        }
    }
}
