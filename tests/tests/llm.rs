//! The LLM providers against the scripted mock server, in both wire formats.

// Helpers outside `#[test]` functions are test code too.
#![allow(clippy::unwrap_used)]

use agentd_core::conversation::{Message, ToolCall, ToolSpec, Usage};
use agentd_llm::{ChatRequest, Completion, LlmClient, LlmError, LlmEvent};
use agentd_llm::{ProviderConfig, ProviderKind};
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use pretty_assertions::assert_eq;
use std::time::Duration;

const FORMATS: [Format; 2] = [Format::OpenAi, Format::Anthropic];

fn provider(mock: &MockLlm, format: Format) -> ProviderConfig {
    let (kind, base_url) = match format {
        Format::OpenAi => (ProviderKind::OpenAi, mock.openai_base_url()),
        Format::Anthropic => (ProviderKind::Anthropic, mock.base_url()),
    };
    ProviderConfig {
        name: "mock".to_owned(),
        kind,
        base_url,
        api_key: Some("test-key".to_owned()),
        api_key_env: Some("MOCK_API_KEY".to_owned()),
        model: "mock-model".to_owned(),
        context_window: None,
        max_output_tokens: None,
        reasoning_effort: None,
        max_retries: 3,
        retry_base_delay_ms: 1,
        retry_max_delay_ms: 5_000,
        stream_idle_timeout_secs: 30,
        prices: None,
    }
}

fn client(mock: &MockLlm, format: Format) -> LlmClient {
    client_with(mock, format, |_| {})
}

fn client_with(
    mock: &MockLlm,
    format: Format,
    tweak: impl FnOnce(&mut ProviderConfig),
) -> LlmClient {
    let mut provider = provider(mock, format);
    tweak(&mut provider);
    LlmClient::new(provider, agentd_llm::HttpClients::new().unwrap())
}

fn user(text: &str) -> Message {
    Message::user(text)
}

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "ls".to_owned(),
        description: "List a directory".to_owned(),
        input_schema: serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }]
}

/// Runs one call and returns its outcome with every event it produced.
async fn complete(
    client: &LlmClient,
    messages: &[Message],
) -> (Result<Completion, LlmError>, Vec<LlmEvent>) {
    let tools = tools();
    let request = ChatRequest {
        session_id: "ses_test",
        system: "You are a test.",
        messages,
        tools: &tools,
    };
    let mut events = Vec::new();
    let result = client
        .complete(&request, &mut |event| events.push(event))
        .await;
    (result, events)
}

fn retries(events: &[LlmEvent]) -> Vec<(u32, Duration, String)> {
    events
        .iter()
        .filter_map(|event| match event {
            LlmEvent::Retrying {
                attempt,
                delay,
                message,
            } => Some((*attempt, *delay, message.clone())),
            LlmEvent::TextDelta(_) | LlmEvent::ThinkingDelta(_) => None,
        })
        .collect()
}

fn deltas(events: &[LlmEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            LlmEvent::TextDelta(text) => Some(text.clone()),
            LlmEvent::Retrying { .. } | LlmEvent::ThinkingDelta(_) => None,
        })
        .collect()
}

#[tokio::test]
async fn streams_reasoning_as_thinking_deltas_apart_from_the_reply() {
    for format in FORMATS {
        let mock = MockLlm::start().await;
        mock.push(
            Reply::text("the answer is 4")
                .with_thinking("two plus two, carry nothing")
                .fragmented(),
        );
        let (result, events) = complete(&client(&mock, format), &[user("add them")]).await;
        let completion = result.unwrap();
        let thinking: String = events
            .iter()
            .filter_map(|event| match event {
                LlmEvent::ThinkingDelta(text) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(thinking, "two plus two, carry nothing", "{format:?}");
        assert_eq!(completion.content, "the answer is 4", "{format:?}");
        assert_eq!(deltas(&events).concat(), "the answer is 4", "{format:?}");
        // All of the reasoning comes before the first piece of the reply.
        let first_text = events
            .iter()
            .position(|event| matches!(event, LlmEvent::TextDelta(_)))
            .unwrap();
        assert!(
            events[first_text..]
                .iter()
                .all(|event| !matches!(event, LlmEvent::ThinkingDelta(_))),
            "{format:?}: {events:?}"
        );
    }
}

#[tokio::test]
async fn streams_text_deltas_and_usage() {
    for format in FORMATS {
        let mock = MockLlm::start().await;
        mock.push(Reply::text("Hello there, world").usage(120, 7, 64));
        let (result, events) = complete(&client(&mock, format), &[user("hi")]).await;
        let completion = result.unwrap();
        assert_eq!(
            deltas(&events),
            ["Hello ", "there, ", "world"],
            "{format:?}"
        );
        assert_eq!(completion.content, "Hello there, world");
        assert!(completion.tool_calls.is_empty());
        let expected_usage = Usage {
            input_tokens: 120,
            output_tokens: 7,
            cached_input_tokens: 64,
            cache_creation_input_tokens: 0,
            estimated: false,
        };
        assert_eq!(completion.usage, expected_usage, "{format:?}");
        let requests = mock.requests();
        assert_eq!(requests.len(), 1);
        let request = &requests[0];
        assert_eq!(request.json["stream"], true);
        assert_eq!(request.json["model"], "mock-model");
        match format {
            Format::OpenAi => {
                assert_eq!(request.path, "/v1/chat/completions");
                assert_eq!(request.header("authorization"), Some("Bearer test-key"));
                assert_eq!(completion.finish_reason.as_deref(), Some("stop"));
                assert_eq!(request.json["prompt_cache_key"], "ses_test");
            }
            Format::Anthropic => {
                assert_eq!(request.path, "/v1/messages");
                assert_eq!(request.header("x-api-key"), Some("test-key"));
                assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
                assert_eq!(completion.finish_reason.as_deref(), Some("end_turn"));
            }
        }
    }
}

#[tokio::test]
async fn assembles_fragmented_interleaved_tool_calls() {
    for format in FORMATS {
        let mock = MockLlm::start().await;
        let calls = vec![
            ("call_1", "ls", r#"{"path":"src/llm"}"#),
            ("call_2", "read", r#"{"file":"a.rs","lines":[1,20]}"#),
            ("call_3", "pwd", ""),
        ];
        mock.push(
            Reply::tool_calls(calls)
                .with_text("Let me look.")
                .fragmented(),
        );
        let (result, events) = complete(&client(&mock, format), &[user("look")]).await;
        let completion = result.unwrap();
        assert!(deltas(&events).len() > 3, "fragmented text: {events:?}");
        assert_eq!(completion.content, "Let me look.");
        let call = |id: &str, name: &str, arguments: &str| ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        };
        assert_eq!(
            completion.tool_calls,
            [
                call("call_1", "ls", r#"{"path":"src/llm"}"#),
                call("call_2", "read", r#"{"file":"a.rs","lines":[1,20]}"#),
                call("call_3", "pwd", "{}"),
            ],
            "{format:?}"
        );
        let expected_reason = match format {
            Format::OpenAi => "tool_calls",
            Format::Anthropic => "tool_use",
        };
        assert_eq!(completion.finish_reason.as_deref(), Some(expected_reason));
    }
}

#[tokio::test]
async fn rate_limit_honours_retry_after_then_succeeds() {
    for format in FORMATS {
        let mock = MockLlm::start().await;
        mock.push(Reply::error(429, "slow down").retry_after_secs(1));
        mock.push(Reply::text("ok"));
        let (result, events) = complete(&client(&mock, format), &[user("hi")]).await;
        assert_eq!(result.unwrap().content, "ok", "{format:?}");
        let retries = retries(&events);
        assert_eq!(retries.len(), 1, "{events:?}");
        let (attempt, delay, message) = &retries[0];
        assert_eq!((*attempt, *delay), (1, Duration::from_secs(1)));
        assert!(
            message.contains("HTTP 429") && message.contains("slow down"),
            "{message}"
        );
        assert_eq!(mock.requests().len(), 2);
        // The retry sends the very same bytes.
        let requests = mock.requests();
        assert_eq!(requests[0].body, requests[1].body);
    }
}

#[tokio::test]
async fn server_errors_are_retried_until_the_budget_runs_out() {
    for format in FORMATS {
        let mock = MockLlm::start().await;
        mock.push(Reply::error(500, "boom"));
        mock.push(Reply::error(503, "busy"));
        mock.push(Reply::text("fine"));
        let (result, events) = complete(&client(&mock, format), &[user("hi")]).await;
        assert_eq!(result.unwrap().content, "fine", "{format:?}");
        let attempts: Vec<u32> = retries(&events).iter().map(|r| r.0).collect();
        assert_eq!(attempts, [1, 2]);
        assert_eq!(mock.requests().len(), 3);

        // With one retry allowed, two failures give up with both facts in the message.
        let mock = MockLlm::start().await;
        mock.push(Reply::error(500, "boom"));
        mock.push(Reply::error(502, "still down"));
        let client = client_with(&mock, format, |p| p.max_retries = 1);
        let (result, events) = complete(&client, &[user("hi")]).await;
        let error = result.unwrap_err().to_string();
        assert!(
            error.contains("HTTP 502")
                && error.contains("still down")
                && error.contains("gave up after 2 attempts"),
            "{error}"
        );
        assert_eq!(retries(&events).len(), 1);
        assert_eq!(mock.requests().len(), 2);
    }
}

#[tokio::test]
async fn stream_cut_before_output_is_retried() {
    for format in FORMATS {
        let mock = MockLlm::start().await;
        // Only the first event (role chunk / message_start): no output yet.
        mock.push(Reply::text("hello").cut_after_events(1));
        mock.push(Reply::text("hello again"));
        let (result, events) = complete(&client(&mock, format), &[user("hi")]).await;
        assert_eq!(result.unwrap().content, "hello again", "{format:?}");
        assert_eq!(deltas(&events), ["hello ", "again"]);
        let retries = retries(&events);
        assert_eq!(retries.len(), 1);
        assert!(
            retries[0].2.contains("cut before the reply began"),
            "{}",
            retries[0].2
        );
        assert_eq!(mock.requests().len(), 2);
    }
}

#[tokio::test]
async fn stream_cut_after_output_fails_without_retry() {
    for format in FORMATS {
        let mock = MockLlm::start().await;
        // Anthropic: message_start, content_block_start, ping, first delta. OpenAI: role chunk
        // and three text deltas. Either way text went out, and the final events did not.
        mock.push(Reply::text("one two three four").cut_after_events(4));
        mock.push(Reply::text("never sent"));
        let (result, events) = complete(&client(&mock, format), &[user("hi")]).await;
        let error = result.unwrap_err();
        assert!(
            matches!(
                error,
                LlmError::StreamCut {
                    output_started: true,
                    ..
                }
            ),
            "{format:?}: {error:?}"
        );
        assert!(!error.is_retryable());
        assert!(
            error.to_string().contains("cut after the reply began"),
            "{error}"
        );
        assert!(!deltas(&events).is_empty());
        assert!(retries(&events).is_empty());
        assert_eq!(mock.requests().len(), 1);
        assert_eq!(mock.remaining(), 1);
    }
}

#[tokio::test]
async fn rejected_key_fails_at_once_with_a_clear_message() {
    for format in FORMATS {
        let mock = MockLlm::start().await;
        mock.push(Reply::error(401, "invalid x-api-key"));
        let (result, events) = complete(&client(&mock, format), &[user("hi")]).await;
        let error = result.unwrap_err().to_string();
        let url = match format {
            Format::OpenAi => format!("{}/chat/completions", mock.openai_base_url()),
            Format::Anthropic => format!("{}/v1/messages", mock.base_url()),
        };
        assert_eq!(
            error,
            format!("API key rejected by {url} (invalid x-api-key): set MOCK_API_KEY")
        );
        assert!(events.is_empty());
        assert_eq!(mock.requests().len(), 1);
    }
}

#[tokio::test]
async fn missing_model_and_bad_requests_fail_at_once() {
    for format in FORMATS {
        let mock = MockLlm::start().await;
        mock.push(Reply::error(
            404,
            "model 'mock-model' not found, try pulling it first",
        ));
        mock.push(Reply::error(
            400,
            "prompt is too long: 250000 tokens > 200000 maximum",
        ));
        let client = client(&mock, format);
        let (result, _) = complete(&client, &[user("hi")]).await;
        let error = result.unwrap_err().to_string();
        assert!(
            error.starts_with("model not found: mock-model ("),
            "{error}"
        );
        let (result, _) = complete(&client, &[user("hi")]).await;
        let error = result.unwrap_err();
        assert!(error.is_context_overflow(), "{error}");
        assert!(
            error.to_string().contains("(HTTP 400): prompt is too long"),
            "{error}"
        );
        assert_eq!(mock.requests().len(), 2);
    }
}

#[tokio::test]
async fn idle_stream_times_out_and_is_retried() {
    for format in FORMATS {
        let mock = MockLlm::start().await;
        mock.push(Reply::stall());
        mock.push(Reply::text("awake"));
        let client = client_with(&mock, format, |p| p.stream_idle_timeout_secs = 1);
        let (result, events) = complete(&client, &[user("hi")]).await;
        assert_eq!(result.unwrap().content, "awake", "{format:?}");
        let retries = retries(&events);
        assert_eq!(retries.len(), 1);
        assert!(
            retries[0].2.contains("no data from provider mock for 1 s"),
            "{}",
            retries[0].2
        );
        assert_eq!(mock.requests().len(), 2);
    }
}

#[tokio::test]
async fn dropping_the_call_cancels_it() {
    for format in FORMATS {
        let mock = MockLlm::start().await;
        mock.push(Reply::stall());
        mock.push(Reply::text("after cancel"));
        let client = client(&mock, format);
        let messages = [user("hi")];
        tokio::select! {
            _ = complete(&client, &messages) => panic!("a stalled call finished"),
            _ = mock.wait_for_requests(1) => {}
        }
        // The client is still usable after a cancelled call.
        let (result, _) = complete(&client, &messages).await;
        assert_eq!(result.unwrap().content, "after cancel");
    }
}

#[tokio::test]
async fn bodies_of_a_session_extend_each_other() {
    for format in FORMATS {
        let mock = MockLlm::start().await;
        mock.push(Reply::tool_call(
            "call_1",
            "ls",
            serde_json::json!({"path": "."}),
        ));
        mock.push(Reply::text("done"));
        let client = client(&mock, format);
        let mut history = vec![user("list files")];
        let (first, _) = complete(&client, &history).await;
        let first = first.unwrap();
        history.push(Message::Assistant {
            content: first.content,
            tool_calls: first.tool_calls,
        });
        history.push(Message::Tool {
            tool_call_id: "call_1".to_owned(),
            tool_name: "ls".to_owned(),
            content: "a.txt\nb.txt".to_owned(),
            is_error: false,
            images: Vec::new(),
        });
        complete(&client, &history).await.0.unwrap();
        let requests = mock.wait_for_requests(2).await;
        // Anthropic's moving cache breakpoint aside, the first body up to the end of its
        // messages is a byte-exact prefix of the second.
        let normalise = |body: &str| body.replace(r#","cache_control":{"type":"ephemeral"}"#, "");
        let (short, long) = (normalise(&requests[0].body), normalise(&requests[1].body));
        let closing = match format {
            Format::OpenAi => "]}",
            Format::Anthropic => "]}]}",
        };
        let prefix = short.strip_suffix(closing).unwrap();
        assert!(
            prefix.ends_with("list files\"") || prefix.ends_with("list files\"}"),
            "{prefix}"
        );
        assert!(long.starts_with(prefix), "{format:?}\n{short}\n{long}");
        assert!(long.len() > short.len() + 20);
    }
}

#[tokio::test]
async fn exhausted_script_fails_strict_or_echoes() {
    let strict = MockLlm::start().await;
    let (result, events) = complete(&client(&strict, Format::OpenAi), &[user("hi")]).await;
    let error = result.unwrap_err().to_string();
    assert!(
        error.contains("mock-llm: no scripted reply left"),
        "{error}"
    );
    assert_eq!(retries(&events).len(), 3, "500 is retried");
    assert_eq!(strict.requests().len(), 4);

    for format in FORMATS {
        let echo = MockLlm::start_echo().await;
        let history = [user("first"), user("second words")];
        let (result, _) = complete(&client(&echo, format), &history).await;
        assert_eq!(
            result.unwrap().content,
            "You said: second words",
            "{format:?}"
        );
    }
}

#[tokio::test]
async fn mock_llm_binary_serves_script_then_echo_and_control_endpoints() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"[{"text": "from the script", "usage": {"input": 3, "output": 2}}]"#,
    )
    .unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mock-llm"))
        .arg("--script")
        .arg(&script)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    let line = lines.next_line().await.unwrap().unwrap();
    let base_url = line.strip_prefix("listening on ").unwrap().to_owned();
    assert!(base_url.starts_with("http://127.0.0.1:"), "{line}");

    let clients = agentd_llm::HttpClients::new().unwrap();
    let http = clients.for_url(&base_url).await.unwrap();
    let mut provider = ProviderConfig {
        kind: ProviderKind::OpenAi,
        base_url: format!("{base_url}/v1"),
        ..provider(&MockLlm::start().await, Format::OpenAi)
    };
    provider.api_key = None;
    let client = LlmClient::new(provider, clients.clone());
    let (result, _) = complete(&client, &[user("hi")]).await;
    assert_eq!(result.unwrap().content, "from the script");
    let (result, _) = complete(&client, &[user("hi")]).await;
    assert_eq!(result.unwrap().content, "You said: hi");

    let pushed = http
        .post(format!("{base_url}/mock/replies"))
        .body(r#"[{"toolCalls": [{"id": "c1", "name": "ls", "arguments": {"path": "."}}]}]"#)
        .send()
        .await
        .unwrap();
    assert_eq!(pushed.status().as_u16(), 200);
    let (result, _) = complete(&client, &[user("hi")]).await;
    let calls = result.unwrap().tool_calls;
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].arguments, r#"{"path":"."}"#);

    let recorded = http
        .get(format!("{base_url}/mock/requests"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let recorded: serde_json::Value = serde_json::from_str(&recorded).unwrap();
    let recorded = recorded.as_array().unwrap();
    assert_eq!(recorded.len(), 3);
    assert_eq!(recorded[0]["path"], "/v1/chat/completions");
    assert_eq!(recorded[0]["json"]["model"], "mock-model");
    assert!(recorded[0]["headers"].get("authorization").is_none());
    child.kill().await.unwrap();
}

#[tokio::test]
async fn unreachable_and_malformed_endpoints() {
    // A port nobody listens on: connect errors are retried, then reported.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mock = MockLlm::start().await;
    let client = client_with(&mock, Format::OpenAi, |p| {
        p.base_url = format!("http://127.0.0.1:{port}/v1");
        p.max_retries = 2;
    });
    let (result, events) = complete(&client, &[user("hi")]).await;
    let error = result.unwrap_err().to_string();
    assert!(
        error.starts_with(&format!(
            "cannot reach http://127.0.0.1:{port}/v1/chat/completions"
        )),
        "{error}"
    );
    assert!(error.ends_with("(gave up after 3 attempts)"), "{error}");
    assert_eq!(retries(&events).len(), 2);

    // No scheme: a configuration mistake, reported at once.
    let client = client_with(&mock, Format::OpenAi, |p| {
        p.base_url = "localhost:11434/v1".to_owned()
    });
    let (result, events) = complete(&client, &[user("hi")]).await;
    let error = result.unwrap_err().to_string();
    assert!(
        error.starts_with("endpoint not found: localhost:11434/v1/chat/completions"),
        "{error}"
    );
    assert!(error.ends_with("check base_url"), "{error}");
    assert!(events.is_empty());
    assert!(mock.requests().is_empty());
}
