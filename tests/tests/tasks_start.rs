//! `task/start` (a background subagent a client starts, with no parent session) and
//! `[tasks] notify_idle_parent = false` (a finished task's notification waits for the
//! parent's next run instead of starting one).

use agentd_tests::mock_llm::{Format, RecordedRequest, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::event::{Event, RunStatus};
use protocol::task::{TaskGetResult, TaskInfo, TaskStatus};
use serde_json::{Value, json};

const CHECKER: &str = "---\nname: checker\ndescription: Checks things\ntools: read_file, task, memory, run_shell\npermissionMode: plan\n---\nYou are the checker. Be brief.";

fn write_agent(s: &Scenario, file: &str, text: &str) {
    let dir = s.workspace().join(".agents/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(file), text).unwrap();
}

fn tool_names(request: &RecordedRequest) -> Vec<String> {
    request.json["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn finished(events: &[Envelope]) -> Option<TaskInfo> {
    events.iter().find_map(|envelope| match &envelope.event {
        Event::TaskFinished { task } => Some((**task).clone()),
        _ => None,
    })
}

#[tokio::test]
async fn agentctl_task_start_runs_a_parentless_subagent_to_its_result() {
    let s = Scenario::start(Format::OpenAi).await;
    write_agent(&s, "checker.md", CHECKER);
    s.mock.push(Reply::text("all three checks pass"));
    let mut watcher = s.client().await;
    watcher
        .request("daemon/subscribe", json!({}))
        .await
        .expect("daemon/subscribe");

    let sub = s.workspace().join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let output = s
        .daemon
        .env
        .agentctl()
        .current_dir(&sub)
        .args([
            "task",
            "start",
            "--agent",
            "checker",
            "CHECK-JOB run the checks",
        ])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(output.status.success(), "{output:?}");
    let task_id = stdout.trim().to_owned();
    assert!(task_id.starts_with("task_"), "{stdout}");

    let events = watcher
        .daemon_events_until(|event| matches!(event, Event::TaskFinished { .. }))
        .await;
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.event, Event::TaskStarted { task } if task.task_id == task_id)),
        "{events:#?}"
    );
    let task = finished(&events).unwrap();
    assert_eq!(task.task_id, task_id);
    assert_eq!(task.status, TaskStatus::Completed, "{task:#?}");
    assert_eq!(task.parent_session_id, None);
    assert_eq!(task.agent_type.as_deref(), Some("checker"));
    assert_eq!(task.result.as_deref(), Some("all three checks pass"));
    assert_eq!(task.cwd, sub.canonicalize().unwrap().display().to_string());

    // The child: the definition's prompt, its prompt as the one message, no task tools (even
    // listed), and no parent; it ran under the definition's tighter mode.
    let requests = s.mock.wait_for_requests(1).await;
    let system = requests[0].json["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(system.starts_with("You are the checker."), "{system}");
    assert!(!system.contains("<available_agents>"), "{system}");
    let messages = requests[0].json["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{messages:#?}");
    assert_eq!(messages[1]["content"], json!("CHECK-JOB run the checks"));
    let tools = tool_names(&requests[0]);
    assert!(tools.contains(&"read_file".to_owned()), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t == "task" || t == "memory"),
        "{tools:?}"
    );
    let child = task.child_session_id.clone().unwrap();
    let mut client = s.client().await;
    let got = client
        .request("session/get", json!({"sessionId": child}))
        .await
        .unwrap();
    assert_eq!(got["session"].get("parentSessionId"), None, "{got}");
    assert_eq!(got["session"]["permissionMode"], json!("plan"), "{got}");

    // The result is the task's output, in text and JSON.
    let output = s
        .daemon
        .env
        .run_agentctl(&["task", "output", &task_id])
        .await;
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "all three checks pass"
    );
    let got: TaskGetResult = serde_json::from_value(
        client
            .request("task/get", json!({"taskId": task_id}))
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(got.task.status, TaskStatus::Completed);
}

#[tokio::test]
async fn task_start_refuses_bad_requests_with_what_to_do() {
    let s = Scenario::start(Format::OpenAi).await;
    let mut client = s.client().await;
    let cwd = s.workspace().display().to_string();
    let refusal = |result: Result<Value, agentd_tests::harness::RpcError>| {
        let err = result.expect_err("refused");
        (err.code, err.message)
    };
    let (code, message) = refusal(
        client
            .request(
                "task/start",
                json!({"cwd": cwd, "prompt": "go", "agentType": "nobody"}),
            )
            .await,
    );
    assert_eq!(code, -32602, "{message}");
    assert!(
        message.contains("nobody") && message.contains("general-purpose"),
        "{message}"
    );
    let (code, message) = refusal(
        client
            .request("task/start", json!({"cwd": "relative/dir", "prompt": "go"}))
            .await,
    );
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("absolute"), "{message}");
    let (code, message) = refusal(
        client
            .request("task/start", json!({"cwd": cwd, "prompt": "  "}))
            .await,
    );
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("empty"), "{message}");
    // Longer than one message may be (a client's text is refused, not cut).
    let huge = "x".repeat(agentd_core::conversation::MAX_MESSAGE_CHARS + 1);
    let (code, message) = refusal(
        client
            .request("task/start", json!({"cwd": cwd, "prompt": huge}))
            .await,
    );
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("prompt too long"), "{message}");
    // Nothing was recorded and nothing reached the model.
    let all = client
        .request("task/list", json!({"all": true}))
        .await
        .unwrap();
    assert_eq!(all["tasks"], json!([]), "{all}");
    assert!(s.mock.requests().is_empty());
}

#[tokio::test]
async fn a_stopped_client_task_is_cancelled_and_its_child_run_ends() {
    let s = Scenario::start(Format::OpenAi).await;
    s.mock.push(Reply::stall());
    let mut client = s.client().await;
    client.request("daemon/subscribe", json!({})).await.unwrap();
    let started = client
        .request(
            "task/start",
            json!({"cwd": s.workspace().display().to_string(), "prompt": "wait forever"}),
        )
        .await
        .unwrap();
    let task_id = started["taskId"].as_str().unwrap().to_owned();
    assert_eq!(started["task"]["kind"], json!("subagent"), "{started}");
    s.mock.wait_for_requests(1).await;
    client
        .request("task/stop", json!({"taskId": task_id}))
        .await
        .unwrap();
    let events = client
        .daemon_events_until(|event| matches!(event, Event::TaskFinished { .. }))
        .await;
    let task = finished(&events).unwrap();
    assert_eq!(task.status, TaskStatus::Cancelled, "{task:#?}");
}

#[tokio::test]
async fn with_notify_idle_parent_off_the_notification_opens_the_parents_next_run() {
    let s = Scenario::start_with(Format::OpenAi, "[tasks]\nnotify_idle_parent = false\n").await;
    s.mock.push(Reply::tool_call(
        "call_bg",
        "task",
        json!({"prompt": "BACKGROUND-JOB count files", "runInBackground": true}),
    ));
    s.mock.push(Reply::text("started it"));
    // The child answers only once the parent's run has made its two requests.
    s.mock.push_for(
        r#""content":"BACKGROUND-JOB"#,
        Reply::text("there are 3 files").after_requests(3),
    );
    let (mut client, session) = s.session().await;
    client.prompt(&session, "start a background count").await;
    let first = client.events_until_run_finished().await;
    assert_eq!(run_status(&first), RunStatus::Completed);
    let events = client
        .persisted_events_until(|event| matches!(event, Event::TaskFinished { .. }))
        .await;
    // No run started for it: the parent stays idle.
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.event, Event::RunStarted { .. })),
        "{events:#?}"
    );
    let task = finished(&events).unwrap();
    assert_eq!(task.status, TaskStatus::Completed);
    assert_eq!(s.mock.requests().len(), 3);

    // The user's next prompt carries it, before the prompt itself.
    s.mock.push(Reply::text("noted the count"));
    client.prompt(&session, "what did the task find?").await;
    let next = client.events_until_run_finished().await;
    assert_eq!(run_status(&next), RunStatus::Completed);
    let requests = s.mock.wait_for_requests(4).await;
    let users = request_user_texts(Format::OpenAi, &requests[3]);
    let n = users.len();
    assert!(n >= 3, "{users:#?}");
    assert!(
        users[n - 2].starts_with("<task-notification>"),
        "{users:#?}"
    );
    assert!(users[n - 2].contains(&task.task_id), "{users:#?}");
    assert!(users[n - 2].contains("there are 3 files"), "{users:#?}");
    assert_eq!(users[n - 1], "what did the task find?");
}

/// Model prices for the mock: $1000 per million tokens, so one token costs $0.001.
const PRICES: &str = "[providers.mock.prices]\ninput = 1000.0\noutput = 1000.0\n";

#[tokio::test]
async fn a_run_reports_its_cost_and_an_agents_budget_pauses_its_run_until_stopped() {
    let mut s = Scenario::start_with(Format::OpenAi, PRICES).await;
    write_agent(
        &s,
        "spender.md",
        "---\nname: spender\ndescription: Spends\nmaxBudgetUsd: 0.05\n---\nSpend carefully.",
    );
    // A plain run: 10 in + 5 out at $0.001 a token.
    s.mock.push(Reply::text("hello"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "hi").await;
    let events = client.events_until_run_finished().await;
    let Some(Event::RunFinished { cost_usd, .. }) = events.last().map(|e| &e.event) else {
        panic!("{events:#?}")
    };
    let cost = cost_usd.expect("costUsd with prices configured");
    assert!((cost - 0.015).abs() < 1e-9, "{cost}");
    // The session keeps the sum (and across a restart, below: from its last usageUpdated).
    let got = client
        .request("session/get", json!({"sessionId": session}))
        .await
        .unwrap();
    let total = got["session"]["costUsd"].as_f64().unwrap_or_default();
    assert!((total - 0.015).abs() < 1e-9, "{got}");

    // The agent's first call costs $0.05, its whole budget: the task's run pauses before a
    // second call (a client's task holds it for an answer) and a client stops it.
    s.mock
        .push(Reply::tool_call("call_1", "list_dir", json!({"path": "."})).usage(30, 20, 0));
    s.mock.push(Reply::text("never asked for"));
    client.request("daemon/subscribe", json!({})).await.unwrap();
    let started = client
        .request(
            "task/start",
            json!({"cwd": s.workspace().display().to_string(), "prompt": "spend", "agentType": "spender"}),
        )
        .await
        .unwrap();
    let child = started["task"]["childSessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut answerer = s.client().await;
    answerer.subscribe(&child, Some(0)).await;
    let paused = answerer
        .persisted_events_until(|event| matches!(event, Event::BudgetExceeded { .. }))
        .await;
    let Some(Event::BudgetExceeded { request, .. }) = paused.last().map(|e| &e.event) else {
        panic!("{paused:#?}")
    };
    assert!(request.message.contains("maxBudgetUsd"), "{request:?}");
    answerer
        .request(
            "budget/respond",
            json!({"requestId": request.request_id, "decision": "stop"}),
        )
        .await
        .unwrap();
    let events = client
        .daemon_events_until(|event| matches!(event, Event::TaskFinished { .. }))
        .await;
    let task = finished(&events).unwrap();
    assert_eq!(task.status, TaskStatus::Failed, "{task:#?}");
    let error = task.error.clone().unwrap_or_default();
    assert!(
        error.contains("maxBudgetUsd") && error.contains("$0.05") && error.contains("stopped by"),
        "{error}"
    );
    assert_eq!(
        s.mock.requests().len(),
        2,
        "one request for the run, one for the agent"
    );

    drop(client);
    drop(answerer);
    s.daemon.kill().await;
    s.daemon.restart().await;
    let mut client = s.client().await;
    let got = client
        .request("session/get", json!({"sessionId": session}))
        .await
        .unwrap();
    let total = got["session"]["costUsd"].as_f64().unwrap_or_default();
    assert!((total - 0.015).abs() < 1e-9, "after a restart: {got}");
}

#[tokio::test]
async fn without_prices_a_budget_is_not_enforced_and_the_run_says_so() {
    let s = Scenario::start(Format::OpenAi).await;
    write_agent(
        &s,
        "spender.md",
        "---\nname: spender\ndescription: Spends\nmaxBudgetUsd: 0.05\n---\nSpend carefully.",
    );
    s.mock
        .push(Reply::text("done").usage(1_000_000, 1_000_000, 0));
    let mut client = s.client().await;
    let created = client
        .request(
            "session/create",
            json!({"cwd": s.workspace().display().to_string(), "agentType": "spender"}),
        )
        .await
        .unwrap();
    let session = created["sessionId"].as_str().unwrap().to_owned();
    client.subscribe(&session, Some(0)).await;
    client.prompt(&session, "go").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let warned = events.iter().any(|e| {
        matches!(&e.event, Event::Warning { message } if message.contains("maxBudgetUsd") && message.contains("[providers.mock.prices]"))
    });
    assert!(warned, "{events:#?}");
    let Some(Event::RunFinished { cost_usd, .. }) = events.last().map(|e| &e.event) else {
        panic!("{events:#?}")
    };
    assert_eq!(*cost_usd, None);
}

#[tokio::test]
async fn a_client_tasks_approval_waits_for_an_answer_with_nobody_attached() {
    let s = Scenario::start_with(
        Format::OpenAi,
        "[permissions]\ndefault_mode = \"default\"\n",
    )
    .await;
    s.mock.push(Reply::tool_call(
        "call_1",
        "run_shell",
        json!({"command": "touch approved-file"}),
    ));
    s.mock.push(Reply::text("made it"));
    // A viewer: it follows the child but cannot answer, so nobody who answers is attached.
    let mut viewer = agentd_tests::harness::Client::connect_raw(s.daemon.socket())
        .await
        .unwrap();
    viewer.initialize_as("viewer", false).await;
    let started = viewer
        .request(
            "task/start",
            json!({"cwd": s.workspace().display().to_string(), "prompt": "make the file"}),
        )
        .await
        .unwrap();
    let child = started["task"]["childSessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    viewer.subscribe(&child, Some(0)).await;
    let events = viewer
        .persisted_events_until(|event| matches!(event, Event::ApprovalRequested { .. }))
        .await;
    let Some(Event::ApprovalRequested { approval, .. }) = events.last().map(|e| &e.event) else {
        panic!("{events:#?}")
    };
    // Not denied by the mode: it is pending, listed, and answered later by another client.
    let listed = viewer.request("approval/list", json!({})).await.unwrap();
    assert_eq!(
        listed["approvals"][0]["approvalId"],
        json!(approval.approval_id),
        "{listed}"
    );
    let mut answerer = s.client().await;
    answerer
        .request(
            "approval/respond",
            json!({"approvalId": approval.approval_id, "decision": "allowOnce"}),
        )
        .await
        .unwrap();
    let events = viewer.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed, "{events:#?}");
    assert!(s.workspace().join("approved-file").exists());
}
