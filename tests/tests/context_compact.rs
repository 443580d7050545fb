//! Context management end to end (DESIGN §5 step 8), in both wire formats: soft clearing of old
//! tool results, compaction at the hard limit, on a context-overflow error and by
//! `session/compact` / `agentctl compact`, a failed summary, the compacted view after a restart,
//! and the byte-exact prefix of a long session broken only where a clearing or compaction is
//! recorded. The mock's model (`mock-model`) has the default 128k window: 70k prompt tokens
//! cross the soft limit (50%), 110k the hard one (80%).

use agentd_tests::mock_llm::{Format, RecordedRequest, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::error as codes;
use protocol::event::{Event, RunStatus};
use serde_json::{Value, json};

/// Prompt tokens over the soft limit and under the hard one.
const OVER_SOFT: u64 = 70_000;
/// Prompt tokens over the hard limit.
const OVER_HARD: u64 = 110_000;
/// What a cleared tool result reads as (agentd's `CLEARED_PLACEHOLDER`).
const PLACEHOLDER: &str =
    "[this tool result was cleared to save context; run the tool again if you need it]";
/// The opening of the summary message (agentd's `SUMMARY_INTRO`).
const SUMMARY_INTRO: &str = "[summary of the earlier conversation, which was compacted]";

/// A reply with the given prompt tokens.
fn with_tokens(reply: Reply, input: u64) -> Reply {
    reply.usage(input, 5, 0)
}

/// A `read_file` call of `notes.txt` with call id `id`.
fn read_call(id: &str) -> Reply {
    Reply::tool_call(id, "read_file", json!({"path": "notes.txt"}))
}

/// One prompt, to the end of its run; returns its events.
async fn turn(
    client: &mut agentd_tests::harness::Client,
    session: &str,
    text: &str,
) -> Vec<Envelope> {
    client.prompt(session, text).await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed, "{events:#?}");
    events
}

/// The `context` entries of a session file (clearings and compactions), in order.
fn context_entries(s: &Scenario, session: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(session_file(&s.daemon.env, session)).unwrap();
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|entry| entry["type"] == "context")
        .map(|entry| entry["change"].clone())
        .collect()
}

/// Whether `request` is a summariser call rather than a turn of the conversation.
fn is_summary_request(request: &RecordedRequest) -> bool {
    request
        .body
        .contains("You summarise the history of an agent's conversation")
}

/// The requests of the conversation itself (summariser calls left out).
fn conversation_requests(s: &Scenario) -> Vec<RecordedRequest> {
    s.mock
        .requests()
        .into_iter()
        .filter(|request| !is_summary_request(request))
        .collect()
}

/// Whether `next` extends `previous` byte for byte: the previous body up to the end of its
/// messages is a prefix of the next (Anthropic's moving `cache_control` removed first).
fn extends(format: Format, previous: &RecordedRequest, next: &RecordedRequest) -> bool {
    let (short, long) = (
        without_cache_control(&previous.body),
        without_cache_control(&next.body),
    );
    let closing = match format {
        Format::OpenAi => "]}",
        Format::Anthropic => "]}]}",
    };
    let prefix = short
        .strip_suffix(closing)
        .unwrap_or_else(|| panic!("{format:?} body does not end with {closing}: {short}"));
    long.starts_with(prefix) && long.len() > short.len()
}

/// Tool results of a request by call id.
fn result_of(format: Format, request: &RecordedRequest, id: &str) -> String {
    request_tool_results(format, request)
        .into_iter()
        .find(|(call, _)| call == id)
        .unwrap_or_else(|| panic!("no result for {id}"))
        .1
}

both_formats!(soft_limit_clears_old_tool_results_once_keeping_the_three_newest);
async fn soft_limit_clears_old_tool_results_once_keeping_the_three_newest(format: Format) {
    let mut s = Scenario::start(format).await;
    std::fs::write(s.workspace().join("notes.txt"), "the notes\n").unwrap();
    for id in ["c1", "c2", "c3", "c4"] {
        s.mock.push(read_call(id));
    }
    s.mock.push(with_tokens(read_call("c5"), OVER_SOFT));
    s.mock
        .push(with_tokens(Reply::text("first done"), OVER_SOFT));
    s.mock.push(with_tokens(read_call("c6"), OVER_SOFT));
    s.mock
        .push(with_tokens(Reply::text("second done"), OVER_SOFT));
    let (mut client, session) = s.session().await;
    turn(&mut client, &session, "read the notes five times").await;
    turn(&mut client, &session, "once more").await;

    let requests = s.mock.requests();
    assert_eq!(requests.len(), 8);
    // Before the soft limit: every result as the tool gave it.
    for id in ["c1", "c2", "c3", "c4"] {
        assert!(
            result_of(format, &requests[4], id).contains("the notes"),
            "{id}"
        );
    }
    // After it: all but the three newest replaced by the placeholder.
    for id in ["c1", "c2"] {
        assert_eq!(result_of(format, &requests[5], id), PLACEHOLDER, "{id}");
    }
    for id in ["c3", "c4", "c5"] {
        assert!(
            result_of(format, &requests[5], id).contains("the notes"),
            "{id}"
        );
    }
    // Rarely: still over the soft limit, but no second clearing until it is crossed again.
    assert!(result_of(format, &requests[7], "c3").contains("the notes"));
    assert!(extends(format, &requests[5], &requests[6]));
    assert!(extends(format, &requests[6], &requests[7]));
    assert!(!extends(format, &requests[4], &requests[5]));

    // Recorded as one entry; the history itself is whole.
    assert_eq!(
        context_entries(&s, &session),
        vec![json!({"kind": "cleared", "toolCallIds": ["c1", "c2"]})]
    );
    let got = client
        .request(
            "session/get",
            json!({"sessionId": session, "includeHistory": true}),
        )
        .await
        .unwrap();
    let history = got["history"].as_array().unwrap();
    assert!(
        history
            .iter()
            .filter(|m| m["role"] == "tool")
            .all(|m| m["content"].as_str().unwrap().contains("the notes")),
        "{history:#?}"
    );

    // After a restart the cleared results stay cleared: the prefix goes on.
    drop(client);
    s.daemon.kill().await;
    s.daemon.restart().await;
    let mut client = s.client().await;
    client.subscribe(&session, None).await;
    s.mock.push(Reply::text("third done"));
    turn(&mut client, &session, "and after a restart").await;
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 9);
    assert_eq!(result_of(format, &requests[8], "c1"), PLACEHOLDER);
    assert!(extends(format, &requests[7], &requests[8]));
}

/// Three short turns, the third reported over the hard limit.
async fn three_turns_ending_over_the_hard_limit(
    s: &Scenario,
    client: &mut agentd_tests::harness::Client,
    session: &str,
) {
    // Long older answers, so the summary is smaller than what it replaces.
    s.mock.push(Reply::text(format!("r1 {}", "x".repeat(4000))));
    s.mock.push(Reply::text(format!("r2 {}", "y".repeat(4000))));
    s.mock.push(with_tokens(Reply::text("r3"), OVER_HARD));
    for text in ["one", "two", "three"] {
        turn(client, session, text).await;
    }
}

both_formats!(hard_limit_compacts_keeping_the_last_two_turns_also_after_a_restart);
async fn hard_limit_compacts_keeping_the_last_two_turns_also_after_a_restart(format: Format) {
    let mut s = Scenario::start(format).await;
    let (mut client, session) = s.session().await;
    three_turns_ending_over_the_hard_limit(&s, &mut client, &session).await;
    s.mock.push(Reply::text("the user counted to three"));
    s.mock.push(Reply::text("r4"));
    let events = turn(&mut client, &session, "four").await;

    let kinds = kinds(&events);
    let started = kinds.iter().position(|k| k == "compactionStarted");
    let completed = kinds.iter().position(|k| k == "compactionCompleted");
    assert!(started.is_some() && started < completed, "{kinds:?}");
    let Some(Event::CompactionCompleted {
        run_id,
        tokens_before,
        tokens_after,
    }) = events
        .iter()
        .map(|e| e.event.clone())
        .find(|e| matches!(e, Event::CompactionCompleted { .. }))
    else {
        unreachable!()
    };
    assert!(run_id.is_some());
    assert_eq!(tokens_before, OVER_HARD);
    assert!(tokens_after < tokens_before, "{tokens_after}");

    let requests = s.mock.requests();
    assert_eq!(requests.len(), 5);
    // The summariser read the older turns, not the two kept ones.
    assert!(is_summary_request(&requests[3]));
    let summary_input = request_user_texts(format, &requests[3]).join("\n");
    assert!(summary_input.contains("[user] one"), "{summary_input}");
    assert!(summary_input.contains("[assistant] r2"), "{summary_input}");
    assert!(!summary_input.contains("three"), "{summary_input}");
    // The next request: the summary, then the last two user turns verbatim.
    let compacted = &requests[4];
    assert_eq!(
        request_user_texts(format, compacted),
        vec![
            format!("{SUMMARY_INTRO}\nthe user counted to three"),
            "three".to_owned(),
            "four".to_owned()
        ]
    );
    let transcript = request_transcript(format, compacted);
    assert!(
        transcript.contains(&"assistant:r3".to_owned()),
        "{transcript:?}"
    );
    assert!(
        !transcript
            .iter()
            .any(|item| item.starts_with("assistant:r1")),
        "{transcript:?}"
    );
    let entries = context_entries(&s, &session);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["kind"], "compacted");
    assert_eq!(entries[0]["summary"], "the user counted to three");

    // The full history stays for session/get.
    let got = client
        .request(
            "session/get",
            json!({"sessionId": session, "includeHistory": true}),
        )
        .await
        .unwrap();
    assert_eq!(got["history"].as_array().unwrap().len(), 8);
    assert_eq!(got["history"][0]["content"], "one");

    // After a restart, requests are built from the same compacted view.
    drop(client);
    s.daemon.kill().await;
    s.daemon.restart().await;
    let mut client = s.client().await;
    client.subscribe(&session, None).await;
    s.mock.push(Reply::text("r5"));
    turn(&mut client, &session, "five").await;
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 6);
    assert_eq!(
        request_user_texts(format, &requests[5]),
        vec![
            format!("{SUMMARY_INTRO}\nthe user counted to three"),
            "three".to_owned(),
            "four".to_owned(),
            "five".to_owned()
        ]
    );
    assert!(extends(format, &requests[4], &requests[5]));
}

both_formats!(a_failed_summary_keeps_the_history_and_warns);
async fn a_failed_summary_keeps_the_history_and_warns(format: Format) {
    let s = Scenario::start(format).await;
    let (mut client, session) = s.session().await;
    three_turns_ending_over_the_hard_limit(&s, &mut client, &session).await;
    s.mock
        .push(Reply::error(400, "the summariser refused this request"));
    s.mock.push(with_tokens(Reply::text("r4"), OVER_HARD));
    s.mock.push(Reply::text("r5"));
    let events = turn(&mut client, &session, "four").await;
    let warning = events
        .iter()
        .find_map(|e| match &e.event {
            Event::Warning { message } => Some(message.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no warning: {events:#?}"));
    assert!(
        warning.starts_with("context compaction failed: ")
            && warning.contains("the summariser refused this request")
            && warning.contains("the history is kept"),
        "{warning}"
    );
    assert!(!kinds(&events).contains(&"compactionCompleted".to_owned()));
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 5);
    assert_eq!(
        request_user_texts(format, &requests[4]),
        vec!["one", "two", "three", "four"]
    );
    assert!(extends(format, &requests[2], &requests[4]));
    assert!(context_entries(&s, &session).is_empty());
    // Still over the hard limit, but no second attempt until it is crossed again.
    turn(&mut client, &session, "five").await;
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 6);
    assert!(extends(format, &requests[4], &requests[5]));
}

both_formats!(a_context_overflow_error_compacts_and_retries_once);
async fn a_context_overflow_error_compacts_and_retries_once(format: Format) {
    let s = Scenario::start(format).await;
    let (mut client, session) = s.session().await;
    let overflow = match format {
        Format::OpenAi => {
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens."
        }
        Format::Anthropic => "prompt is too long: 210000 tokens > 200000 maximum",
    };
    // Nothing older than two user turns: the run fails at once, saying what to do.
    s.mock.push(Reply::error(400, overflow));
    client.prompt(&session, "one").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Failed);
    let error = run_error(&events);
    assert!(
        error.contains("(HTTP 400)")
            && error.ends_with("start a new session, or send a shorter prompt"),
        "{error}"
    );
    assert!(!kinds(&events).contains(&"compactionStarted".to_owned()));
    assert_eq!(s.mock.requests().len(), 1);
    s.mock.push(Reply::text("r1"));
    s.mock.push(Reply::text("r2"));
    for text in ["one again", "two"] {
        turn(&mut client, &session, text).await;
    }
    s.mock.push(Reply::error(400, overflow));
    s.mock.push(Reply::text("one was said"));
    s.mock.push(Reply::text("r3"));
    let events = turn(&mut client, &session, "three").await;
    assert!(kinds(&events).contains(&"compactionCompleted".to_owned()));
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 6);
    assert!(is_summary_request(&requests[4]));
    let summary_input = request_user_texts(format, &requests[4]).join("\n");
    assert!(
        summary_input.contains("[user] one again"),
        "{summary_input}"
    );
    assert_eq!(
        request_user_texts(format, &requests[5]),
        vec![
            format!("{SUMMARY_INTRO}\none was said"),
            "two".to_owned(),
            "three".to_owned()
        ]
    );

    // Once only: an overflow after the retry ends the run with the provider's word.
    s.mock.push(Reply::error(400, overflow));
    s.mock.push(Reply::text("up to three"));
    s.mock.push(Reply::error(400, overflow));
    client.prompt(&session, "four").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Failed);
    assert!(run_error(&events).contains("(HTTP 400)"), "{events:#?}");
    assert_eq!(s.mock.requests().len(), 9);
}

both_formats!(session_compact_summarises_on_request_and_is_refused_during_a_run);
async fn session_compact_summarises_on_request_and_is_refused_during_a_run(format: Format) {
    let s = Scenario::start(format).await;
    let (mut client, session) = s.session().await;
    let compact = json!({"sessionId": session});
    for (bad, code) in [
        ("ses_nope", codes::NOT_FOUND),
        ("../../victim", codes::INVALID_PARAMS),
    ] {
        let error = client
            .request("session/compact", json!({"sessionId": bad}))
            .await
            .unwrap_err();
        assert_eq!(error.code, code as i64, "{bad}: {error:?}");
    }
    // Nothing to summarise yet: no model call.
    let result = client
        .request("session/compact", compact.clone())
        .await
        .unwrap();
    assert_eq!(result, json!({"compacted": false}));
    s.mock.push(Reply::text("r1"));
    s.mock.push(Reply::text("r2"));
    s.mock.push(Reply::text("r3"));
    for text in ["one", "two", "three"] {
        turn(&mut client, &session, text).await;
    }
    s.mock.push(Reply::text("one was said"));
    let result = client
        .request("session/compact", compact.clone())
        .await
        .unwrap();
    assert_eq!(result["compacted"], true, "{result}");
    assert!(result["tokensAfter"].as_u64().unwrap() > 0, "{result}");
    let events = client
        .persisted_events_until(|e| matches!(e, Event::CompactionCompleted { .. }))
        .await;
    assert_eq!(
        kinds(&events),
        vec!["compactionStarted", "compactionCompleted"]
    );
    assert_eq!(events[0].event.run_id(), None);
    assert_eq!(context_entries(&s, &session).len(), 1);
    s.mock.push(Reply::text("r4"));
    turn(&mut client, &session, "four").await;
    let requests = s.mock.requests();
    assert_eq!(
        request_user_texts(format, requests.last().unwrap()),
        vec![
            format!("{SUMMARY_INTRO}\none was said"),
            "two".to_owned(),
            "three".to_owned(),
            "four".to_owned()
        ]
    );

    // agentctl compact SESSION, with --json.
    s.mock.push(Reply::text("up to three"));
    let output = s
        .daemon
        .env
        .run_agentctl(&["--json", "compact", &session])
        .await;
    assert!(output.status.success(), "{output:?}");
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed["compacted"], true, "{printed}");
    assert_eq!(context_entries(&s, &session).len(), 2);
    let output = s.daemon.env.run_agentctl(&["compact", &session]).await;
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("nothing to compact in "), "{stdout}");

    // Refused while a run is active, with a message saying what to do.
    s.mock.push(Reply::stall());
    client.prompt(&session, "five").await;
    client
        .persisted_events_until(|e| matches!(e, Event::TurnStarted { .. }))
        .await;
    let error = client
        .request("session/compact", compact.clone())
        .await
        .unwrap_err();
    assert_eq!(error.code, codes::CONFLICT as i64);
    assert!(
        error
            .message
            .starts_with("a run is active on this session (run_")
            && error.message.contains("cancel it first"),
        "{}",
        error.message
    );
    let output = s.daemon.env.run_agentctl(&["compact", &session]).await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    client.cancel(&session).await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Cancelled);

    // A summary still being written when the session is deleted stops, and says why.
    s.mock.push(Reply::stall());
    let mut other = s.client().await;
    let compacting = other.request("session/compact", compact.clone());
    let deleting = async {
        client
            .persisted_events_until(|e| matches!(e, Event::CompactionStarted { .. }))
            .await;
        client.request("session/delete", compact.clone()).await
    };
    let (compacted, deleted) = tokio::join!(compacting, deleting);
    assert!(deleted.is_ok(), "{deleted:?}");
    let error = compacted.unwrap_err();
    assert_eq!(error.code, codes::CONFLICT as i64);
    assert!(
        error.message.contains("the session is closing"),
        "{error:?}"
    );
}

both_formats!(a_long_session_extends_its_prefix_except_at_recorded_clearings_and_compactions);
async fn a_long_session_extends_its_prefix_except_at_recorded_clearings_and_compactions(
    format: Format,
) {
    let s = Scenario::start(format).await;
    std::fs::write(s.workspace().join("notes.txt"), "the notes\n").unwrap();
    let (mut client, session) = s.session().await;

    // A: five reads, the soft limit crossed after the fourth (a clearing).
    s.mock.push(read_call("a1"));
    s.mock.push(Reply::tool_calls(vec![
        ("a2", "read_file", json!({"path": "notes.txt"}).to_string()),
        ("a3", "glob", json!({"pattern": "*.txt"}).to_string()),
    ]));
    s.mock.push(with_tokens(read_call("a4"), OVER_SOFT));
    s.mock.push(with_tokens(read_call("a5"), OVER_SOFT));
    s.mock.push(with_tokens(Reply::text("A done"), OVER_SOFT));
    turn(&mut client, &session, "task A").await;
    // B: back under the soft limit, then over it again (a second clearing).
    s.mock.push(with_tokens(read_call("b1"), 100));
    s.mock.push(read_call("b2"));
    s.mock.push(with_tokens(read_call("b3"), OVER_SOFT));
    s.mock.push(Reply::text("B done"));
    turn(&mut client, &session, "task B").await;
    // C: over the hard limit (a compaction), then on.
    s.mock.push(with_tokens(read_call("c1"), OVER_HARD));
    s.mock.push(Reply::text("A and B were done"));
    s.mock.push(read_call("c2"));
    s.mock.push(Reply::text("C done"));
    turn(&mut client, &session, "task C").await;
    // D and E: plain turns after the compaction.
    s.mock.push(read_call("d1"));
    s.mock.push(Reply::text("D done"));
    turn(&mut client, &session, "task D").await;
    s.mock.push(Reply::text("E done"));
    turn(&mut client, &session, "task E").await;

    let requests = conversation_requests(&s);
    assert_eq!(requests.len(), 15);
    for request in &requests {
        assert_tool_calls_paired(format, request);
    }
    let breaks: Vec<usize> = (1..requests.len())
        .filter(|&i| !extends(format, &requests[i - 1], &requests[i]))
        .collect();
    let entries = context_entries(&s, &session);
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.iter().filter(|k| **k == "cleared").count() >= 2
            && kinds.iter().filter(|k| **k == "compacted").count() == 1,
        "{entries:#?}"
    );
    assert_eq!(
        breaks.len(),
        entries.len(),
        "breaks at requests {breaks:?}, recorded {kinds:?}"
    );
    // The first break is the first clearing, right after the soft limit was crossed.
    assert_eq!(breaks[0], 3, "{breaks:?}");
}
