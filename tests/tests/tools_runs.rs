//! Runs end to end through raw JSON-RPC against the real daemon and the mock LLM, in both wire
//! formats: tool batches (sequential, parallel, errors), LLM retries and failures, cancel,
//! steer, follow-up and the step limit.

use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::error as codes;
use protocol::event::{Event, MessageRole, RunStatus, UserMessageKind};
use serde_json::json;

both_formats!(multi_step_tool_use_writes_and_reads_files);
async fn multi_step_tool_use_writes_and_reads_files(format: Format) {
    let s = Scenario::start(format).await;
    s.mock.push(Reply::tool_call(
        "call_w",
        "write_file",
        json!({"path": "notes/a.txt", "content": "hello\nworld\n"}),
    ));
    s.mock.push(Reply::tool_call(
        "call_r",
        "read_file",
        json!({"path": "notes/a.txt"}),
    ));
    s.mock.push(Reply::text("All done"));
    let (mut client, session) = s.session().await;
    let run_id = client.prompt(&session, "write then read").await;
    let events = client.events_until_run_finished().await;

    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(
        std::fs::read_to_string(s.workspace().join("notes/a.txt")).unwrap(),
        "hello\nworld\n"
    );
    assert_eq!(
        kinds(&events),
        [
            "sessionCreated",
            "runStarted",
            "messageCompleted",
            "turnStarted",
            "messageCompleted",
            "usageUpdated",
            // The run's start, before its first batch that can write (write_file).
            "checkpointed",
            "toolStarted",
            "toolCompleted",
            "turnStarted",
            "messageCompleted",
            "usageUpdated",
            "toolStarted",
            "toolCompleted",
            "turnStarted",
            "messageCompleted",
            "usageUpdated",
            // What the write left, before the run's end.
            "checkpointed",
            "runFinished",
        ]
    );
    assert_seqs_increase(&events);
    assert!(
        matches!(&events[2].event, Event::MessageCompleted { role: MessageRole::User, content, kind: Some(UserMessageKind::Prompt), .. } if content == "write then read"),
        "{:?}",
        events[2]
    );
    assert!(
        events[1..]
            .iter()
            .all(|e| e.event.run_id() == Some(run_id.as_str())),
        "every run event carries the run id {run_id}"
    );
    let results = tool_results(&events);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].0, "call_w");
    assert!(!results[0].2, "write_file failed: {}", results[0].1);
    assert_eq!(results[1].0, "call_r");
    assert!(!results[1].2, "read_file failed: {}", results[1].1);
    assert!(
        results[1].1.contains("hello") && results[1].1.contains("world"),
        "{}",
        results[1].1
    );
    // The model read both results, each after its call.
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        request_transcript(format, &requests[2]),
        [
            "user:write then read",
            "call:call_w",
            "result:call_w",
            "call:call_r",
            "result:call_r",
        ]
    );
    let seen = request_tool_results(format, &requests[2]);
    assert!(seen[1].1.contains("world"), "{seen:?}");
}

both_formats!(a_read_only_batch_runs_in_parallel_and_keeps_the_models_order);
async fn a_read_only_batch_runs_in_parallel_and_keeps_the_models_order(format: Format) {
    // The gate listens on 127.0.0.1, which fetch_url reaches only when a rule names it.
    let s = Scenario::start_with(
        format,
        "[permissions]\ndefault_mode = \"bypass\"\nallow = [\"WebFetch(domain:127.0.0.1)\"]\n",
    )
    .await;
    // A fetch through the gate waits until the test opens it: both calls can only have started
    // together if they run concurrently, and the test picks which one finishes first. (Read
    // tools refuse FIFOs, which used to be the gate.)
    let gate = agentd_tests::gate::HttpGate::start().await;
    s.mock.push(Reply::tool_calls(vec![
        (
            "c_a",
            "fetch_url",
            json!({"url": gate.url("a")}).to_string(),
        ),
        (
            "c_b",
            "fetch_url",
            json!({"url": gate.url("b")}).to_string(),
        ),
    ]));
    s.mock.push(Reply::text("read both"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "fetch both").await;

    let mut started = 0;
    let mut events = client
        .persisted_events_until(|event| {
            started += matches!(event, Event::ToolStarted { .. }) as u32;
            assert!(
                !matches!(event, Event::ToolCompleted { .. }),
                "a call completed before both started: {event:?}"
            );
            started == 2
        })
        .await;
    // Finish b first, then a.
    gate.open("b", "from b\n");
    events.extend(
        client
            .persisted_events_until(|event| matches!(event, Event::ToolCompleted { .. }))
            .await,
    );
    gate.open("a", "from a\n");
    events.extend(client.events_until_run_finished().await);

    assert_eq!(run_status(&events), RunStatus::Completed);
    let completed: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ToolCompleted { tool_call_id, .. } => Some(tool_call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(completed, ["c_b", "c_a"], "completion order");
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 2);
    let seen = request_tool_results(format, &requests[1]);
    assert_eq!(
        seen.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["c_a", "c_b"],
        "results reach the model in the model's order"
    );
    assert!(seen[0].1.contains("from a"), "{seen:?}");
    assert!(seen[1].1.contains("from b"), "{seen:?}");
}

both_formats!(a_write_in_the_batch_makes_it_sequential);
async fn a_write_in_the_batch_makes_it_sequential(format: Format) {
    let s = Scenario::start(format).await;
    s.mock.push(Reply::tool_calls(vec![
        (
            "c_w",
            "write_file",
            json!({"path": "s.txt", "content": "sequential"}).to_string(),
        ),
        ("c_r", "read_file", json!({"path": "s.txt"}).to_string()),
    ]));
    s.mock.push(Reply::text("ok"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "write and read").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let tool_events: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ToolStarted { tool_call_id, .. } => {
                Some(("started".to_owned(), tool_call_id.clone()))
            }
            Event::ToolCompleted { tool_call_id, .. } => {
                Some(("completed".to_owned(), tool_call_id.clone()))
            }
            _ => None,
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("started", "c_w"),
        ("completed", "c_w"),
        ("started", "c_r"),
        ("completed", "c_r"),
    ]
    .iter()
    .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
    .collect();
    assert_eq!(tool_events, expected);
    let results = tool_results(&events);
    assert!(results[1].1.contains("sequential"), "{results:?}");
}

both_formats!(unknown_tools_and_bad_arguments_are_results_the_model_reads);
async fn unknown_tools_and_bad_arguments_are_results_the_model_reads(format: Format) {
    let s = Scenario::start(format).await;
    s.mock.push(Reply::tool_calls(vec![
        ("c_unknown", "no_such_tool", "{}"),
        ("c_bad", "read_file", "{not json"),
    ]));
    s.mock.push(Reply::text("recovered"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "try things").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let results = tool_results(&events);
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r.2), "both are errors: {results:?}");

    let requests = s.mock.requests();
    assert_eq!(requests.len(), 2);
    let seen = request_tool_results(format, &requests[1]);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].0, "c_unknown");
    assert!(
        seen[0].1.contains("unknown tool `no_such_tool`"),
        "{}",
        seen[0].1
    );
    assert_eq!(seen[1].0, "c_bad");
    assert!(seen[1].1.contains("invalid arguments"), "{}", seen[1].1);
    if format == Format::Anthropic {
        let blocks = requests[1].json["messages"][2]["content"].clone();
        assert_eq!(blocks[0]["is_error"], json!(true), "{blocks}");
    }
}

both_formats!(rate_limits_and_cut_streams_are_retried_a_rejected_key_is_not);
async fn rate_limits_and_cut_streams_are_retried_a_rejected_key_is_not(format: Format) {
    let s = Scenario::start(format).await;
    let (mut client, session) = s.session().await;

    // 429 with Retry-After: 1 s, capped by retry_max_delay_ms = 200 (the backoff alone would
    // wait about 10 ms, so "0.2s" shows the header was honoured).
    s.mock
        .push(Reply::error(429, "slow down").retry_after_secs(1));
    s.mock.push(Reply::text("after the rate limit"));
    client.prompt(&session, "one").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
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
    assert_eq!(retries.len(), 1, "{events:#?}");
    assert!(retries[0].contains("retrying in 0.2s"), "{}", retries[0]);
    assert_eq!(s.mock.requests().len(), 2);

    // A stream cut before any output is retried.
    s.mock.push(Reply::text("lost").cut_after_events(1));
    s.mock.push(Reply::text("after the cut"));
    client.prompt(&session, "two").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert!(
        events.iter().any(|e| matches!(
            &e.event,
            Event::Error {
                will_retry: true,
                ..
            }
        )),
        "{events:#?}"
    );
    assert!(
        events.iter().any(|e| matches!(&e.event, Event::MessageCompleted { role: MessageRole::Assistant, content, .. } if content == "after the cut")),
        "{events:#?}"
    );
    assert_eq!(s.mock.requests().len(), 4);

    // A rejected key fails at once, clearly, with one request.
    s.mock.push(Reply::error(401, "invalid x-api-key"));
    s.mock.push(Reply::text("never sent"));
    client.prompt(&session, "three").await;
    let events = client.events_until_run_finished().await;
    let Some(Event::RunFinished {
        status: RunStatus::Failed,
        error: Some(error),
        ..
    }) = events.last().map(|e| &e.event)
    else {
        panic!("expected runFinished{{failed}}: {events:#?}");
    };
    assert!(error.contains("API key"), "{error}");
    assert_eq!(s.mock.requests().len(), 5);
    assert_eq!(s.mock.remaining(), 1);
}

both_formats!(cancel_kills_a_running_shell_and_its_children);
async fn cancel_kills_a_running_shell_and_its_children(format: Format) {
    let s = Scenario::start(format).await;
    s.mock.push(Reply::tool_call(
        "c_sh",
        "run_shell",
        json!({"command": "sleep 30 & echo $! > pid; wait"}),
    ));
    let (mut client, session) = s.session().await;
    let run_id = client.prompt(&session, "run it").await;
    let mut events = client
        .persisted_events_until(|event| matches!(event, Event::ToolStarted { .. }))
        .await;
    let pid_file = s.workspace().join("pid");
    wait_until("the pid file", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|text| text.ends_with('\n'))
    })
    .await;
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!process_gone(pid), "the grandchild runs before the cancel");

    let cancel = client
        .request("session/cancel", json!({"sessionId": session}))
        .await
        .unwrap();
    assert_eq!(cancel, json!({"cancelled": true, "runId": run_id}));
    events.extend(client.events_until_run_finished().await);
    assert_eq!(run_status(&events), RunStatus::Cancelled);
    assert_eq!(
        tool_results(&events),
        [("c_sh".to_owned(), "cancelled".to_owned(), true)]
    );
    wait_until(&format!("process {pid} to die"), || process_gone(pid)).await;

    // The orphaned call is paired in history, and the session is idle again.
    let got = client
        .request(
            "session/get",
            json!({"sessionId": session, "includeHistory": true}),
        )
        .await
        .unwrap();
    assert_eq!(got["session"]["status"], "idle");
    let history = got["history"].as_array().unwrap();
    let last = history.last().unwrap();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["toolCallId"], "c_sh");
    assert_eq!(last["content"], "cancelled");
    // Cancelling an idle session is not an error.
    let cancel = client
        .request("session/cancel", json!({"sessionId": session}))
        .await
        .unwrap();
    assert_eq!(cancel, json!({"cancelled": false}));
}

both_formats!(a_steer_skips_the_rest_of_the_batch_and_reaches_the_model);
async fn a_steer_skips_the_rest_of_the_batch_and_reaches_the_model(format: Format) {
    let s = Scenario::start(format).await;
    let gate = s.workspace().join("gate.fifo");
    mkfifo(&gate);
    s.mock.push(Reply::tool_calls(vec![
        (
            "c_wait",
            "run_shell",
            json!({"command": "read line < gate.fifo; echo got $line"}).to_string(),
        ),
        (
            "c_skip",
            "write_file",
            json!({"path": "never.txt", "content": "x"}).to_string(),
        ),
    ]));
    s.mock.push(Reply::text("changing course"));
    let (mut client, session) = s.session().await;
    let run_id = client.prompt(&session, "do two things").await;
    let mut events = client
        .persisted_events_until(|event| matches!(event, Event::ToolStarted { .. }))
        .await;
    let steer = client
        .request(
            "session/steer",
            json!({"sessionId": session, "text": "stop, do something else"}),
        )
        .await
        .unwrap();
    assert_eq!(steer, json!({"runId": run_id, "queued": true}));
    write_fifo(&gate, "go\n").await;
    events.extend(client.events_until_run_finished().await);

    assert_eq!(run_status(&events), RunStatus::Completed);
    let results = tool_results(&events);
    assert_eq!(results[0].0, "c_wait");
    assert!(results[0].1.contains("got go"), "{results:?}");
    assert_eq!(
        results[1],
        (
            "c_skip".to_owned(),
            "skipped: user steered".to_owned(),
            true
        )
    );
    assert!(!s.workspace().join("never.txt").exists());
    assert!(
        events.iter().any(|e| matches!(&e.event, Event::SteerDelivered { text, .. } if text == "stop, do something else")),
        "{events:#?}"
    );
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        request_transcript(format, &requests[1]),
        [
            "user:do two things",
            "call:c_wait",
            "call:c_skip",
            "result:c_wait",
            "result:c_skip",
            "user:stop, do something else",
        ]
    );
    // A steer with no active run is refused.
    let err = client
        .request(
            "session/steer",
            json!({"sessionId": session, "text": "late"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, codes::CONFLICT as i64);
}

both_formats!(a_follow_up_is_delivered_when_the_run_would_end);
async fn a_follow_up_is_delivered_when_the_run_would_end(format: Format) {
    let s = Scenario::start(format).await;
    let gate = s.workspace().join("gate.fifo");
    mkfifo(&gate);
    s.mock.push(Reply::tool_call(
        "c_wait",
        "run_shell",
        json!({"command": "cat gate.fifo"}),
    ));
    s.mock.push(Reply::text("first answer"));
    s.mock.push(Reply::text("follow-up answer"));
    let (mut client, session) = s.session().await;
    let run_id = client.prompt(&session, "start").await;
    let mut events = client
        .persisted_events_until(|event| matches!(event, Event::ToolStarted { .. }))
        .await;
    let queued = client
        .request(
            "session/followUp",
            json!({"sessionId": session, "text": "and then this"}),
        )
        .await
        .unwrap();
    assert_eq!(queued, json!({"runId": run_id, "queued": true}));
    let got = client
        .request("session/get", json!({"sessionId": session}))
        .await
        .unwrap();
    assert_eq!(got["queuedFollowUps"], json!(["and then this"]));
    write_fifo(&gate, "done\n").await;
    events.extend(client.events_until_run_finished().await);

    assert_eq!(run_status(&events), RunStatus::Completed);
    let finished = events
        .iter()
        .filter(|e| matches!(e.event, Event::RunFinished { .. }))
        .count();
    assert_eq!(finished, 1, "one run");
    assert!(
        events.iter().any(|e| matches!(&e.event, Event::MessageCompleted { role: MessageRole::User, kind: Some(UserMessageKind::FollowUp), content, run_id: r, .. } if content == "and then this" && *r == run_id)),
        "{events:#?}"
    );
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        request_transcript(format, &requests[2]),
        [
            "user:start",
            "call:c_wait",
            "result:c_wait",
            "assistant:first answer",
            "user:and then this",
        ]
    );

    // On an idle session a follow-up starts a run.
    s.mock.push(Reply::text("idle answer"));
    let started = client
        .request(
            "session/followUp",
            json!({"sessionId": session, "text": "one more"}),
        )
        .await
        .unwrap();
    assert_eq!(started["queued"], json!(false));
    let new_run = started["runId"].as_str().unwrap().to_owned();
    assert_ne!(new_run, run_id);
    let events = client.events_until_run_finished().await;
    assert!(
        matches!(&events[0].event, Event::RunStarted { run_id, prompt, .. } if *run_id == new_run && prompt == "one more"),
        "{events:#?}"
    );
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(
        request_user_texts(format, &s.mock.requests()[3]).last(),
        Some(&"one more".to_owned())
    );
}

both_formats!(a_run_stops_at_max_steps);
async fn a_run_stops_at_max_steps(format: Format) {
    let s = Scenario::start_with(format, "max_steps = 2").await;
    for n in 0..3 {
        s.mock
            .push(Reply::tool_call(format!("c_{n}"), "list_dir", json!({})));
    }
    let (mut client, session) = s.session().await;
    client.prompt(&session, "loop forever").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::MaxSteps);
    assert_eq!(s.mock.requests().len(), 2);
    assert_eq!(s.mock.remaining(), 1);
    // Progress is kept: both calls have their results in history.
    assert_eq!(tool_results(&events).len(), 2);
}

both_formats!(messages_queued_before_a_cancel_are_reported_and_do_not_leak_into_the_next_run);
async fn messages_queued_before_a_cancel_are_reported_and_do_not_leak_into_the_next_run(
    format: Format,
) {
    let s = Scenario::start(format).await;
    let gate = s.workspace().join("gate.fifo");
    mkfifo(&gate);
    s.mock.push(Reply::tool_call(
        "c_wait",
        "run_shell",
        json!({"command": "cat gate.fifo"}),
    ));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "start").await;
    client
        .persisted_events_until(|event| matches!(event, Event::ToolStarted { .. }))
        .await;
    for (method, text) in [
        ("session/steer", "stale steer"),
        ("session/followUp", "stale follow-up"),
    ] {
        client
            .request(method, json!({"sessionId": session, "text": text}))
            .await
            .unwrap();
    }
    client.cancel(&session).await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Cancelled);
    // Reported as not sent, for the user to resend; not left in the queues.
    for text in ["stale steer", "stale follow-up"] {
        assert!(
            events.iter().any(|e| matches!(&e.event, Event::Warning { message } if message.contains("not sent") && message.contains(text))),
            "{text} is reported: {events:#?}"
        );
    }
    let got = client
        .request("session/get", json!({"sessionId": session}))
        .await
        .unwrap();
    assert_eq!(got["queuedSteers"], json!([]));
    assert_eq!(got["queuedFollowUps"], json!([]));

    // A new prompt is a fresh start: its tool calls run, and the stale messages are not
    // slipped into its conversation.
    s.mock
        .push(Reply::tool_call("c_list", "list_dir", json!({})));
    s.mock.push(Reply::text("fresh"));
    client.prompt(&session, "new task").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let results = tool_results(&events);
    assert_eq!(results.len(), 1);
    assert!(!results[0].2, "the new run's call was not run: {results:?}");
    let requests = s.mock.requests();
    assert_eq!(
        requests.len(),
        3,
        "no extra model call for a stale follow-up"
    );
    assert_eq!(
        request_user_texts(format, &requests[2]),
        ["start", "new task"]
    );
    let got = client
        .request("session/get", json!({"sessionId": session}))
        .await
        .unwrap();
    assert_eq!(got["queuedSteers"], json!([]));
    assert_eq!(got["queuedFollowUps"], json!([]));
}

both_formats!(cancel_during_a_model_stream_ends_the_run_cancelled);
async fn cancel_during_a_model_stream_ends_the_run_cancelled(format: Format) {
    let s = Scenario::start(format).await;
    s.mock.push(Reply::stall());
    let (mut client, session) = s.session().await;
    client.prompt(&session, "think hard").await;
    s.mock.wait_for_requests(1).await;
    client.cancel(&session).await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Cancelled);
    // The session takes the next prompt.
    s.mock.push(Reply::text("back"));
    client.prompt(&session, "again").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
}
