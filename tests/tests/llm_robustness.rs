//! Providers that misbehave the way real local servers do, in both wire formats: a stream that
//! goes silent (`[llm] stream_idle_secs`), a server that reports no usage (the estimate still
//! drives compaction), a context overflow refused inside a `200 OK` stream, and an answer cut
//! at the output token limit (never a silent `completed`).

use std::time::{Duration, Instant};

use agentd_tests::harness::{Daemon, TestEnv};
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::event::{Event, RunStatus};
use serde_json::json;

/// What a compaction's summary request opens with (agentd's `SUMMARY_PROMPT`).
const SUMMARY_PROMPT_START: &str = "You summarise the history of an agent's conversation";
/// The opening of the summary message (agentd's `SUMMARY_INTRO`).
const SUMMARY_INTRO: &str = "[summary of the earlier conversation, which was compacted]";
/// llama.cpp's words for a prompt longer than its context.
const LLAMA_CPP_OVERFLOW: &str =
    "the request exceeds the available context size, try increasing it";

/// A daemon whose provider `mock` is configured by `scenario::config_toml`, edited by `edit`.
async fn scenario_with(format: Format, edit: impl FnOnce(String) -> String) -> Scenario {
    let mock = MockLlm::start().await;
    let config = edit(config_toml(&mock, format, ""));
    let daemon = Daemon::start_in(TestEnv::new().config(&config)).await;
    Scenario {
        daemon,
        mock,
        format,
    }
}

/// The idle limit from `[llm]` (the provider's own line removed), one retry.
fn one_second_idle(config: String) -> String {
    let config = config
        .replace("stream_idle_timeout_secs = 10\n", "")
        .replace("max_retries = 3\n", "max_retries = 1\n");
    format!("[llm]\nstream_idle_secs = 1\n{config}")
}

/// The `error` events that announced a retry.
fn retry_notices(events: &[Envelope]) -> Vec<String> {
    events
        .iter()
        .filter_map(|envelope| match &envelope.event {
            Event::Error {
                message,
                will_retry: true,
                ..
            } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

fn warnings(events: &[Envelope]) -> Vec<String> {
    events
        .iter()
        .filter_map(|envelope| match &envelope.event {
            Event::Warning { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// One prompt to the end of its run; returns its events.
async fn turn(
    client: &mut agentd_tests::harness::Client,
    session: &str,
    text: &str,
) -> Vec<Envelope> {
    client.prompt(session, text).await;
    client.events_until_run_finished().await
}

both_formats!(a_stalled_stream_fails_within_the_idle_limit_naming_the_provider);
async fn a_stalled_stream_fails_within_the_idle_limit_naming_the_provider(format: Format) {
    let s = scenario_with(format, one_second_idle).await;
    let (mut client, session) = s.session().await;
    // Silent after its first event (no output yet), then silent before the headers.
    s.mock.push(Reply::text("never sent").stall_after_events(1));
    s.mock.push(Reply::stall_before_headers());
    let started = Instant::now();
    let events = turn(&mut client, &session, "hello").await;
    let elapsed = started.elapsed();
    assert_eq!(run_status(&events), RunStatus::Failed, "{events:#?}");
    let notices = retry_notices(&events);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains("no data from provider mock for 1 s"),
        "{}",
        notices[0]
    );
    let error = run_error(&events);
    assert!(
        error.contains("no headers from provider mock for 1 s")
            && error.contains("check the server, or raise [llm] stream_idle_secs")
            && error.contains("gave up after 2 attempts"),
        "{error}"
    );
    assert_eq!(s.mock.requests().len(), 2);
    // Two waits of the configured second, not of the provider's default (90 s) or 10 s.
    assert!(elapsed >= Duration::from_secs(2), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(15), "{elapsed:?}");
}

both_formats!(a_stall_followed_by_a_good_retry_completes);
async fn a_stall_followed_by_a_good_retry_completes(format: Format) {
    let s = scenario_with(format, one_second_idle).await;
    let (mut client, session) = s.session().await;
    s.mock.push(Reply::stall());
    s.mock.push(Reply::text("awake"));
    let events = turn(&mut client, &session, "hello").await;
    assert_eq!(run_status(&events), RunStatus::Completed, "{events:#?}");
    assert_eq!(retry_notices(&events).len(), 1);
    let answered = events.iter().any(|envelope| {
        matches!(&envelope.event, Event::MessageCompleted { content, .. } if content == "awake")
    });
    assert!(answered, "{events:#?}");
    assert_eq!(s.mock.requests().len(), 2);
}

/// A small window: 80 KB answers (about 20k estimated tokens) put the third request over the
/// hard limit (80% of 40k) whatever the system prompt weighs, and the second under it.
fn small_window(config: String) -> String {
    config.replace(
        "model = \"mock-model\"\n",
        "model = \"mock-model\"\ncontext_window = 40000\n",
    )
}

both_formats!(a_server_without_usage_still_compacts_at_the_limit);
async fn a_server_without_usage_still_compacts_at_the_limit(format: Format) {
    let s = scenario_with(format, small_window).await;
    let (mut client, session) = s.session().await;
    for (index, text) in ["one", "two", "three"].into_iter().enumerate() {
        let answer = format!("r{} {}", index + 1, "x".repeat(80_000));
        s.mock.push(Reply::text(answer).without_usage());
        let events = turn(&mut client, &session, text).await;
        assert_eq!(run_status(&events), RunStatus::Completed, "{events:#?}");
        assert!(
            !kinds(&events).contains(&"compactionStarted".to_owned()),
            "{index}"
        );
        let Some(Event::UsageUpdated { usage, total, .. }) = events
            .iter()
            .map(|envelope| envelope.event.clone())
            .find(|event| matches!(event, Event::UsageUpdated { .. }))
        else {
            panic!("no usageUpdated: {events:#?}")
        };
        assert!(usage.estimated && total.estimated, "{usage:?}");
        assert!(
            usage.input_tokens > 0 && usage.output_tokens >= 20_000,
            "{usage:?}"
        );
        let Some(Event::RunFinished { usage, .. }) = events.last().map(|e| e.event.clone()) else {
            unreachable!()
        };
        assert!(usage.estimated, "{usage:?}");
    }
    s.mock
        .push(Reply::text("the user counted to three").without_usage());
    s.mock.push(Reply::text("r4").without_usage());
    let events = turn(&mut client, &session, "four").await;
    assert_eq!(run_status(&events), RunStatus::Completed, "{events:#?}");
    let Some(Event::CompactionCompleted { tokens_before, .. }) = events
        .iter()
        .map(|envelope| envelope.event.clone())
        .find(|event| matches!(event, Event::CompactionCompleted { .. }))
    else {
        panic!("no compaction at the limit: {:?}", kinds(&events))
    };
    assert!(tokens_before >= 32_000, "{tokens_before}");
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 5);
    assert!(requests[3].body.contains(SUMMARY_PROMPT_START));
    assert_eq!(
        request_user_texts(format, &requests[4]),
        vec![
            format!("{SUMMARY_INTRO}\nthe user counted to three"),
            "three".to_owned(),
            "four".to_owned()
        ]
    );
}

both_formats!(an_overflow_inside_a_200_stream_is_compacted_and_retried_once);
async fn an_overflow_inside_a_200_stream_is_compacted_and_retried_once(format: Format) {
    let s = Scenario::start(format).await;
    let (mut client, session) = s.session().await;
    // Nothing to compact yet: the run fails with the provider's word, after one request.
    s.mock.push(Reply::stream_error(LLAMA_CPP_OVERFLOW));
    let events = turn(&mut client, &session, "one").await;
    assert_eq!(run_status(&events), RunStatus::Failed);
    let error = run_error(&events);
    assert!(
        error.contains("inside its 200 OK answer") && error.contains(LLAMA_CPP_OVERFLOW),
        "{error}"
    );
    assert!(
        retry_notices(&events).is_empty(),
        "an overflow is not retried as is"
    );
    assert_eq!(s.mock.requests().len(), 1);

    s.mock.push(Reply::text("r1"));
    s.mock.push(Reply::text("r2"));
    for text in ["one again", "two"] {
        let events = turn(&mut client, &session, text).await;
        assert_eq!(run_status(&events), RunStatus::Completed);
    }
    s.mock.push(Reply::stream_error(LLAMA_CPP_OVERFLOW));
    s.mock.push(Reply::text("one was said"));
    s.mock.push(Reply::text("r3"));
    let events = turn(&mut client, &session, "three").await;
    assert_eq!(run_status(&events), RunStatus::Completed, "{events:#?}");
    assert!(kinds(&events).contains(&"compactionCompleted".to_owned()));
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 6);
    assert!(requests[4].body.contains(SUMMARY_PROMPT_START));
    assert_eq!(
        request_user_texts(format, &requests[5]),
        vec![
            format!("{SUMMARY_INTRO}\none was said"),
            "two".to_owned(),
            "three".to_owned()
        ]
    );

    // Once only: an overflow after the compaction's retry ends the run.
    s.mock.push(Reply::stream_error(LLAMA_CPP_OVERFLOW));
    s.mock.push(Reply::text("up to three"));
    s.mock.push(Reply::stream_error(LLAMA_CPP_OVERFLOW));
    let events = turn(&mut client, &session, "four").await;
    assert_eq!(run_status(&events), RunStatus::Failed);
    assert!(
        run_error(&events).contains(LLAMA_CPP_OVERFLOW),
        "{events:#?}"
    );
    assert_eq!(s.mock.requests().len(), 9);
}

both_formats!(an_answer_cut_at_the_output_limit_is_not_a_silent_completed);
async fn an_answer_cut_at_the_output_limit_is_not_a_silent_completed(format: Format) {
    let s = Scenario::start(format).await;
    let (mut client, session) = s.session().await;
    s.mock
        .push(Reply::text("the first half of an ans").cut_at_limit());
    let events = turn(&mut client, &session, "explain").await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let warned = warnings(&events);
    assert_eq!(warned.len(), 1, "{events:#?}");
    assert!(
        warned[0].starts_with("the answer was truncated: the model stopped at its output limit"),
        "{}",
        warned[0]
    );
    assert!(!warned[0].contains("not run"), "{}", warned[0]);
    assert_eq!(s.mock.requests().len(), 1, "no continuation request");

    // A cut answer's tool call, whose arguments may be cut, is not run.
    let target = s.workspace().join("cut.txt");
    s.mock.push(
        Reply::tool_call(
            "c1",
            "write_file",
            json!({"path": "cut.txt", "content": "half"}),
        )
        .cut_at_limit(),
    );
    let events = turn(&mut client, &session, "write it").await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert!(
        !kinds(&events).contains(&"toolStarted".to_owned()),
        "{:?}",
        kinds(&events)
    );
    let result = events.iter().find_map(|envelope| match &envelope.event {
        Event::ToolCompleted {
            tool_call_id,
            output,
            is_error: true,
            ..
        } if tool_call_id == "c1" => Some(output.clone()),
        _ => None,
    });
    assert!(
        result.is_some_and(|output| output.starts_with("not run: the answer was cut")),
        "{events:#?}"
    );
    let warned = warnings(&events);
    assert!(
        warned.len() == 1 && warned[0].contains("its tool call was not run"),
        "{warned:?}"
    );
    assert!(!target.exists(), "the cut call ran");
    assert_eq!(s.mock.requests().len(), 2);

    // The next request carries the call with its one result.
    s.mock.push(Reply::text("ok"));
    turn(&mut client, &session, "go on").await;
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 3);
    assert_tool_calls_paired(format, &requests[2]);
}
