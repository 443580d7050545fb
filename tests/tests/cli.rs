//! `agentctl` end to end: the real client, the real daemon it starts, the scripted mock LLM.

use std::path::Path;
use std::time::{Duration, Instant};

use agentd_tests::harness::{TestEnv, WAIT, text};
use agentd_tests::mock_llm::{MockLlm, Reply};
use serde_json::{Value, json};

/// An environment whose daemon talks to `mock` (OpenAI format), running tools without asking
/// (approvals have their own tests).
fn env_for(mock: &MockLlm) -> TestEnv {
    TestEnv::new()
        .var("OPENAI_API_KEY", "sk-test")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .config("[permissions]\ndefault_mode = \"bypass\"\n")
}

/// `agentctl run PROMPT` in the background, its output captured.
fn spawn_run(env: &TestEnv, prompt: &str) -> tokio::process::Child {
    env.agentctl()
        .args(["run", prompt])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn agentctl run")
}

/// Wait for a file that a tool creates (an outside-world condition, bounded).
async fn wait_for_file(path: &Path) {
    let deadline = Instant::now() + WAIT;
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn session_id_from(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|line| line.strip_prefix("session: "))
        .unwrap_or_else(|| panic!("no session id in stderr:\n{stderr}"))
        .trim()
        .to_owned()
}

#[tokio::test]
async fn run_uses_tools_streams_the_answer_and_exits_0() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_call(
        "c1",
        "write_file",
        json!({"path": "notes.txt", "content": "remember the milk\n"}),
    ));
    mock.push(Reply::tool_call(
        "c2",
        "read_file",
        json!({"path": "notes.txt"}),
    ));
    mock.push(Reply::text("The note says to remember the milk.").fragmented());
    let env = env_for(&mock);
    let output = env
        .run_agentctl(&["run", "write a note and read it back"])
        .await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "stderr:\n{stderr}");
    assert_eq!(stdout, "The note says to remember the milk.\n");
    assert!(stderr.contains("[tool] write_file: notes.txt"), "{stderr}");
    assert!(stderr.contains("[tool] read_file"), "{stderr}");
    session_id_from(&stderr);
    assert_eq!(
        std::fs::read_to_string(env.workspace().join("notes.txt")).unwrap(),
        "remember the milk\n"
    );
    // The model read its own write: the read result reached the third request.
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[2].body.contains("remember the milk"),
        "{}",
        requests[2].body
    );
}

#[tokio::test]
async fn run_json_prints_the_event_stream_as_ndjson() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text("hi"));
    let env = env_for(&mock);
    let output = env.run_agentctl(&["run", "--json", "say hi"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let mut events: Vec<Value> = text(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect();
    // The last line is the run's result object (`daily_cli` checks it).
    let result = events.pop().expect("a result line");
    assert_eq!(result["type"], "result", "{result}");
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["event"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(types.first(), Some(&"runStarted"), "{types:?}");
    assert_eq!(types.last(), Some(&"runFinished"), "{types:?}");
    assert_eq!(
        events.last().unwrap()["event"]["status"],
        json!("completed")
    );
    assert!(types.contains(&"messageCompleted"));
}

#[tokio::test]
async fn run_exits_1_with_a_clear_message_when_the_key_is_rejected() {
    let mock = MockLlm::start().await;
    mock.push(Reply::error(401, "Incorrect API key provided"));
    let env = env_for(&mock);
    let output = env.run_agentctl(&["run", "hello"]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("OPENAI_API_KEY"), "{stderr}");
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn a_session_continues_with_its_history_and_can_be_listed_shown_and_removed() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text("first answer"));
    mock.push(Reply::text("second answer"));
    let env = env_for(&mock);
    let first = env.run_agentctl(&["run", "first question"]).await;
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let id = session_id_from(&text(&first.stderr));

    let second = env
        .run_agentctl(&["run", "--session", &id, "second question"])
        .await;
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    assert_eq!(text(&second.stdout), "second answer\n");
    let last = mock.requests().pop().unwrap();
    assert!(last.body.contains("first question") && last.body.contains("first answer"));

    let list = env.run_agentctl(&["sessions", "list", "--json"]).await;
    assert_eq!(list.status.code(), Some(0));
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(list["sessions"][0]["sessionId"], json!(id));

    let show = env.run_agentctl(&["sessions", "show", &id, "--json"]).await;
    let show: Value = serde_json::from_slice(&show.stdout).unwrap();
    let history = show["history"].as_array().unwrap();
    assert_eq!(history.len(), 4, "{show}");
    assert_eq!(history[3]["content"], json!("second answer"));

    let rm = env.run_agentctl(&["sessions", "rm", &id]).await;
    assert_eq!(rm.status.code(), Some(0), "{}", text(&rm.stderr));
    let show = env.run_agentctl(&["sessions", "show", &id]).await;
    assert_eq!(show.status.code(), Some(1));
    assert!(
        text(&show.stderr).contains("not found"),
        "{}",
        text(&show.stderr)
    );
}

#[tokio::test]
async fn background_run_then_attach_replays_the_transcript() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text("background answer"));
    let env = env_for(&mock);
    let output = env
        .run_agentctl(&["run", "--background", "--json", "work quietly"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let ack: Value = serde_json::from_slice(&output.stdout).unwrap();
    let id = ack["sessionId"].as_str().unwrap().to_owned();
    assert!(ack["runId"].as_str().unwrap().starts_with("run_"));

    let attach = env.run_agentctl(&["attach", &id]).await;
    assert_eq!(attach.status.code(), Some(0), "{}", text(&attach.stderr));
    let stdout = text(&attach.stdout);
    assert!(stdout.contains("work quietly"), "{stdout}");
    assert!(stdout.contains("background answer"), "{stdout}");
}

#[tokio::test]
async fn cancel_from_another_process_ends_the_run_with_exit_130() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "touch started && sleep 30"}),
    ));
    let env = env_for(&mock);
    let run = spawn_run(&env, "wait for a long time");
    wait_for_file(&env.workspace().join("started")).await;
    let list = env.run_agentctl(&["sessions", "list", "--json"]).await;
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    let id = list["sessions"][0]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();

    let cancel = env.run_agentctl(&["cancel", &id, "--json"]).await;
    assert_eq!(cancel.status.code(), Some(0), "{}", text(&cancel.stderr));
    let cancel: Value = serde_json::from_slice(&cancel.stdout).unwrap();
    assert_eq!(cancel["cancelled"], json!(true));

    let output = tokio::time::timeout(WAIT, run.wait_with_output())
        .await
        .expect("run did not end after the cancel")
        .unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", text(&output.stderr));
}

#[tokio::test]
async fn ctrl_c_cancels_the_run_and_exits_130() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "touch started && sleep 30"}),
    ));
    let env = env_for(&mock);
    let run = spawn_run(&env, "wait");
    wait_for_file(&env.workspace().join("started")).await;
    // SAFETY: kill with a valid pid has no memory-safety concerns.
    unsafe {
        libc::kill(run.id().unwrap() as i32, libc::SIGINT);
    }
    let output = tokio::time::timeout(WAIT, run.wait_with_output())
        .await
        .expect("run did not end after Ctrl-C")
        .unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", text(&output.stderr));
    // The daemon recorded the cancel: the session is idle with a cancelled run.
    let list = env.run_agentctl(&["sessions", "list", "--json"]).await;
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(list["sessions"][0]["status"], json!("idle"));
}

#[tokio::test]
async fn steer_and_followup_commands_reach_a_running_session() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "touch started && while [ ! -e go ]; do sleep 0.05; done"}),
    ));
    mock.push(Reply::text("steered answer"));
    mock.push(Reply::text("follow-up answer"));
    let env = env_for(&mock);
    let run = spawn_run(&env, "start");
    wait_for_file(&env.workspace().join("started")).await;
    let list = env.run_agentctl(&["sessions", "list", "--json"]).await;
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    let id = list["sessions"][0]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();

    let steer = env
        .run_agentctl(&["steer", &id, "look at the docs folder"])
        .await;
    assert_eq!(steer.status.code(), Some(0), "{}", text(&steer.stderr));
    let follow = env.run_agentctl(&["followup", &id, "then summarise"]).await;
    assert_eq!(follow.status.code(), Some(0), "{}", text(&follow.stderr));
    std::fs::write(env.workspace().join("go"), "").unwrap();

    let output = tokio::time::timeout(WAIT, run.wait_with_output())
        .await
        .expect("run did not finish")
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests[1].body.contains("look at the docs folder"));
    assert!(requests[2].body.contains("then summarise"));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("follow-up answer"), "{stdout}");
}
