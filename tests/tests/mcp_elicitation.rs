//! An MCP server's questions and sampling requests during its tool calls, with the scripted
//! `asking_server.py` on the real Python SDK: a question (`elicitation/create`) is answered
//! by a second client (a bad answer refused and the question left open, the first answer
//! wins, the server gets the answers, the model reads the tool's result); headless, it is
//! declined at once with a reason the server sees; sampling with `sampling = true` runs on the
//! session's model after an approval and counts in the usage, and without it is refused; an
//! editor over `agentctl acp` is asked with ACP's `elicitation/create`; npm server-everything
//! offers its elicitation tool, and its sampling tool only with `sampling = true`.

use agentd_tests::harness::Client;
use agentd_tests::mcp_scenario::*;
use agentd_tests::mcp_servers::asking_server;
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::approval::ApprovalDecision;
use protocol::elicitation::ElicitationAction;
use protocol::error as codes;
use protocol::event::{Event, RunStatus};
use serde_json::json;

/// The Python server can take longer than the default 5 s to start on a busy machine.
const SLOW_START: &str = "[mcp]\nstartup_grace_secs = 60\n";

fn asking(extra: &str) -> String {
    format!(
        "{}{SLOW_START}",
        server_toml("ask", &asking_server(), extra)
    )
}

/// The question announced on `client`'s subscription, and the events up to it.
async fn question(client: &mut Client) -> protocol::elicitation::ElicitationRequest {
    let events = client
        .persisted_events_until(|event| matches!(event, Event::ElicitationRequested { .. }))
        .await;
    match &events.last().unwrap().event {
        Event::ElicitationRequested { request, .. } => request.clone(),
        _ => unreachable!(),
    }
}

fn resolutions(events: &[Envelope]) -> Vec<(ElicitationAction, String, Option<String>)> {
    events
        .iter()
        .filter_map(|envelope| match &envelope.event {
            Event::ElicitationResolved {
                action,
                decided_by,
                reason,
                ..
            } => Some((*action, decided_by.clone(), reason.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_question_is_answered_by_a_second_client_and_the_first_answer_wins() {
    let s = Scenario::start_with(Format::OpenAi, &asking("")).await;
    let (mut first, session_id) = s.session().await;
    let mut second = s.client().await;
    second.subscribe(&session_id, Some(0)).await;
    s.mock
        .push(Reply::tool_call("q", "mcp__ask__ask_name", json!({})));
    s.mock.push(Reply::text("Hello, Ada."));
    first.prompt(&session_id, "ask who I am").await;

    let request = question(&mut second).await;
    assert_eq!(request.server, "ask");
    assert_eq!(request.message, "Who are you?");
    assert_eq!(request.tool_call_id.as_deref(), Some("q"));
    assert_eq!(request.requested_schema["properties"]["age"]["default"], 30);
    let id = request.elicitation_id.clone();

    // An answer that does not fit is refused, naming the field; the question stays open.
    let bad = second
        .request(
            "elicitation/respond",
            json!({"elicitationId": id, "action": "accept", "content": {"name": "Ada", "age": "old"}}),
        )
        .await
        .unwrap_err();
    assert_eq!(bad.code, i64::from(codes::INVALID_PARAMS));
    assert!(
        bad.message.contains("\"age\" must be of type integer"),
        "{}",
        bad.message
    );

    let answered = second
        .request(
            "elicitation/respond",
            json!({"elicitationId": id, "action": "accept", "content": {"name": "Ada"}}),
        )
        .await
        .unwrap();
    assert_eq!(
        answered["content"],
        json!({"name": "Ada", "age": 30}),
        "the default filled in"
    );
    let late = first
        .request(
            "elicitation/respond",
            json!({"elicitationId": id, "action": "decline"}),
        )
        .await
        .unwrap_err();
    assert_eq!(late.code, i64::from(codes::ALREADY_DECIDED));
    assert!(
        late.message.contains("already answered (accept by client:"),
        "{}",
        late.message
    );

    let events = first.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let resolved = resolutions(&events);
    assert_eq!(resolved.len(), 1, "{resolved:?}");
    assert_eq!(resolved[0].0, ElicitationAction::Accept);
    assert!(resolved[0].1.starts_with("client:"), "{resolved:?}");
    let results = tool_results(&events);
    assert_eq!(results[0].1, "accept name=Ada age=30", "{results:?}");
    // The model reads what the server made of the answer.
    let requests = s.mock.wait_for_requests(2).await;
    let sent = request_tool_results(Format::OpenAi, &requests[1]);
    assert_eq!(
        sent,
        vec![("q".to_owned(), "accept name=Ada age=30".to_owned())]
    );
    // The question and its answer are in the session's log.
    let log = std::fs::read_to_string(session_file(&s.daemon.env, &session_id)).unwrap();
    assert!(log.contains("\"elicitationRequested\"") && log.contains("\"elicitationResolved\""));
}

#[tokio::test]
async fn a_question_nobody_can_answer_is_declined_at_once_with_a_reason() {
    let s = Scenario::start_with(Format::OpenAi, &asking("")).await;
    // A viewer that does not answer approvals: the session is headless.
    let mut viewer = Client::connect_raw(s.daemon.socket()).await.unwrap();
    viewer.initialize_as("status-bar", false).await;
    let session_id = create_session(&mut viewer, &s.workspace()).await;
    viewer.subscribe(&session_id, Some(0)).await;
    s.mock
        .push(Reply::tool_call("q", "mcp__ask__ask_name", json!({})));
    s.mock.push(Reply::text("Nobody answered."));
    viewer.prompt(&session_id, "ask who I am").await;
    let events = viewer.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let resolved = resolutions(&events);
    assert_eq!(resolved.len(), 1, "{resolved:?}");
    assert_eq!(resolved[0].0, ElicitationAction::Decline);
    assert_eq!(resolved[0].1, "mode");
    let results = tool_results(&events);
    assert!(
        results[0]
            .1
            .starts_with("decline reason=no client that answers is attached"),
        "the server sees the decline and why: {results:?}"
    );
}

#[tokio::test]
async fn sampling_allowed_in_the_users_config_runs_on_the_session_model_after_an_approval() {
    let s = Scenario::start_with(Format::OpenAi, &asking("sampling = true")).await;
    let (mut client, session_id) = s.session().await;
    s.mock.push(Reply::tool_call(
        "s",
        "mcp__ask__summarize",
        json!({"text": "tides rise twice a day"}),
    ));
    // The sampling call, then the run's next model call.
    s.mock
        .push(Reply::text("Tides rise twice daily.").usage(40, 6, 0));
    s.mock.push(Reply::text("Summarised."));
    client.prompt(&session_id, "summarise it").await;

    let events = client
        .persisted_events_until(|event| matches!(event, Event::ApprovalRequested { .. }))
        .await;
    let Event::ApprovalRequested { approval, .. } = &events.last().unwrap().event else {
        unreachable!()
    };
    assert_eq!(approval.tool, "mcp__ask__sampling");
    assert_eq!(approval.tool_call_id, "s");
    let prompt = approval.input["prompt"].as_str().unwrap();
    assert!(
        prompt.contains("[system] You summarise in five words.")
            && prompt.contains("[user] tides rise twice a day"),
        "{prompt}"
    );
    assert_eq!(approval.input["maxTokens"], 50);
    assert_eq!(
        approval.options,
        vec![ApprovalDecision::AllowOnce, ApprovalDecision::Deny]
    );
    client
        .request(
            "approval/respond",
            json!({"approvalId": approval.approval_id, "decision": "allowOnce"}),
        )
        .await
        .unwrap();
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let results = tool_results(&events);
    assert_eq!(
        results[0].1, "summary: Tides rise twice daily. (model mock-model)",
        "{results:?}"
    );
    // The mock saw the server's conversation and nothing of the session's.
    let requests = s.mock.wait_for_requests(3).await;
    let sampling = &requests[1].json;
    assert_eq!(
        sampling["messages"][0]["content"],
        "You summarise in five words."
    );
    assert_eq!(sampling["messages"][1]["content"], "tides rise twice a day");
    assert_eq!(sampling["messages"].as_array().unwrap().len(), 2);
    assert!(
        sampling
            .get("tools")
            .is_none_or(|tools| tools.as_array().is_some_and(Vec::is_empty))
    );
    assert_eq!(sampling["max_tokens"], 50);
    // Its tokens count in the session's usage.
    let counted = events.iter().any(|envelope| {
        matches!(&envelope.event, Event::UsageUpdated { usage, .. } if usage.input_tokens == 40 && usage.output_tokens == 6)
    });
    assert!(counted, "{events:#?}");
    let got = client
        .request("session/get", json!({"sessionId": session_id}))
        .await
        .unwrap();
    assert!(
        got["session"]["usage"]["inputTokens"].as_u64().unwrap() >= 40,
        "{got}"
    );
}

#[tokio::test]
async fn sampling_without_the_users_flag_is_refused() {
    let s = Scenario::start_with(Format::OpenAi, &asking("")).await;
    let (mut client, session_id) = s.session().await;
    s.mock.push(Reply::tool_call(
        "s",
        "mcp__ask__summarize",
        json!({"text": "tides"}),
    ));
    s.mock.push(Reply::text("Could not."));
    client.prompt(&session_id, "summarise it").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let results = tool_results(&events);
    assert!(
        results[0]
            .1
            .starts_with("refused: sampling is off for MCP server ask")
            && results[0].1.contains("sampling = true"),
        "{results:?}"
    );
    assert_eq!(s.mock.requests().len(), 2, "no model call for the server");
}

#[tokio::test]
async fn an_editor_over_acp_answers_a_question_with_its_elicitation_request() {
    use agentd_tests::acp_client::{AcpClient, initialize};
    let s = Scenario::start_with(Format::OpenAi, &asking("")).await;
    let mut editor = AcpClient::start(&s.daemon.env).await;
    initialize(&mut editor).await;
    let answer = editor
        .request(
            "session/new",
            json!({"cwd": s.workspace().display().to_string(), "mcpServers": []}),
        )
        .await
        .expect("session/new");
    let session_id = answer["sessionId"].as_str().unwrap().to_owned();
    s.mock
        .push(Reply::tool_call("q", "mcp__ask__ask_name", json!({})));
    s.mock.push(Reply::text("Hello, Grace."));
    let prompt = editor
        .send_request(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": "ask me"}]}),
        )
        .await;
    let seen = editor.until(|m| m["type"] == "elicitation").await;
    let asked = seen.last().unwrap();
    let params = &asked["params"];
    assert_eq!(params["mode"], "form", "{params}");
    assert_eq!(params["sessionId"], session_id.as_str());
    assert_eq!(params["toolCallId"], "q");
    assert_eq!(params["message"], "MCP server ask asks: Who are you?");
    assert_eq!(
        params["requestedSchema"]["properties"]["name"]["type"],
        "string"
    );
    let key = asked["key"].as_u64().unwrap();
    editor
        .answer_elicitation(
            key,
            json!({"action": "accept", "content": {"name": "Grace", "age": 85}}),
        )
        .await;
    let answered = editor.answer(prompt).await.expect("the turn ends");
    assert_eq!(answered["stopReason"], "end_turn");
    let requests = s.mock.wait_for_requests(2).await;
    let sent = request_tool_results(Format::OpenAi, &requests[1]);
    assert_eq!(
        sent,
        vec![("q".to_owned(), "accept name=Grace age=85".to_owned())]
    );
}

#[tokio::test]
async fn server_everything_offers_its_elicitation_tool_and_its_sampling_tool_only_when_allowed() {
    use agentd_tests::mcp_setup::{self, Setup, ready};
    let names = |handle: &agentd_work::mcp::McpHandle| -> Vec<String> {
        handle
            .tools()
            .iter()
            .map(|tool| tool.name.clone())
            .collect()
    };
    let setup = Setup::new();
    let mut config = mcp_setup::stdio("everything", agentd_tests::mcp_servers::everything_stdio());
    let plain = setup.acquire(&config);
    ready(&plain).await;
    // It registers these once initialized, and says so with a list change.
    wait_until("the elicitation tool", || {
        names(&plain).contains(&"trigger-elicitation-request".to_owned())
    })
    .await;
    assert!(!names(&plain).contains(&"trigger-sampling-request".to_owned()));
    config.sampling = true;
    let sampling = setup.acquire(&config);
    ready(&sampling).await;
    wait_until("the sampling tool", || {
        names(&sampling).contains(&"trigger-sampling-request".to_owned())
    })
    .await;
}
