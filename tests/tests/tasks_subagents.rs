//! Subagents end to end: the `task` tool's child sessions (fresh context, filtered tools),
//! foreground results and errors, background delivery to the parent, cancel, parallel
//! read-only children, the cap, and interrupted records after a daemon restart.

use agentd_tests::mock_llm::{Format, RecordedRequest, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::event::{Event, FollowUpOrigin, RunStatus};
use protocol::task::{TaskInfo, TaskStatus};
use serde_json::{Value, json};

const REVIEWER: &str = "---\nname: reviewer\ndescription: Reviews code\ntools: read_file, task, memory, todo_write, task_list\n---\nYou are the reviewer. Report findings briefly.";

/// What only a child's request holds before its prompt: the prompt as its user message (the
/// parent's requests hold it inside the tool call's arguments, quoted).
const CHILD_MARK: &str = r#""content":""#;

fn write_agent(s: &Scenario, file: &str, text: &str) {
    let dir = s.workspace().join(".agents/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(file), text).unwrap();
}

/// The system prompt of an OpenAI chat request.
fn system_prompt(request: &RecordedRequest) -> String {
    request.json["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
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

/// Messages after the system prompt.
fn conversation(request: &RecordedRequest) -> Vec<Value> {
    request.json["messages"]
        .as_array()
        .map(|messages| messages.iter().skip(1).cloned().collect())
        .unwrap_or_default()
}

fn tool_output(events: &[Envelope]) -> (String, bool) {
    events
        .iter()
        .find_map(|envelope| match &envelope.event {
            Event::ToolCompleted {
                tool,
                output,
                is_error,
                ..
            } if tool == "task" => Some((output.clone(), *is_error)),
            _ => None,
        })
        .expect("a task tool result")
}

fn finished_tasks(events: &[Envelope]) -> Vec<TaskInfo> {
    events
        .iter()
        .filter_map(|envelope| match &envelope.event {
            Event::TaskFinished { task } => Some((**task).clone()),
            _ => None,
        })
        .collect()
}

fn run_status(events: &[Envelope]) -> RunStatus {
    events
        .iter()
        .rev()
        .find_map(|envelope| match &envelope.event {
            Event::RunFinished { status, .. } => Some(*status),
            _ => None,
        })
        .expect("runFinished")
}

#[tokio::test]
async fn the_child_gets_the_definition_body_one_message_and_no_task_or_memory_tools() {
    let s = Scenario::start(Format::OpenAi).await;
    write_agent(&s, "reviewer.md", REVIEWER);
    s.mock.push(Reply::tool_call(
        "call_t",
        "task",
        json!({"prompt": "review src/lib.rs", "agentType": "reviewer"}),
    ));
    s.mock.push(Reply::text("Two findings: none serious."));
    s.mock
        .push(Reply::text("The reviewer found nothing serious."));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "please get a review").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);

    let requests = s.mock.requests();
    assert_eq!(requests.len(), 3);
    let parent_tools = tool_names(&requests[0]);
    assert!(
        parent_tools.contains(&"task".to_owned()),
        "{parent_tools:?}"
    );
    let child = &requests[1];
    // Its definition's body, then the environment block its parent's prompt has.
    let child_system = system_prompt(child);
    assert!(
        child_system
            .starts_with("You are the reviewer. Report findings briefly.\n\n<environment>\n"),
        "{child_system}"
    );
    assert!(
        !child_system.contains("<available_agents>"),
        "{child_system}"
    );
    assert_eq!(
        conversation(child),
        [json!({"role": "user", "content": "review src/lib.rs"})]
    );
    assert_eq!(tool_names(child), ["read_file"]);

    assert_eq!(
        tool_output(&events),
        ("Two findings: none serious.".to_owned(), false)
    );
    let started = events
        .iter()
        .find_map(|envelope| match &envelope.event {
            Event::TaskStarted { task } => Some(task.clone()),
            _ => None,
        })
        .expect("taskStarted on the parent's stream");
    assert_eq!(started.status, TaskStatus::Pending);
    assert_eq!(started.description, "review src/lib.rs");
    let finished = finished_tasks(&events);
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0].task_id, started.task_id);
    assert_eq!(finished[0].status, TaskStatus::Completed);
    assert_eq!(finished[0].agent_type.as_deref(), Some("reviewer"));
    assert_eq!(
        finished[0].result.as_deref(),
        Some("Two findings: none serious.")
    );
    assert!(finished[0].child_session_id.is_some());
    assert!(
        finished[0].usage.output_tokens > 0,
        "{:?}",
        finished[0].usage
    );

    // The child is a session of its own, its header naming parent, agent type and task.
    let child_id = finished[0].child_session_id.clone().unwrap();
    let file = std::fs::read_to_string(
        s.daemon
            .env
            .path("state")
            .join("agentd/sessions")
            .join(format!("{child_id}.jsonl")),
    )
    .unwrap();
    let header: Value = serde_json::from_str(file.lines().next().unwrap()).unwrap();
    assert_eq!(header["parentSessionId"], json!(session), "{header}");
    assert_eq!(header["agentType"], json!("reviewer"));
    assert_eq!(header["taskId"], json!(started.task_id));
}

#[tokio::test]
async fn unknown_agents_provider_errors_and_max_turns_are_tool_results() {
    let s = Scenario::start(Format::OpenAi).await;
    write_agent(
        &s,
        "looper.md",
        "---\nname: looper\ndescription: Loops\nmaxTurns: 1\n---\nLoop.",
    );
    // Unknown agent type: an error listing the available ones; the run goes on.
    s.mock.push(Reply::tool_call(
        "call_a",
        "task",
        json!({"prompt": "x", "agentType": "nobody"}),
    ));
    s.mock.push(Reply::text("ok"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "one").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let (output, is_error) = tool_output(&events);
    assert!(is_error);
    assert!(output.contains("no agent named `nobody`"), "{output}");
    assert!(
        output.contains("general-purpose") && output.contains("looper"),
        "{output}"
    );

    // A provider error of the child.
    s.mock.push(Reply::tool_call(
        "call_b",
        "task",
        json!({"prompt": "fail please"}),
    ));
    s.mock.push(Reply::error(400, "bad request from the child"));
    s.mock.push(Reply::text("ok"));
    client.prompt(&session, "two").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let (output, is_error) = tool_output(&events);
    assert!(is_error, "{output}");
    assert!(output.contains("failed"), "{output}");
    assert_eq!(finished_tasks(&events)[0].status, TaskStatus::Failed);

    // Max turns: the child's one model call asks for a tool, and may not make a second.
    s.mock.push(Reply::tool_call(
        "call_c",
        "task",
        json!({"prompt": "loop", "agentType": "looper"}),
    ));
    s.mock
        .push(Reply::tool_call("call_d", "list_dir", json!({"path": "."})));
    s.mock.push(Reply::text("ok"));
    client.prompt(&session, "three").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let (output, is_error) = tool_output(&events);
    assert!(is_error, "{output}");
    assert!(output.contains("maxSteps"), "{output}");
}

#[tokio::test]
async fn a_background_task_delivers_its_result_to_the_idle_parent_as_a_notification() {
    let s = Scenario::start(Format::OpenAi).await;
    s.mock.push(Reply::tool_call(
        "call_bg",
        "task",
        json!({"prompt": "BACKGROUND-JOB count files", "runInBackground": true}),
    ));
    s.mock.push(Reply::text("started it"));
    // The child's reply waits until the parent's first run has finished its second request.
    s.mock.push_for(
        CHILD_MARK.to_owned() + "BACKGROUND-JOB",
        Reply::text("there are 3 files").after_requests(3),
    );
    s.mock.push(Reply::text("the task said 3 files"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "start a background count").await;
    let first = client.events_until_run_finished().await;
    assert_eq!(run_status(&first), RunStatus::Completed);
    let (output, is_error) = tool_output(&first);
    assert!(!is_error, "{output}");
    assert!(
        output.contains("task_") && output.contains("background"),
        "{output}"
    );

    // The task ends; its notification reaches the parent (a new run when the parent is idle
    // by then, else a follow-up of its run) and the model reads it as the latest message.
    // On a busy machine the task can end while the first run is still going: its
    // notification is then that run's follow-up, and all of it is in `first` already.
    let mut events = first;
    let position = |events: &[Envelope], found: fn(&Event) -> bool| {
        events.iter().rposition(|envelope| found(&envelope.event))
    };
    let task_finished = |event: &Event| matches!(event, Event::TaskFinished { .. });
    let run_finished = |event: &Event| matches!(event, Event::RunFinished { .. });
    if position(&events, task_finished).is_none() {
        events.extend(client.persisted_events_until(task_finished).await);
    }
    let requests = s.mock.wait_for_requests(4).await;
    // Else the notification started a run of its own, after the task's end.
    if position(&events, run_finished) < position(&events, task_finished) {
        events.extend(client.events_until_run_finished().await);
    }
    let finished = finished_tasks(&events);
    assert_eq!(finished.len(), 1, "{events:#?}");
    assert_eq!(finished[0].status, TaskStatus::Completed);
    let messages = conversation(&requests[3]);
    let user = messages.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(user.starts_with("<task-notification>"), "{user}");
    assert!(user.contains(&finished[0].task_id), "{user}");
    assert!(user.contains("there are 3 files"), "{user}");
    assert_eq!(run_status(&events), RunStatus::Completed);
    // Queued into a run or starting one, it is never taken for the user's words.
    for envelope in &events {
        if let Event::FollowUpQueued { origin, .. } = &envelope.event {
            assert_eq!(*origin, Some(FollowUpOrigin::TaskNotification));
        }
    }
}

#[tokio::test]
async fn cancelling_the_parent_cancels_the_child() {
    let s = Scenario::start(Format::OpenAi).await;
    s.mock.push(Reply::tool_call(
        "call_t",
        "task",
        json!({"prompt": "take forever"}),
    ));
    s.mock.push(Reply::stall());
    let (mut client, session) = s.session().await;
    client.prompt(&session, "delegate").await;
    s.mock.wait_for_requests(2).await;
    client.cancel(&session).await;
    let mut events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Cancelled);
    if finished_tasks(&events).is_empty() {
        events.extend(
            client
                .persisted_events_until(|event| matches!(event, Event::TaskFinished { .. }))
                .await,
        );
    }
    let finished = finished_tasks(&events);
    assert_eq!(finished.len(), 1, "{events:#?}");
    assert_eq!(finished[0].status, TaskStatus::Cancelled);
}

#[tokio::test]
async fn read_only_children_run_in_parallel() {
    let s = Scenario::start(Format::OpenAi).await;
    s.mock.push(Reply::tool_calls(vec![
        (
            "call_1",
            "task",
            json!({"prompt": "EXPLORE-ONE", "agentType": "explore"}).to_string(),
        ),
        (
            "call_2",
            "task",
            json!({"prompt": "EXPLORE-TWO", "agentType": "explore"}).to_string(),
        ),
    ]));
    // Each child is answered only once both children's requests have arrived: run one after
    // the other, the first would wait for the second forever (and the mock gives up).
    s.mock
        .push_for("EXPLORE-ONE", Reply::text("one done").after_requests(3));
    s.mock
        .push_for("EXPLORE-TWO", Reply::text("two done").after_requests(3));
    s.mock.push(Reply::text("both done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "explore twice").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let finished = finished_tasks(&events);
    assert_eq!(finished.len(), 2);
    assert!(
        finished
            .iter()
            .all(|task| task.status == TaskStatus::Completed),
        "{finished:#?}"
    );
}

#[tokio::test]
async fn the_cap_queues_the_other_children() {
    let s = Scenario::start_with(Format::OpenAi, "[tasks]\nmax_running = 1\n").await;
    s.mock.push(Reply::tool_calls(vec![
        (
            "call_1",
            "task",
            json!({"prompt": "CAPPED-ONE", "agentType": "explore"}).to_string(),
        ),
        (
            "call_2",
            "task",
            json!({"prompt": "CAPPED-TWO", "agentType": "explore"}).to_string(),
        ),
    ]));
    s.mock.push_for("CAPPED-ONE", Reply::text("one done"));
    s.mock.push_for("CAPPED-TWO", Reply::text("two done"));
    s.mock.push(Reply::text("both done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "explore twice").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let mut finished = finished_tasks(&events);
    assert_eq!(finished.len(), 2);
    finished.sort_by(|a, b| a.started_at.cmp(&b.started_at));
    // One slot: the second started only once the first had finished.
    assert!(
        finished[1].started_at.as_deref().unwrap() >= finished[0].finished_at.as_deref().unwrap(),
        "{finished:#?}"
    );
}

#[tokio::test]
async fn with_resumes_off_a_restart_marks_running_tasks_interrupted() {
    let mut s = Scenario::start_with(Format::OpenAi, crate::restart_resume::RESUME_OFF).await;
    s.mock.push(Reply::tool_call(
        "call_bg",
        "task",
        json!({"prompt": "never ends", "runInBackground": true}),
    ));
    s.mock.push(Reply::text("started"));
    s.mock
        .push_for(CHILD_MARK.to_owned() + "never ends", Reply::stall());
    let (mut client, session) = s.session().await;
    client.prompt(&session, "go").await;
    let events = client.events_until_run_finished().await;
    let task_id = events
        .iter()
        .find_map(|envelope| match &envelope.event {
            Event::TaskStarted { task } => Some(task.task_id.clone()),
            _ => None,
        })
        .expect("taskStarted");
    // The child's request arrived: the task is running.
    s.mock.wait_for_requests(3).await;
    drop(client);
    s.daemon.kill().await;
    s.daemon.restart().await;
    let record = s
        .daemon
        .env
        .path("state")
        .join("agentd/tasks")
        .join(format!("{task_id}.json"));
    let task: TaskInfo = serde_json::from_str(&std::fs::read_to_string(record).unwrap()).unwrap();
    assert_eq!(task.status, TaskStatus::Interrupted);
    assert!(task.error.unwrap().contains("not re-run"));
}

#[tokio::test]
async fn a_childs_approval_reaches_the_parents_clients_labelled_and_another_client_answers() {
    let s = Scenario::start_with(
        Format::OpenAi,
        "[permissions]\ndefault_mode = \"default\"\n",
    )
    .await;
    s.mock.push(Reply::tool_call(
        "call_t",
        "task",
        json!({"prompt": "write the note"}),
    ));
    s.mock.push(Reply::tool_call(
        "call_w",
        "write_file",
        json!({"path": "note.txt", "content": "from the child\n"}),
    ));
    s.mock.push(Reply::text("wrote it"));
    s.mock.push(Reply::text("the child wrote it"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "delegate a write").await;
    // The parent's subscriber sees the child's approval, labelled.
    let events = client
        .persisted_events_until(|event| matches!(event, Event::ApprovalRequested { .. }))
        .await;
    let Some(Event::ApprovalRequested { approval, .. }) = events.last().map(|e| &e.event) else {
        unreachable!()
    };
    assert_eq!(approval.tool, "write_file");
    assert_eq!(approval.agent_type.as_deref(), Some("general-purpose"));
    let task_id = approval.task_id.clone().expect("labelled with its task");
    assert_ne!(approval.session_id, session, "asked by the child session");

    // Another client lists it and answers.
    let mut other = s.client().await;
    let list = other
        .request("approval/list", json!({}))
        .await
        .expect("approval/list");
    let listed = &list["approvals"][0];
    assert_eq!(listed["taskId"], json!(task_id), "{list}");
    assert_eq!(listed["agentType"], json!("general-purpose"));
    other
        .request(
            "approval/respond",
            json!({"approvalId": approval.approval_id, "decision": "allowOnce"}),
        )
        .await
        .expect("approval/respond");
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(tool_output(&events), ("wrote it".to_owned(), false));
    assert_eq!(
        std::fs::read_to_string(s.workspace().join("note.txt")).unwrap(),
        "from the child\n"
    );
}

#[tokio::test]
async fn with_resumes_off_a_daemon_shutdown_records_running_tasks_interrupted_not_cancelled() {
    let mut s = Scenario::start_with(Format::OpenAi, crate::restart_resume::RESUME_OFF).await;
    s.mock.push(Reply::tool_call(
        "call_bg",
        "task",
        json!({"prompt": "stalls until stopped", "runInBackground": true}),
    ));
    s.mock.push(Reply::text("started"));
    s.mock.push_for(
        CHILD_MARK.to_owned() + "stalls until stopped",
        Reply::stall(),
    );
    let (mut client, session) = s.session().await;
    client.prompt(&session, "go").await;
    let events = client.events_until_run_finished().await;
    let task_id = events
        .iter()
        .find_map(|envelope| match &envelope.event {
            Event::TaskStarted { task } => Some(task.task_id.clone()),
            _ => None,
        })
        .expect("taskStarted");
    s.mock.wait_for_requests(3).await;
    drop(client);
    s.daemon.signal(libc::SIGTERM);
    assert!(s.daemon.wait_exit().await.success());
    let record = s
        .daemon
        .env
        .path("state")
        .join("agentd/tasks")
        .join(format!("{task_id}.json"));
    let task: TaskInfo = serde_json::from_str(&std::fs::read_to_string(record).unwrap()).unwrap();
    // Nobody stopped it: the daemon did, so it is `interrupted`, as a crash would leave it.
    assert_eq!(task.status, TaskStatus::Interrupted, "{task:#?}");
    assert!(
        task.error.as_deref().is_some_and(
            |error| error.starts_with("the daemon stopped while this task was running")
        ),
        "{task:#?}"
    );
    assert!(task.finished_at.is_some(), "{task:#?}");
    // No run was started in the stopping parent for the notification.
    assert_eq!(s.mock.requests().len(), 3);
}

#[tokio::test]
async fn deleting_the_parent_cancels_its_background_tasks() {
    let s = Scenario::start(Format::OpenAi).await;
    s.mock.push(Reply::tool_call(
        "call_bg",
        "task",
        json!({"prompt": "stalls until deleted", "runInBackground": true}),
    ));
    s.mock.push(Reply::text("started"));
    s.mock.push_for(
        CHILD_MARK.to_owned() + "stalls until deleted",
        Reply::stall(),
    );
    let (mut client, session) = s.session().await;
    client.prompt(&session, "go").await;
    client.events_until_run_finished().await;
    s.mock.wait_for_requests(3).await;
    let mut watcher = s.client().await;
    watcher
        .request("daemon/subscribe", json!({}))
        .await
        .expect("daemon/subscribe");
    client
        .request("session/delete", json!({"sessionId": session}))
        .await
        .expect("session/delete");
    loop {
        let envelope = watcher.next_daemon_event().await;
        if let Event::TaskFinished { task } = envelope.event {
            assert_eq!(task.status, TaskStatus::Cancelled, "{task:#?}");
            break;
        }
    }
}
