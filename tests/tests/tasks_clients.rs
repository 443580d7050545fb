//! The clients of background tasks: the `task/*` methods, `agentctl task …` in text and
//! `--json`, and the model's `task_*` tools, over task records the daemon loaded from disk.

use agentd_tests::harness::{Daemon, TestEnv, text};
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::scenario::{config_toml, create_session, request_tool_results};
use agentd_tests::task_records::{record, seed};
use protocol::error::{CONFLICT, NOT_FOUND};
use protocol::task::{
    TaskGetResult, TaskInfo, TaskKind, TaskListResult, TaskOutputResult, TaskStatus,
};
use serde_json::{Value, json};
use std::os::unix::fs::OpenOptionsExt;

const DONE_AGENT: &str = "task_00000000000000000000000000000001";
const CUT_SHELL: &str = "task_00000000000000000000000000000002";
const STOPPED_SHELL: &str = "task_00000000000000000000000000000003";
const MISSING: &str = "task_ffffffffffffffffffffffffffffffff";

/// A daemon (talking to `mock`) started over three recorded tasks: a completed subagent with
/// its final message, a shell task that was running when the daemon stopped (with output), and
/// a cancelled shell task.
async fn daemon_with_tasks(mock: &MockLlm) -> Daemon {
    let env = TestEnv::new().config(&config_toml(mock, Format::OpenAi, ""));
    let mut done = record(
        &env,
        DONE_AGENT,
        TaskKind::Subagent,
        TaskStatus::Completed,
        "2026-11-30T10:00:00Z",
    );
    done.result = Some("the summary of the work".to_owned());
    done.child_session_id = Some("ses_0123456789abcdef0123456789abcdef".to_owned());
    seed(&env, &done, None);
    let cut = record(
        &env,
        CUT_SHELL,
        TaskKind::Shell,
        TaskStatus::Running,
        "2026-11-30T11:00:00Z",
    );
    seed(&env, &cut, Some("line one\nline two\n"));
    let stopped = record(
        &env,
        STOPPED_SHELL,
        TaskKind::Shell,
        TaskStatus::Cancelled,
        "2026-11-30T09:00:00Z",
    );
    seed(&env, &stopped, None);
    Daemon::start_in(env).await
}

fn ids(tasks: &[TaskInfo]) -> Vec<&str> {
    tasks.iter().map(|task| task.task_id.as_str()).collect()
}

#[tokio::test]
async fn task_methods_list_get_and_read_recorded_tasks() {
    let mock = MockLlm::start().await;
    let daemon = daemon_with_tasks(&mock).await;
    let mut client = daemon.client().await;

    let init = client.initialize().await;
    let methods = init["capabilities"]["methods"].to_string();
    for method in [
        "task/list",
        "task/get",
        "task/output",
        "task/steer",
        "task/followUp",
        "task/stop",
        "task/start",
    ] {
        assert!(
            methods.contains(&format!("\"{method}\"")),
            "{method}: {methods}"
        );
    }

    // Nothing is active: the running one became interrupted at startup.
    let active: TaskListResult =
        serde_json::from_value(client.request("task/list", json!({})).await.unwrap()).unwrap();
    assert_eq!(ids(&active.tasks), Vec::<&str>::new());
    let all: TaskListResult = serde_json::from_value(
        client
            .request("task/list", json!({"all": true}))
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(ids(&all.tasks), [CUT_SHELL, DONE_AGENT, STOPPED_SHELL]);
    let interrupted: TaskListResult = serde_json::from_value(
        client
            .request("task/list", json!({"status": "interrupted"}))
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(ids(&interrupted.tasks), [CUT_SHELL]);

    // An interrupted task says what to do next; a completed one needs no hint.
    let cut: TaskGetResult = serde_json::from_value(
        client
            .request("task/get", json!({"taskId": CUT_SHELL}))
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(cut.task.status, TaskStatus::Interrupted);
    let hint = cut.hint.expect("an interrupted task has a hint");
    assert!(hint.contains("run the command again"), "{hint}");
    let done: TaskGetResult = serde_json::from_value(
        client
            .request("task/get", json!({"taskId": DONE_AGENT}))
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(done.hint, None);

    // Output: a subagent's final message; a shell's output file from an offset.
    let output: TaskOutputResult = serde_json::from_value(
        client
            .request("task/output", json!({"taskId": DONE_AGENT}))
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(output.text, "the summary of the work");
    assert!(!output.truncated);
    assert_eq!(output.status, TaskStatus::Completed);
    let rest: TaskOutputResult = serde_json::from_value(
        client
            .request(
                "task/output",
                json!({"taskId": CUT_SHELL, "afterOffset": 9}),
            )
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(rest.text, "line two\n");
    assert_eq!(rest.next_offset, 18);
    assert!(!rest.truncated);
}

#[tokio::test]
async fn unknown_and_finished_tasks_are_refused_with_what_to_do() {
    let mock = MockLlm::start().await;
    let daemon = daemon_with_tasks(&mock).await;
    let mut client = daemon.client().await;
    for (method, params) in [
        ("task/get", json!({"taskId": MISSING})),
        ("task/output", json!({"taskId": MISSING})),
        ("task/stop", json!({"taskId": MISSING})),
        ("task/steer", json!({"taskId": MISSING, "text": "hi"})),
        ("task/followUp", json!({"taskId": MISSING, "text": "hi"})),
    ] {
        let id = client.send_request(method, &params).await;
        let response = client.response_for(&json!(id)).await;
        let error = &response["error"];
        assert_eq!(error["code"], json!(NOT_FOUND), "{method}: {response}");
        assert_eq!(
            error["data"]["suggest"]["method"],
            json!("task/list"),
            "{method}: {response}"
        );
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains(MISSING) && !message.contains("agentctl"),
            "{message}"
        );
    }
    for (method, params, says) in [
        (
            "task/stop",
            json!({"taskId": DONE_AGENT}),
            "cannot stop task",
        ),
        ("task/stop", json!({"taskId": CUT_SHELL}), "(interrupted)"),
        (
            "task/steer",
            json!({"taskId": DONE_AGENT, "text": "hi"}),
            "already ended (completed)",
        ),
        (
            "task/followUp",
            json!({"taskId": DONE_AGENT, "text": "hi"}),
            "cannot follow up",
        ),
        (
            "task/steer",
            json!({"taskId": STOPPED_SHELL, "text": "hi"}),
            "is a shell command",
        ),
    ] {
        let err = client.request(method, params).await.unwrap_err();
        assert!(err.message.contains(says), "{method}: {}", err.message);
        if method == "task/stop" || says.contains("already") {
            assert_eq!(err.code, i64::from(CONFLICT), "{method}: {}", err.message);
        }
    }
}

/// `agentctl ARGS` against `daemon`: (exit code, stdout, stderr).
async fn agentctl(daemon: &Daemon, args: &[&str]) -> (Option<i32>, String, String) {
    let output = daemon.env.run_agentctl(args).await;
    (
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

#[tokio::test]
async fn agentctl_task_commands_in_text_and_json() {
    let mock = MockLlm::start().await;
    let daemon = daemon_with_tasks(&mock).await;

    let (code, out, err) = agentctl(&daemon, &["task", "list"]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("no pending or running tasks"), "{out}");
    let (code, out, err) = agentctl(&daemon, &["task", "list", "--all"]).await;
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("ID") && lines[0].contains("STATUS"),
        "{out}"
    );
    assert!(
        // Ids in the table are short (`task_` and 8 digits); --json has them whole.
        lines[1].starts_with(&format!("{} ", agentctl::ids::short(CUT_SHELL)))
            && lines[1].contains("interrupted"),
        "{out}"
    );
    assert!(
        lines[2].contains("general-purpose") && lines[2].contains("completed"),
        "{out}"
    );
    assert_eq!(lines.len(), 4, "{out}");
    let (code, out, err) = agentctl(&daemon, &["--json", "task", "list", "--all"]).await;
    assert_eq!(code, Some(0), "{err}");
    let listed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(listed["tasks"][1]["taskId"], json!(DONE_AGENT), "{out}");
    assert_eq!(listed["tasks"][1]["status"], json!("completed"), "{out}");

    let (code, out, err) = agentctl(&daemon, &["task", "show", CUT_SHELL]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("status:      interrupted"), "{out}");
    assert!(out.contains("hint: "), "{out}");
    let (code, out, _) = agentctl(&daemon, &["--json", "task", "show", CUT_SHELL]).await;
    assert_eq!(code, Some(0));
    let shown: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(shown["task"]["taskId"], json!(CUT_SHELL), "{out}");
    assert!(shown["hint"].is_string(), "{out}");

    // Task ids as session ids: `task_` may be left out, a prefix names the one task it starts
    // (finished ones too); an ambiguous one lists the candidates.
    let (code, out, err) = agentctl(&daemon, &["task", "show", &CUT_SHELL[5..]]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(CUT_SHELL), "{out}");
    let (code, _, err) = agentctl(&daemon, &["task", "show", "0000"]).await;
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("task id prefix task_0000 is ambiguous: 3 tasks match")
            && err.contains(DONE_AGENT),
        "{err}"
    );

    let (code, out, err) = agentctl(&daemon, &["task", "output", CUT_SHELL]).await;
    assert_eq!(
        (code, out.as_str()),
        (Some(0), "line one\nline two\n"),
        "{err}"
    );
    let (code, out, _) = agentctl(&daemon, &["--json", "task", "output", DONE_AGENT]).await;
    assert_eq!(code, Some(0));
    let read: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(read["text"], json!("the summary of the work"), "{out}");
    assert_eq!(read["nextOffset"], json!(23), "{out}");
    // Following a task that has ended prints its output and returns: 0 when it completed.
    let (code, out, err) = agentctl(&daemon, &["task", "output", "-f", DONE_AGENT]).await;
    assert_eq!(
        (code, out.as_str()),
        (Some(0), "the summary of the work"),
        "{err}"
    );
    let (code, _, err) = agentctl(&daemon, &["task", "output", "-f", CUT_SHELL]).await;
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("ended interrupted"), "{err}");

    // Refusals: exit 1 with the daemon's message and agentctl's own command to recover.
    for args in [
        &["task", "show", MISSING][..],
        &["task", "output", MISSING],
        &["task", "stop", MISSING],
        &["task", "steer", MISSING, "go on"],
        &["task", "followup", MISSING, "go on"],
    ] {
        let (code, _, err) = agentctl(&daemon, args).await;
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(err.contains("agentctl task list"), "{args:?}: {err}");
    }
    let (code, _, err) = agentctl(&daemon, &["task", "stop", DONE_AGENT]).await;
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("already ended (completed)"), "{err}");
    let (code, out, _) = agentctl(&daemon, &["--json", "task", "steer", DONE_AGENT, "more"]).await;
    assert_eq!(code, Some(1));
    let refused: Value = serde_json::from_str(&out).unwrap_or_else(|_| json!({"raw": out}));
    assert_eq!(refused["error"]["exitCode"], json!(1), "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("already ended (completed)"), "{refused}");
}

#[tokio::test]
async fn the_model_reads_only_its_own_sessions_tasks() {
    let mock = MockLlm::start().await;
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    let mut daemon = Daemon::start_in(env).await;
    let mut client = daemon.client().await;
    let session_id = create_session(&mut client, &daemon.env.workspace()).await;
    drop(client);
    daemon.kill().await;
    let mut own = record(
        &daemon.env,
        DONE_AGENT,
        TaskKind::Subagent,
        TaskStatus::Completed,
        "2026-11-30T10:00:00Z",
    );
    own.parent_session_id = Some(session_id.clone());
    own.result = Some("found three bugs".to_owned());
    seed(&daemon.env, &own, None);
    let mut other = record(
        &daemon.env,
        STOPPED_SHELL,
        TaskKind::Shell,
        TaskStatus::Cancelled,
        "2026-11-30T09:00:00Z",
    );
    other.parent_session_id = Some("ses_ffffffffffffffffffffffffffffffff".to_owned());
    seed(&daemon.env, &other, Some("not yours"));
    daemon.restart().await;

    mock.push(Reply::tool_calls(vec![
        ("c1", "task_list", json!({"all": true}).to_string()),
        (
            "c2",
            "task_output",
            json!({"taskId": DONE_AGENT}).to_string(),
        ),
        (
            "c3",
            "task_get",
            json!({"taskId": STOPPED_SHELL}).to_string(),
        ),
        ("c4", "task_stop", json!({"taskId": DONE_AGENT}).to_string()),
    ]));
    mock.push(Reply::text("done"));
    let mut client = daemon.client().await;
    client.subscribe(&session_id, None).await;
    client.prompt(&session_id, "check the tasks").await;
    client.events_until_run_finished().await;

    let requests = mock.requests();
    let tools = requests[0].body.clone();
    for tool in ["task_list", "task_get", "task_output", "task_stop"] {
        assert!(
            tools.contains(&format!("\"{tool}\"")),
            "{tool} offered: {tools}"
        );
    }
    let results = request_tool_results(Format::OpenAi, &requests[1]);
    let result = |id: &str| {
        results
            .iter()
            .find(|(call, _)| call == id)
            .map(|(_, content)| content.clone())
            .unwrap_or_else(|| panic!("no result for {id}"))
    };
    let listed = result("c1");
    assert!(
        listed.contains(DONE_AGENT) && !listed.contains(STOPPED_SHELL),
        "{listed}"
    );
    assert_eq!(
        result("c2"),
        format!("task {DONE_AGENT} is completed; its output:\nfound three bugs")
    );
    assert!(
        result("c3").contains("call task_list to see your tasks"),
        "{}",
        result("c3")
    );
    assert!(
        result("c4").contains("already ended (completed)"),
        "{}",
        result("c4")
    );
}

#[tokio::test]
async fn agentctl_follows_a_running_shell_task_until_task_stop_ends_it() {
    use agentd_tests::scenario::wait_until;
    use agentd_tests::task_records::tasks_dir;
    let mock = MockLlm::start().await;
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    let daemon = Daemon::start_in(env).await;
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "echo started; exec sleep 60", "runInBackground": true}),
    ));
    mock.push(Reply::text("it runs"));
    let mut client = daemon.client().await;
    let session_id = create_session(&mut client, &daemon.env.workspace()).await;
    client.subscribe(&session_id, None).await;
    client.prompt(&session_id, "start it").await;
    client.events_until_run_finished().await;

    let active: TaskListResult = serde_json::from_value(
        client
            .request("task/list", json!({"sessionId": session_id}))
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(active.tasks.len(), 1, "{active:?}");
    let task_id = active.tasks[0].task_id.clone();
    assert_eq!(active.tasks[0].status, TaskStatus::Running);
    let (code, out, err) = agentctl(&daemon, &["task", "list"]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains(agentctl::ids::short(&task_id)) && out.contains("running"),
        "{out}"
    );

    // The command's output file is the outside world here: wait for its first line.
    let output_file = tasks_dir(&daemon.env).join(format!("{task_id}.out"));
    wait_until("the background command's output", || {
        std::fs::read_to_string(&output_file).is_ok_and(|text| text.contains("started"))
    })
    .await;
    let follower = daemon
        .env
        .agentctl()
        .args(["task", "output", "-f", &task_id])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn agentctl task output -f");

    let (code, out, err) = agentctl(&daemon, &["task", "stop", &task_id]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("stopping task"), "{out}");
    let followed = tokio::time::timeout(agentd_tests::harness::WAIT, follower.wait_with_output())
        .await
        .expect("agentctl task output -f ends with the task")
        .expect("agentctl output");
    let (out, err) = (text(&followed.stdout), text(&followed.stderr));
    assert_eq!(followed.status.code(), Some(1), "{out}{err}");
    assert!(out.starts_with("started\n"), "{out}");
    assert!(err.contains("ended cancelled"), "{err}");

    let (code, out, _) = agentctl(&daemon, &["--json", "task", "show", &task_id]).await;
    assert_eq!(code, Some(0));
    let shown: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(shown["task"]["status"], json!("cancelled"), "{out}");
    assert_eq!(shown["task"]["parentSessionId"], json!(session_id), "{out}");
}

/// A session whose model (replies routed by `PARENT-SIDE` in its prompt) starts a background
/// subagent; the child's first reply runs `cat` on the FIFO `gate` in the workspace. Returns
/// the scenario, a client subscribed to the parent, the task id and the child session id,
/// once the child's `cat` has started (seen on a second client subscribed to the child).
async fn child_blocked_on_a_fifo(
    child_replies: Vec<Reply>,
) -> (
    agentd_tests::scenario::Scenario,
    agentd_tests::harness::Client,
    agentd_tests::harness::Client,
    String,
    String,
) {
    use agentd_tests::scenario::{Scenario, mkfifo};
    let s = Scenario::start(Format::OpenAi).await;
    mkfifo(&s.workspace().join("gate"));
    s.mock.push_for(
        "PARENT-SIDE",
        Reply::tool_call(
            "p1",
            "task",
            json!({"prompt": "look into it", "runInBackground": true}),
        ),
    );
    s.mock.push_for("PARENT-SIDE", Reply::text("delegated"));
    s.mock.push_for("PARENT-SIDE", Reply::text("noted"));
    s.mock.push(Reply::tool_call(
        "k1",
        "run_shell",
        json!({"command": "cat gate"}),
    ));
    for reply in child_replies {
        s.mock.push(reply);
    }
    let (mut client, session_id) = s.session().await;
    client.prompt(&session_id, "PARENT-SIDE delegate").await;
    client.events_until_run_finished().await;
    let listed: TaskListResult = serde_json::from_value(
        client
            .request("task/list", json!({"sessionId": session_id}))
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(listed.tasks.len(), 1, "{listed:?}");
    let task_id = listed.tasks[0].task_id.clone();
    let child = listed.tasks[0]
        .child_session_id
        .clone()
        .expect("a running subagent has its session");
    let mut watcher = s.client().await;
    watcher.subscribe(&child, Some(0)).await;
    loop {
        let event = watcher.next_notification_result().await;
        if event["event"]["type"] == "toolStarted" {
            break;
        }
    }
    (s, client, watcher, task_id, child)
}

#[tokio::test]
async fn a_steer_reaches_a_running_child_before_its_next_model_call() {
    use agentd_tests::scenario::write_fifo;
    let (s, mut client, mut watcher, task_id, child) =
        child_blocked_on_a_fifo(vec![Reply::text("child done")]).await;
    let steered = client
        .request(
            "task/steer",
            json!({"taskId": task_id, "text": "STEER-TEXT: also check the tests"}),
        )
        .await
        .expect("task/steer");
    assert_eq!(steered["childSessionId"], json!(child), "{steered}");
    assert_eq!(steered["queued"], json!(true), "{steered}");
    write_fifo(&s.workspace().join("gate"), "gate output\n").await;
    loop {
        let event = watcher.next_notification_result().await;
        if event["event"]["type"] == "runFinished" {
            break;
        }
    }
    // The child's request after its tool batch carries the batch's result and the steer.
    let requests = s.mock.requests();
    let after_batch = requests
        .iter()
        .find(|request| request.body.contains("gate output"))
        .expect("the child's request after its tool batch");
    assert!(
        after_batch
            .body
            .contains("STEER-TEXT: also check the tests"),
        "{}",
        after_batch.body
    );
    assert!(!after_batch.body.contains("PARENT-SIDE"), "a child request");
}

#[tokio::test]
async fn agentctl_task_stop_cancels_a_running_child_and_its_command() {
    let (s, mut client, _watcher, task_id, _child) = child_blocked_on_a_fifo(Vec::new()).await;
    let (code, out, err) = agentctl(&s.daemon, &["task", "stop", &task_id]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("stopping task"), "{out}");
    // The parent's stream says when the task has ended.
    loop {
        let event = client.next_notification_result().await;
        if event["event"]["type"] == "taskFinished" {
            assert_eq!(
                event["event"]["task"]["status"],
                json!("cancelled"),
                "{event}"
            );
            break;
        }
    }
    let (code, out, _) = agentctl(&s.daemon, &["--json", "task", "show", &task_id]).await;
    assert_eq!(code, Some(0));
    let shown: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(shown["task"]["status"], json!("cancelled"), "{out}");
    // Nobody reads the FIFO any more: the child's `cat` was killed with its run.
    agentd_tests::scenario::wait_until("the child's cat to be gone", || {
        std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(s.workspace().join("gate"))
            .is_err_and(|err| err.raw_os_error() == Some(libc::ENXIO))
    })
    .await;
}

#[tokio::test]
async fn agentctl_task_output_follow_shows_a_commands_output_as_it_is_written() {
    use agentd_tests::scenario::{mkfifo, write_fifo};
    use tokio::io::AsyncReadExt;
    let mock = MockLlm::start().await;
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    let daemon = Daemon::start_in(env).await;
    let gate = daemon.env.workspace().join("gate");
    mkfifo(&gate);
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "echo first; cat gate; echo second; exec sleep 60", "runInBackground": true}),
    ));
    mock.push(Reply::text("it runs"));
    let mut client = daemon.client().await;
    let session_id = create_session(&mut client, &daemon.env.workspace()).await;
    client.subscribe(&session_id, None).await;
    client.prompt(&session_id, "start it").await;
    client.events_until_run_finished().await;
    let active: TaskListResult = serde_json::from_value(
        client
            .request("task/list", json!({"sessionId": session_id}))
            .await
            .unwrap(),
    )
    .unwrap();
    let task_id = active.tasks[0].task_id.clone();
    let mut follower = daemon
        .env
        .agentctl()
        .args(["task", "output", "-f", &task_id])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn agentctl task output -f");
    let mut stdout = follower.stdout.take().unwrap();
    let mut seen = String::new();
    // Reads the follower's output until it holds `want` (no task event happens meanwhile).
    let mut read_until = async |want: &str, seen: &mut String| {
        let mut buf = [0u8; 256];
        while !seen.contains(want) {
            let n = tokio::time::timeout(agentd_tests::harness::WAIT, stdout.read(&mut buf))
                .await
                .unwrap_or_else(|_| panic!("{want:?} not shown while the task runs; got {seen:?}"))
                .unwrap();
            assert!(n > 0, "agentctl ended early: {seen:?}");
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    };
    read_until("first\n", &mut seen).await;
    write_fifo(&gate, "in the middle\n").await;
    read_until("second\n", &mut seen).await;
    assert_eq!(seen, "first\nin the middle\nsecond\n");
    let (code, _, err) = agentctl(&daemon, &["task", "stop", &task_id]).await;
    assert_eq!(code, Some(0), "{err}");
    let status = tokio::time::timeout(agentd_tests::harness::WAIT, follower.wait())
        .await
        .expect("the follower ends with the task")
        .unwrap();
    assert_eq!(status.code(), Some(1));
}
