//! Tasks across a daemon's stop and start: a graceful stop records nothing `cancelled` that
//! the user did not stop, a shell task ends `interrupted` with its output kept, a notification
//! the parent held is delivered once after the restart, an end that cannot be written is
//! announced `notPersisted`, old records are pruned, `task/list` pages, and a task with no
//! progress shows `stalled` until it makes some.

use agentd_tests::gate::HttpGate;
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use agentd_tests::task_records;
use protocol::event::{Event, RunStatus};
use protocol::task::{TaskInfo, TaskKind, TaskStatus};
use serde_json::{Value, json};

/// What only a child's request holds before its prompt: the prompt as its user message.
const CHILD_MARK: &str = r#""content":""#;

/// The daemon's tasks directory.
fn tasks_dir(s: &Scenario) -> std::path::PathBuf {
    task_records::tasks_dir(&s.daemon.env)
}

/// The task's record file, as JSON (read while no daemon writes it).
fn record_file(s: &Scenario, task_id: &str) -> Value {
    let path = tasks_dir(s).join(format!("{task_id}.json"));
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("{err}: {text}"))
}

/// The statuses of every `runFinished` in a session's file.
fn run_statuses_in_file(s: &Scenario, session_id: &str) -> Vec<String> {
    let path = s
        .daemon
        .env
        .path("state")
        .join("agentd")
        .join("sessions")
        .join(format!("{session_id}.jsonl"));
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line.to_string().contains("\"runFinished\""))
        .filter_map(|line| {
            let event = line.get("event").unwrap_or(&line);
            event["status"].as_str().map(str::to_owned)
        })
        .collect()
}

/// The first task event of the given kind among `events`.
fn task_of(events: &[Envelope], finished: bool) -> Option<TaskInfo> {
    events.iter().find_map(|envelope| match &envelope.event {
        Event::TaskFinished { task } if finished => Some((**task).clone()),
        Event::TaskStarted { task } if !finished => Some((**task).clone()),
        _ => None,
    })
}

/// One turn in which the model starts `command` in the background; the client, the session
/// and the task.
async fn background_shell(
    s: &Scenario,
    command: &str,
) -> (agentd_tests::harness::Client, String, TaskInfo) {
    s.mock.push(Reply::tool_call(
        "c_bg",
        "run_shell",
        json!({"command": command, "runInBackground": true}),
    ));
    s.mock.push(Reply::text("started it"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "start it in the background").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed, "{events:#?}");
    let task = task_of(&events, false).expect("a taskStarted");
    (client, session, task)
}

#[tokio::test]
async fn with_resumes_off_a_graceful_stop_records_a_background_subagent_and_its_run_interrupted() {
    let gate = HttpGate::start().await;
    let config = format!(
        "[permissions]\ndefault_mode = \"bypass\"\nallow = [\"WebFetch(domain:127.0.0.1)\"]\n{}",
        crate::restart_resume::RESUME_OFF
    );
    let mut s = Scenario::start_with(Format::OpenAi, &config).await;
    s.mock.push(Reply::tool_call(
        "call_t",
        "task",
        json!({"prompt": "hold on", "runInBackground": true}),
    ));
    s.mock.push(Reply::text("started"));
    s.mock.push_for(
        format!("{CHILD_MARK}hold on"),
        Reply::tool_call("call_f", "fetch_url", json!({"url": gate.url("held")})),
    );
    let (mut client, session) = s.session().await;
    client.prompt(&session, "delegate").await;
    let events = client.events_until_run_finished().await;
    let task = task_of(&events, false).expect("a taskStarted");
    // The child is inside its tool call (the gate is never opened).
    wait_until("the child's fetch to reach the gate", || {
        gate.requests() > 0
    })
    .await;
    let child = loop {
        let got = client
            .request("task/get", json!({"taskId": task.task_id}))
            .await
            .unwrap();
        if let Some(child) = got["task"]["childSessionId"].as_str() {
            break child.to_owned();
        }
    };
    s.daemon.signal(libc::SIGTERM);
    assert!(s.daemon.wait_exit().await.success());
    drop(client);
    // As the stop recorded it, before any next start could touch it.
    let record = record_file(&s, &task.task_id);
    assert_eq!(record["status"], "interrupted", "{record:#}");
    let statuses = run_statuses_in_file(&s, &child);
    assert_eq!(statuses, ["interrupted"], "the child's run: {statuses:?}");
}

#[tokio::test]
async fn a_shell_task_stopped_by_a_restart_ends_interrupted_with_its_output_readable() {
    let mut s = Scenario::start(Format::OpenAi).await;
    let (client, _session, task) =
        background_shell(&s, "echo partial-output; touch written.flag; sleep 300").await;
    let flag = s.workspace().join("written.flag");
    wait_until("the command to write its output", || flag.exists()).await;
    s.daemon.signal(libc::SIGTERM);
    assert!(s.daemon.wait_exit().await.success());
    drop(client);
    s.daemon.restart().await;
    let mut client = s.client().await;
    let got = client
        .request("task/get", json!({"taskId": task.task_id}))
        .await
        .unwrap();
    assert_eq!(got["task"]["status"], "interrupted", "{got:#}");
    assert!(
        got["hint"]
            .as_str()
            .is_some_and(|hint| hint.contains("run the command again")),
        "{got:#}"
    );
    let output = client
        .request("task/output", json!({"taskId": task.task_id}))
        .await
        .unwrap();
    assert_eq!(output["text"], "partial-output\n", "{output:#}");
    assert_eq!(output["status"], "interrupted", "{output:#}");
}

#[tokio::test]
async fn an_end_that_cannot_be_written_is_announced_not_persisted_and_reads_interrupted_later() {
    let mock = agentd_tests::mock_llm::MockLlm::start().await;
    let env = agentd_tests::harness::TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    let fault = env.path("task-write-fault");
    let env = env.var(
        agentd_tests::test_seams::TASK_WRITE_FAULT,
        fault.display().to_string(),
    );
    agentd_tests::test_seams::require_if_seam(agentd_tests::test_seams::TASK_WRITE_FAULT);
    let daemon = agentd_tests::harness::Daemon::start_in(env).await;
    let mut s = Scenario {
        daemon,
        mock,
        format: Format::OpenAi,
    };
    // Only the end's record holds this: the start and `running` are written.
    std::fs::write(&fault, r#""status":"completed""#).unwrap();
    let (mut client, _session, task) = background_shell(&s, "echo done").await;
    let finished = client
        .persisted_events_until(|event| matches!(event, Event::TaskFinished { .. }))
        .await;
    let ended = task_of(&finished, true).expect("a taskFinished");
    assert_eq!(ended.task_id, task.task_id);
    assert_eq!(ended.status, TaskStatus::Completed);
    assert!(ended.not_persisted, "{ended:#?}");
    let got = client
        .request("task/get", json!({"taskId": task.task_id}))
        .await
        .unwrap();
    assert_eq!(got["task"]["notPersisted"], true, "{got:#}");
    s.daemon.signal(libc::SIGTERM);
    assert!(s.daemon.wait_exit().await.success());
    assert!(
        s.daemon
            .log()
            .contains("could not be recorded after 4 attempts"),
        "{}",
        s.daemon.log()
    );
    drop(client);
    std::fs::remove_file(&fault).unwrap();
    s.daemon.restart().await;
    let mut client = s.client().await;
    let got = client
        .request("task/get", json!({"taskId": task.task_id}))
        .await
        .unwrap();
    assert_eq!(got["task"]["status"], "interrupted", "{got:#}");
}

#[tokio::test]
async fn a_notification_held_when_the_daemon_stopped_is_delivered_once_after_the_restart() {
    let gate = HttpGate::start().await;
    let mut s = Scenario::start_with(
        Format::OpenAi,
        "[permissions]\ndefault_mode = \"bypass\"\nallow = [\"WebFetch(domain:127.0.0.1)\"]\n\
         [tasks]\nmax_notification_runs = 1\nparallel_writers = true\n",
    )
    .await;
    s.mock.push(Reply::tool_calls(vec![
        (
            "call_a",
            "task",
            json!({"prompt": "alpha", "runInBackground": true}).to_string(),
        ),
        (
            "call_b",
            "task",
            json!({"prompt": "beta", "runInBackground": true}).to_string(),
        ),
    ]));
    s.mock.push(Reply::text("started both"));
    s.mock.push(Reply::text("noted the first"));
    // Each child ends only when the test opens its gate, so each result finds the parent idle.
    s.mock.push_for(
        format!("{CHILD_MARK}alpha"),
        Reply::tool_call("call_g", "fetch_url", json!({"url": gate.url("a")})),
    );
    s.mock
        .push_for(format!("{CHILD_MARK}alpha"), Reply::text("alpha done"));
    s.mock.push_for(
        format!("{CHILD_MARK}beta"),
        Reply::tool_call("call_f", "fetch_url", json!({"url": gate.url("b")})),
    );
    s.mock
        .push_for(format!("{CHILD_MARK}beta"), Reply::text("beta done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "go").await;
    let first = client.events_until_run_finished().await;
    let beta = first
        .iter()
        .filter_map(|envelope| match &envelope.event {
            Event::TaskStarted { task } if task.description == "beta" => Some(task.task_id.clone()),
            _ => None,
        })
        .next()
        .expect("beta's taskStarted");
    // Alpha's result starts the one notification run the cap allows.
    gate.open("a", "page");
    let noted = client.events_until_run_finished().await;
    assert_eq!(run_status(&noted), RunStatus::Completed, "{noted:#?}");
    // Beta ends now: its notification is held for the user's next prompt.
    gate.open("b", "page");
    let held = client
        .persisted_events_until(|event| matches!(event, Event::Warning { message } if message.contains("waits for your next prompt")))
        .await;
    let last_seq = held.last().map(|envelope| envelope.seq).unwrap_or(0);
    s.daemon.signal(libc::SIGTERM);
    assert!(s.daemon.wait_exit().await.success());
    drop(client);
    assert_eq!(record_file(&s, &beta)["notificationPending"], true);

    // After the restart it is delivered: a run of its own (the cap counts from the restart).
    s.mock.push(Reply::text("noted beta"));
    s.daemon.restart().await;
    let mut client = s.client().await;
    client.subscribe(&session, Some(last_seq)).await;
    let delivered = client.events_until_run_finished().await;
    assert_eq!(
        run_status(&delivered),
        RunStatus::Completed,
        "{delivered:#?}"
    );
    s.daemon.signal(libc::SIGTERM);
    assert!(s.daemon.wait_exit().await.success());
    drop(client);
    assert_eq!(record_file(&s, &beta).get("notificationPending"), None);
    // Once: one request ends with beta's notification, and the next start delivers nothing.
    let marker = format!("<task-id>{beta}</task-id>");
    let ending_with_it = |requests: &[agentd_tests::mock_llm::RecordedRequest]| {
        requests
            .iter()
            .filter(|request| {
                request_user_texts(Format::OpenAi, request)
                    .last()
                    .is_some_and(|text| text.contains(&marker))
            })
            .count()
    };
    assert_eq!(ending_with_it(&s.mock.requests()), 1);
    s.daemon.restart().await;
    s.mock.push(Reply::text("nothing new"));
    let (mut client, _) = (s.client().await, ());
    client.subscribe(&session, None).await;
    client.prompt(&session, "anything?").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed, "{events:#?}");
    let requests = s.mock.requests();
    let said = request_user_texts(Format::OpenAi, requests.last().unwrap());
    assert_eq!(
        said.iter().filter(|text| text.contains(&marker)).count(),
        1,
        "{said:#?}"
    );
    assert_eq!(ending_with_it(&requests), 1);
}

#[tokio::test]
async fn old_finished_records_are_pruned_at_start_and_as_tasks_finish() {
    let mock = agentd_tests::mock_llm::MockLlm::start().await;
    let env = agentd_tests::harness::TestEnv::new().config(&config_toml(
        &mock,
        Format::OpenAi,
        "[tasks]\nkeep_finished = 3\nkeep_finished_days = 30\n",
    ));
    let old_day = humantime::format_rfc3339_seconds(
        std::time::SystemTime::now() - std::time::Duration::from_secs(40 * 86_400),
    )
    .to_string();
    let recent = |n: u32| format!("2099-01-01T00:00:0{n}Z");
    let aged = task_records::record(
        &env,
        "task_0aged",
        TaskKind::Shell,
        TaskStatus::Completed,
        &old_day,
    );
    task_records::seed(&env, &aged, Some("aged output"));
    for n in 1..=3 {
        let task = task_records::record(
            &env,
            &format!("task_000{n}"),
            TaskKind::Shell,
            TaskStatus::Completed,
            &recent(n),
        );
        task_records::seed(&env, &task, Some("output"));
    }
    let daemon = agentd_tests::harness::Daemon::start_in(env).await;
    let s = Scenario {
        daemon,
        mock,
        format: Format::OpenAi,
    };
    let dir = tasks_dir(&s);
    // At start, before any client: the one past the age, with its output.
    assert!(!dir.join("task_0aged.json").exists());
    assert!(!dir.join("task_0aged.out").exists());
    let mut client = s.client().await;
    let listed = client
        .request("task/list", json!({"all": true}))
        .await
        .unwrap();
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 3, "{listed:#}");
    // A fourth finishing makes one too many: the oldest goes.
    let (_client, _session, task) = background_shell(&s, "true").await;
    let oldest = dir.join("task_0001.json");
    let oldest_output = dir.join("task_0001.out");
    // The record and its output go one after the other: wait for both.
    wait_until("the oldest record and its output to be pruned", || {
        !oldest.exists() && !oldest_output.exists()
    })
    .await;
    assert!(dir.join(format!("{}.json", task.task_id)).exists());
    assert!(dir.join("task_0002.json").exists());
}

#[tokio::test]
async fn task_list_pages_with_a_cursor_and_agentctl_reads_every_page() {
    let mock = agentd_tests::mock_llm::MockLlm::start().await;
    let env = agentd_tests::harness::TestEnv::new().config(&config_toml(
        &mock,
        Format::OpenAi,
        "[tasks]\nkeep_finished = 1000\n",
    ));
    const SEEDED: usize = 503;
    for n in 0..SEEDED {
        let task = task_records::record(
            &env,
            &format!("task_{n:08x}"),
            TaskKind::Shell,
            TaskStatus::Completed,
            &format!("2099-01-01T00:00:00.{n:06}Z"),
        );
        task_records::seed(&env, &task, None);
    }
    let daemon = agentd_tests::harness::Daemon::start_in(env).await;
    let mut client = daemon.client().await;
    let mut seen: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut params = json!({"all": true, "limit": 200});
        if let Some(cursor) = &cursor {
            params["cursor"] = json!(cursor);
        }
        let page = client.request("task/list", params).await.unwrap();
        let tasks = page["tasks"].as_array().unwrap();
        assert!(tasks.len() <= 200);
        seen.extend(
            tasks
                .iter()
                .map(|task| task["taskId"].as_str().unwrap().to_owned()),
        );
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let newest_first: Vec<String> = (0..SEEDED).rev().map(|n| format!("task_{n:08x}")).collect();
    assert_eq!(seen, newest_first);
    let err = client
        .request("task/list", json!({"cursor": "task_ffffffff"}))
        .await
        .unwrap_err();
    assert_eq!(
        err.code,
        i64::from(protocol::error::INVALID_PARAMS),
        "{err:?}"
    );
    let output = daemon
        .env
        .run_agentctl(&["--json", "task", "list", "--all"])
        .await;
    assert!(output.status.success(), "{output:?}");
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(listed["tasks"].as_array().unwrap().len(), SEEDED);
}

#[tokio::test]
async fn a_quiet_task_shows_stalled_with_a_notification_and_clears_when_output_resumes() {
    let notify = "[[hooks.Notification]]\nmatcher = \"\"\nhooks = [{ type = \"command\", command = 'jq -r .message >> \"$CLAUDE_PROJECT_DIR/../notified\"' }]\n";
    let s = Scenario::start_with(
        Format::OpenAi,
        &format!("[tasks]\nstall_secs = 1\n{notify}"),
    )
    .await;
    let mut watcher = s.client().await;
    watcher
        .request("daemon/subscribe", json!({}))
        .await
        .unwrap();
    let (mut client, session, task) = background_shell(
        &s,
        "echo begin; while [ ! -e resume.flag ]; do sleep 0.05; done; echo resumed; sleep 300",
    )
    .await;
    let stalled = |event: &Event, wanted: bool| matches!(event, Event::TaskUpdated { task: updated } if updated.task_id == task.task_id && updated.stalled == wanted);
    watcher
        .daemon_events_until(|event| stalled(event, true))
        .await;
    let listed = client.request("task/list", json!({})).await.unwrap();
    assert_eq!(listed["tasks"][0]["status"], "running", "{listed:#}");
    assert_eq!(listed["tasks"][0]["stalled"], true, "{listed:#}");
    let table = s.daemon.env.run_agentctl(&["task", "list"]).await;
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    assert!(table.contains("running (stalled)"), "{table}");
    // The parent's Notification hooks hear of it.
    client
        .persisted_events_until(
            |event| matches!(event, Event::HookCompleted { event, .. } if event == "Notification"),
        )
        .await;
    let notified =
        std::fs::read_to_string(s.workspace().parent().unwrap().join("notified")).unwrap();
    assert!(
        notified.contains(&format!(
            "task {} (shell) made no progress for 1s",
            task.task_id
        )),
        "{notified}"
    );
    // Output again: the mark clears.
    std::fs::write(s.workspace().join("resume.flag"), "").unwrap();
    let cleared = watcher
        .daemon_events_until(|event| stalled(event, false))
        .await;
    let Some(Event::TaskUpdated { task: cleared }) = cleared.last().map(|e| &e.event) else {
        unreachable!()
    };
    assert_eq!(cleared.status, TaskStatus::Running);
    client
        .request("session/delete", json!({"sessionId": session}))
        .await
        .unwrap();
}
