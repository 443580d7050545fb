//! End-to-end scenario helpers: a daemon configured against a `MockLlm` in either wire format,
//! sessions in the test workspace, typed session events and waits on them (never sleeps).

use std::path::Path;
use std::time::Instant;

use protocol::event::{Event, RunStatus, SessionEventEnvelope};
use serde_json::{Value, json};

use crate::harness::{Client, Daemon, TestEnv, WAIT};
use crate::mock_llm::{Format, MockLlm, RecordedRequest};

/// A session event as received: `params.result` of a `session/event` notification.
pub type Envelope = SessionEventEnvelope<Event>;

/// Both wire formats, for tests that loop over them.
pub const FORMATS: [Format; 2] = [Format::OpenAi, Format::Anthropic];

/// `config.toml` with one provider `mock` of `format` pointing at `mock`, small retry delays
/// (`Retry-After` is capped at 200 ms) and `extra` top-level lines (e.g. `max_steps = 2`).
pub fn config_toml(mock: &MockLlm, format: Format, extra: &str) -> String {
    let permissions = default_permissions(extra);
    let (kind, base_url) = match format {
        Format::OpenAi => ("openai", mock.openai_base_url()),
        Format::Anthropic => ("anthropic", mock.base_url()),
    };
    format!(
        "{extra}\n\
         [providers.mock]\n\
         kind = \"{kind}\"\n\
         base_url = \"{base_url}\"\n\
         api_key = \"test-key\"\n\
         model = \"mock-model\"\n\
         max_retries = 3\n\
         retry_base_delay_ms = 10\n\
         retry_max_delay_ms = 200\n\
         stream_idle_timeout_secs = 10\n{permissions}"
    )
}

/// Scenarios run tools without asking unless the test sets its own `[permissions]` (or a
/// session's `permissionMode`): approvals have their own tests.
fn default_permissions(extra: &str) -> &'static str {
    if extra.contains("[permissions]") {
        ""
    } else {
        "[permissions]\ndefault_mode = \"bypass\"\n"
    }
}

/// A daemon talking to a strict mock LLM in one wire format.
pub struct Scenario {
    pub daemon: Daemon,
    pub mock: MockLlm,
    pub format: Format,
}

impl Scenario {
    pub async fn start(format: Format) -> Scenario {
        Scenario::start_with(format, "").await
    }

    /// With extra top-level config lines.
    pub async fn start_with(format: Format, extra: &str) -> Scenario {
        let mock = MockLlm::start().await;
        let env = TestEnv::new().config(&config_toml(&mock, format, extra));
        let daemon = Daemon::start_in(env).await;
        Scenario {
            daemon,
            mock,
            format,
        }
    }

    /// With extra top-level config lines and extra daemon environment variables.
    pub async fn start_with_vars(format: Format, extra: &str, vars: &[(&str, &str)]) -> Scenario {
        let mock = MockLlm::start().await;
        let mut env = TestEnv::new().config(&config_toml(&mock, format, extra));
        for (key, value) in vars {
            env = env.var(key, *value);
        }
        let daemon = Daemon::start_in(env).await;
        Scenario {
            daemon,
            mock,
            format,
        }
    }

    /// With extra config lines and the daemon's test-only write fault seam armed: while the
    /// returned file exists, session-file writes of lines containing its text fail like a
    /// full disk (all writes when it is empty). See `agentd_core::test_seam`.
    pub async fn start_with_write_fault(
        format: Format,
        extra: &str,
    ) -> (Scenario, std::path::PathBuf) {
        let mock = MockLlm::start().await;
        let env = TestEnv::new().config(&config_toml(&mock, format, extra));
        let fault = env.path("write-fault");
        let env = env.var(crate::test_seams::WRITE_FAULT, fault.display().to_string());
        let daemon = Daemon::start_in(env).await;
        let scenario = Scenario {
            daemon,
            mock,
            format,
        };
        (scenario, fault)
    }

    pub fn workspace(&self) -> std::path::PathBuf {
        self.daemon.env.workspace()
    }

    pub async fn client(&self) -> Client {
        self.daemon.client().await
    }

    /// A client with a new session in the workspace, subscribed to it from the start.
    pub async fn session(&self) -> (Client, String) {
        let mut client = self.client().await;
        let session_id = create_session(&mut client, &self.workspace()).await;
        client.subscribe(&session_id, Some(0)).await;
        (client, session_id)
    }
}

/// `session/create` in `cwd`; returns the session id.
pub async fn create_session(client: &mut Client, cwd: &Path) -> String {
    let result = client
        .request("session/create", json!({"cwd": cwd.display().to_string()}))
        .await
        .expect("session/create");
    result["sessionId"]
        .as_str()
        .expect("sessionId in session/create result")
        .to_owned()
}

impl Client {
    /// `session/subscribe`; returns the subscription id (`"sub_…"`).
    pub async fn subscribe(&mut self, session_id: &str, after_seq: Option<u64>) -> Value {
        let mut params = json!({"sessionId": session_id});
        if let Some(after) = after_seq {
            params["afterSeq"] = json!(after);
        }
        let answer = self
            .request("session/subscribe", params)
            .await
            .expect("session/subscribe");
        crate::subscription::subscription_id(answer)
    }

    /// `session/prompt`; returns the run id.
    pub async fn prompt(&mut self, session_id: &str, text: &str) -> String {
        let result = self
            .request(
                "session/prompt",
                json!({"sessionId": session_id, "text": text}),
            )
            .await
            .expect("session/prompt");
        result["runId"].as_str().expect("runId").to_owned()
    }

    /// `session/cancel`; returns its answer (`cancelled`, `runId`).
    pub async fn cancel(&mut self, session_id: &str) -> Value {
        self.request("session/cancel", json!({"sessionId": session_id}))
            .await
            .expect("session/cancel")
    }

    /// `session/followUp`; returns its answer (`runId`, `queued`).
    pub async fn follow_up(&mut self, session_id: &str, text: &str) -> Value {
        self.request(
            "session/followUp",
            json!({"sessionId": session_id, "text": text}),
        )
        .await
        .expect("session/followUp")
    }

    /// `session/steer`; returns its answer (`runId`, `queued`).
    pub async fn steer(&mut self, session_id: &str, text: &str) -> Value {
        self.request(
            "session/steer",
            json!({"sessionId": session_id, "text": text}),
        )
        .await
        .expect("session/steer")
    }

    /// The next `session/event` (other notifications are skipped).
    pub async fn next_event(&mut self) -> Envelope {
        loop {
            let message = self.next_notification().await;
            if message["method"] == protocol::event::SESSION_EVENT {
                let result = message["params"].clone();
                return serde_json::from_value(result.clone())
                    .unwrap_or_else(|err| panic!("bad session event ({err}): {result}"));
            }
        }
    }

    /// The next persisted event (deltas are skipped).
    pub async fn next_persisted_event(&mut self) -> Envelope {
        loop {
            let envelope = self.next_event().await;
            if envelope.event.is_persisted() {
                return envelope;
            }
        }
    }

    /// Persisted events up to and including the first that matches `done`.
    pub async fn persisted_events_until(
        &mut self,
        mut done: impl FnMut(&Event) -> bool,
    ) -> Vec<Envelope> {
        let deadline = Instant::now() + WAIT;
        let mut events = Vec::new();
        loop {
            assert!(
                Instant::now() < deadline,
                "no matching event within {WAIT:?}; got {events:#?}"
            );
            let envelope = self.next_persisted_event().await;
            let matched = done(&envelope.event);
            events.push(envelope);
            if matched {
                return events;
            }
        }
    }

    /// Persisted events up to and including the one with seq `last` (e.g. a whole replay).
    pub async fn events_through_seq(&mut self, last: u64) -> Vec<Envelope> {
        let mut events: Vec<Envelope> = Vec::new();
        while events.last().is_none_or(|e| e.seq < last) {
            events.push(self.next_persisted_event().await);
        }
        events
    }

    /// Persisted events up to and including the next `runFinished`.
    pub async fn events_until_run_finished(&mut self) -> Vec<Envelope> {
        self.persisted_events_until(|event| matches!(event, Event::RunFinished { .. }))
            .await
    }

    /// The next `daemon/event` (other notifications are skipped).
    pub async fn next_daemon_event(&mut self) -> Envelope {
        loop {
            let message = self.next_notification().await;
            if message["method"] == protocol::event::DAEMON_EVENT {
                let result = message["params"].clone();
                return serde_json::from_value(result.clone())
                    .unwrap_or_else(|err| panic!("bad daemon event ({err}): {result}"));
            }
        }
    }

    /// `daemon/event`s up to and including the first that matches `done`.
    pub async fn daemon_events_until(
        &mut self,
        mut done: impl FnMut(&Event) -> bool,
    ) -> Vec<Envelope> {
        let deadline = Instant::now() + WAIT;
        let mut events = Vec::new();
        loop {
            assert!(
                Instant::now() < deadline,
                "no matching daemon event within {WAIT:?}; got {events:#?}"
            );
            let envelope = self.next_daemon_event().await;
            let matched = done(&envelope.event);
            events.push(envelope);
            if matched {
                return events;
            }
        }
    }
}

/// The status of the `runFinished` event that ends `events`.
pub fn run_status(events: &[Envelope]) -> RunStatus {
    match events.last().map(|e| &e.event) {
        Some(Event::RunFinished { status, .. }) => *status,
        other => panic!("the events do not end with runFinished: {other:?}"),
    }
}

/// The error of the `runFinished` event that ends `events`.
pub fn run_error(events: &[Envelope]) -> String {
    match events.last().map(|e| &e.event) {
        Some(Event::RunFinished {
            error: Some(error), ..
        }) => error.clone(),
        other => panic!("the events do not end with a runFinished with an error: {other:?}"),
    }
}

/// The event type names, e.g. `["runStarted", "messageCompleted", …]`.
pub fn kinds(events: &[Envelope]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            serde_json::to_value(&e.event).expect("encode event")["type"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

/// Asserts every tool call of a recorded request has exactly one result, in either format.
pub fn assert_tool_calls_paired(format: Format, request: &RecordedRequest) {
    let transcript = request_transcript(format, request);
    for item in &transcript {
        if let Some(id) = item.strip_prefix("call:") {
            let results = transcript
                .iter()
                .filter(|other| other.strip_prefix("result:") == Some(id))
                .count();
            assert_eq!(
                results, 1,
                "tool call {id} has {results} results: {transcript:?}"
            );
        }
    }
}

/// Asserts the seqs are strictly increasing.
pub fn assert_seqs_increase(events: &[Envelope]) {
    for pair in events.windows(2) {
        assert!(
            pair[1].seq > pair[0].seq,
            "seqs not increasing: {} then {} in {events:#?}",
            pair[0].seq,
            pair[1].seq
        );
    }
}

/// `(toolCallId, output, isError)` of every `toolCompleted` in `events`, in the order the
/// calls started (the model's order), whatever order parallel calls completed in.
pub fn tool_results(events: &[Envelope]) -> Vec<(String, String, bool)> {
    // Calls of a batch that run in parallel complete in any order; they start in call order,
    // so each result is placed where its call started (ids may repeat across steps).
    let mut unfinished: std::collections::HashMap<&str, std::collections::VecDeque<usize>> =
        std::collections::HashMap::new();
    let mut started = 0;
    let mut results: Vec<(usize, (String, String, bool))> = Vec::new();
    for envelope in events {
        match &envelope.event {
            Event::ToolStarted { tool_call_id, .. } => {
                unfinished
                    .entry(tool_call_id.as_str())
                    .or_default()
                    .push_back(started);
                started += 1;
            }
            Event::ToolCompleted {
                tool_call_id,
                output,
                is_error,
                ..
            } => {
                let at = unfinished
                    .get_mut(tool_call_id.as_str())
                    .and_then(std::collections::VecDeque::pop_front)
                    .unwrap_or(usize::MAX);
                results.push((at, (tool_call_id.clone(), output.clone(), *is_error)));
            }
            _ => {}
        }
    }
    results.sort_by_key(|(at, _)| *at);
    results.into_iter().map(|(_, result)| result).collect()
}

/// A tool result as the model saw it in a recorded request: `(toolCallId, content, isError)`,
/// in request order, in either format.
pub fn request_tool_results(format: Format, request: &RecordedRequest) -> Vec<(String, String)> {
    let messages = request.json["messages"]
        .as_array()
        .expect("messages array in request");
    let mut results = Vec::new();
    for message in messages {
        match format {
            Format::OpenAi => {
                if message["role"] == "tool" {
                    results.push((
                        message["tool_call_id"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                        content_text(&message["content"]),
                    ));
                }
            }
            Format::Anthropic => {
                for block in message["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_result" {
                        results.push((
                            block["tool_use_id"].as_str().unwrap_or_default().to_owned(),
                            content_text(&block["content"]),
                        ));
                    }
                }
            }
        }
    }
    results
}

/// The user texts of a recorded request, in order (in Anthropic a text block may share a user
/// message with tool results).
pub fn request_user_texts(format: Format, request: &RecordedRequest) -> Vec<String> {
    let messages = request.json["messages"]
        .as_array()
        .expect("messages array in request");
    let mut texts = Vec::new();
    for message in messages.iter().filter(|m| m["role"] == "user") {
        match format {
            Format::OpenAi => texts.push(content_text(&message["content"])),
            Format::Anthropic => match &message["content"] {
                Value::String(text) => texts.push(text.clone()),
                content => {
                    for block in content.as_array().into_iter().flatten() {
                        if block["type"] == "text" {
                            texts.push(block["text"].as_str().unwrap_or_default().to_owned());
                        }
                    }
                }
            },
        }
    }
    texts
}

/// A flat sequence of what the request's messages say, for order checks: `user:<text>`,
/// `assistant:<text>`, `call:<id>`, `result:<id>`.
pub fn request_transcript(format: Format, request: &RecordedRequest) -> Vec<String> {
    let messages = request.json["messages"]
        .as_array()
        .expect("messages array in request");
    let mut items = Vec::new();
    for message in messages {
        let role = message["role"].as_str().unwrap_or_default();
        match format {
            Format::OpenAi => match role {
                "tool" => items.push(format!(
                    "result:{}",
                    message["tool_call_id"].as_str().unwrap_or_default()
                )),
                "system" => {}
                _ => {
                    let text = content_text(&message["content"]);
                    if !text.is_empty() {
                        items.push(format!("{role}:{text}"));
                    }
                    for call in message["tool_calls"].as_array().into_iter().flatten() {
                        items.push(format!("call:{}", call["id"].as_str().unwrap_or_default()));
                    }
                }
            },
            Format::Anthropic => match &message["content"] {
                Value::String(text) => items.push(format!("{role}:{text}")),
                content => {
                    for block in content.as_array().into_iter().flatten() {
                        let item = match block["type"].as_str().unwrap_or_default() {
                            "text" => {
                                format!("{role}:{}", block["text"].as_str().unwrap_or_default())
                            }
                            "tool_use" => {
                                format!("call:{}", block["id"].as_str().unwrap_or_default())
                            }
                            "tool_result" => format!(
                                "result:{}",
                                block["tool_use_id"].as_str().unwrap_or_default()
                            ),
                            other => format!("{role}:<{other}>"),
                        };
                        items.push(item);
                    }
                }
            },
        }
    }
    items
}

/// The system prompt of a recorded request, in either format (OpenAI: the first message with
/// role `system`; Anthropic: the `system` field, a string or text blocks).
pub fn request_system_text(format: Format, request: &RecordedRequest) -> String {
    match format {
        Format::OpenAi => request.json["messages"]
            .as_array()
            .and_then(|messages| messages.iter().find(|m| m["role"] == "system"))
            .map(|message| content_text(&message["content"]))
            .unwrap_or_default(),
        Format::Anthropic => content_text(&request.json["system"]),
    }
}

/// Text of a message or block content: a string, or the text blocks of an array.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Make a named pipe: a tool reading it blocks until the test writes, a deterministic gate.
pub fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("path without NUL");
    // SAFETY: a valid NUL-terminated path; mkfifo has no other preconditions.
    let rc = unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) };
    assert_eq!(
        rc,
        0,
        "mkfifo {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
}

/// Write `data` into the FIFO `path` once a reader has it open, then close it (the reader sees
/// the data, then end of file). Never blocks a thread: a non-blocking open is retried while no
/// reader is there yet (bounded by `WAIT`).
pub async fn write_fifo(path: &Path, data: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let deadline = Instant::now() + WAIT;
    loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
        {
            Ok(mut file) => {
                file.write_all(data.as_bytes()).expect("write to the FIFO");
                return;
            }
            Err(err) if err.raw_os_error() == Some(libc::ENXIO) => {}
            Err(err) => panic!("cannot open {} for writing: {err}", path.display()),
        }
        assert!(
            Instant::now() < deadline,
            "nobody opened {} for reading within {WAIT:?}",
            path.display()
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// Poll an outside condition (a file, a process) until it holds; fails after `WAIT`. Only for
/// state the daemon cannot announce as an event.
pub async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// True when process `pid` no longer runs (gone, or a zombie nobody reaped yet).
pub fn process_gone(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return true;
    }
    // In containers without an init that reaps, a killed orphan stays a zombie: it is dead.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

/// The session's JSONL file in `env`.
pub fn session_file(env: &TestEnv, session_id: &str) -> std::path::PathBuf {
    env.path("state")
        .join("agentd")
        .join("sessions")
        .join(format!("{session_id}.jsonl"))
}

/// Body of a recorded request with Anthropic's moving `cache_control` breakpoints removed.
pub fn without_cache_control(body: &str) -> String {
    body.replace(r#","cache_control":{"type":"ephemeral"}"#, "")
}

impl Scenario {
    /// Runs one batch of `calls` (id, tool, input) in a new session to the end of its run and
    /// returns each call's `(output, isError)`, in the order of `calls`.
    pub async fn run_batch(
        &self,
        calls: Vec<(&str, &str, serde_json::Value)>,
    ) -> Vec<(String, bool)> {
        let ids: Vec<String> = calls.iter().map(|(id, _, _)| (*id).to_owned()).collect();
        self.mock.push(crate::mock_llm::Reply::tool_calls(
            calls
                .into_iter()
                .map(|(id, name, input)| (id, name, input.to_string()))
                .collect(),
        ));
        self.mock.push(crate::mock_llm::Reply::text("done"));
        let (mut client, session) = self.session().await;
        client.prompt(&session, "run the batch").await;
        let events = client.events_until_run_finished().await;
        assert_eq!(run_status(&events), RunStatus::Completed);
        let results = tool_results(&events);
        ids.iter()
            .map(|id| {
                let (_, output, is_error) = results
                    .iter()
                    .find(|(call, _, _)| call == id)
                    .unwrap_or_else(|| panic!("no result for {id} in {results:?}"));
                (output.clone(), *is_error)
            })
            .collect()
    }
}
