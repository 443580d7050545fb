//! Approvals answered through `agentctl`: the non-interactive denial, `--approve wait` with
//! `agentctl approve`/`deny` from a second process, and `--mode plan`.

use agentd_tests::harness::{Client, TestEnv, WAIT, text};
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::scenario::request_tool_results;

use crate::approvals::*;

// --- agentctl --------------------------------------------------------------------------------

/// An agentctl environment whose daemon talks to `mock` and asks before shell and writes.
fn asking_env(mock: &MockLlm) -> TestEnv {
    TestEnv::new()
        .var("OPENAI_API_KEY", "sk-test")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .config(ASK)
}

/// A tool result as the model saw it in the last request (OpenAI format).
fn last_tool_result(mock: &MockLlm, id: &str) -> String {
    let requests = mock.requests();
    let last = requests.last().expect("a request");
    request_tool_results(Format::OpenAi, last)
        .into_iter()
        .find(|(call, _)| call == id)
        .unwrap_or_else(|| panic!("no result for {id}: {}", last.body))
        .1
}

#[tokio::test]
async fn agentctl_run_without_a_terminal_denies_and_tells_the_model() {
    let mock = MockLlm::start().await;
    mock.push(shell("c1", "touch cli.txt"));
    mock.push(Reply::text("I was not allowed to."));
    let env = asking_env(&mock);
    let output = env.run_agentctl(&["run", "touch it"]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("denied run_shell touch cli.txt"),
        "{stderr}"
    );
    assert!(stderr.contains("not interactive"), "{stderr}");
    assert_eq!(text(&output.stdout), "I was not allowed to.\n");
    let seen = last_tool_result(&mock, "c1");
    assert!(
        seen.contains("denied") && seen.contains("not interactive"),
        "{seen}"
    );
    assert!(!env.workspace().join("cli.txt").exists());
}

/// Start `agentctl run --approve wait PROMPT` in the background and wait for its approval on
/// the daemon-wide event stream; returns the run and the approval id. The watcher does not
/// answer approvals, so what holds the approval is the run itself.
async fn run_waiting(env: &TestEnv, prompt: &str) -> (tokio::process::Child, String) {
    let started = env.run_agentctl(&["daemon", "start"]).await;
    assert_eq!(started.status.code(), Some(0), "{}", text(&started.stderr));
    let mut watcher = Client::connect_raw(&env.socket).await.expect("connect");
    watcher.initialize_as("watcher", false).await;
    watcher
        .request("daemon/subscribe", serde_json::json!({}))
        .await
        .expect("daemon/subscribe");
    let run = env
        .agentctl()
        .args(["run", "--approve", "wait", prompt])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn agentctl run");
    loop {
        let event = watcher.next_notification_result().await;
        if event["event"]["type"] == "approvalRequested" {
            let id = event["event"]["approval"]["approvalId"]
                .as_str()
                .expect("approvalId");
            return (run, id.to_owned());
        }
    }
}

async fn finish(run: tokio::process::Child) -> std::process::Output {
    tokio::time::timeout(WAIT, run.wait_with_output())
        .await
        .expect("agentctl run did not finish in time")
        .expect("wait for agentctl run")
}

#[tokio::test]
async fn agentctl_approve_from_another_process_unblocks_a_waiting_run() {
    let mock = MockLlm::start().await;
    mock.push(shell("c1", "touch approved.txt"));
    mock.push(Reply::text("touched"));
    let env = asking_env(&mock);
    let (run, id) = run_waiting(&env, "touch it").await;
    assert!(!env.workspace().join("approved.txt").exists());

    let approved = env.run_agentctl(&["approve", &id]).await;
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}",
        text(&approved.stderr)
    );
    assert_eq!(
        text(&approved.stdout),
        format!("approval {}: allowed once\n", agentctl::ids::short(&id))
    );
    let output = finish(run).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    // People read short ids (`apr_` and 8 digits), which `approve` takes back.
    let short = agentctl::ids::short(&id);
    assert!(
        stderr.contains(&format!("approval {short} waits")),
        "{stderr}"
    );
    assert_eq!(text(&output.stdout), "touched\n");
    assert!(env.workspace().join("approved.txt").exists());

    // A second answer is refused with the daemon's message.
    let again = env.run_agentctl(&["deny", &id]).await;
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains("already decided"),
        "{}",
        text(&again.stderr)
    );
}

#[tokio::test]
async fn agentctl_deny_cancel_ends_the_waiting_run_with_130() {
    let mock = MockLlm::start().await;
    mock.push(shell("c1", "touch nope.txt"));
    let env = asking_env(&mock);
    let (run, id) = run_waiting(&env, "touch it").await;
    let denied = env
        .run_agentctl(&["deny", &id, "--cancel", "--reason", "not today"])
        .await;
    assert_eq!(denied.status.code(), Some(0), "{}", text(&denied.stderr));
    let output = finish(run).await;
    assert_eq!(output.status.code(), Some(130), "{}", text(&output.stderr));
    assert!(!env.workspace().join("nope.txt").exists());
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn agentctl_run_in_plan_mode_denies_writes() {
    let mock = MockLlm::start().await;
    mock.push(write("c1", "planned.txt", "x"));
    mock.push(Reply::text("Plan: write planned.txt."));
    let env = asking_env(&mock);
    let output = env
        .run_agentctl(&["run", "--mode", "plan", "write it"])
        .await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        !stderr.contains("approval"),
        "plan mode does not ask: {stderr}"
    );
    assert!(last_tool_result(&mock, "c1").contains("plan mode"));
    assert!(!env.workspace().join("planned.txt").exists());
}

#[tokio::test]
async fn attach_shows_a_pending_approval_once_and_its_answer_once() {
    let mock = MockLlm::start().await;
    mock.push(shell("c1", "touch attached.txt"));
    mock.push(Reply::text("touched"));
    let env = asking_env(&mock);
    let (run, id) = run_waiting(&env, "touch it").await;
    let listed = env.run_agentctl(&["--json", "approvals", "list"]).await;
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("json");
    let session = listed["approvals"][0]["sessionId"]
        .as_str()
        .expect("the approval's session")
        .to_owned();
    let mut attach = env
        .agentctl()
        .args(["attach", &session])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn agentctl attach");
    // Answer once attach has shown the approval, so it sees the answer live.
    let mut stderr = tokio::io::BufReader::new(attach.stderr.take().expect("stderr"));
    let mut shown = String::new();
    while !shown.contains("approval needed") {
        let mut line = String::new();
        let read = tokio::time::timeout(
            WAIT,
            tokio::io::AsyncBufReadExt::read_line(&mut stderr, &mut line),
        )
        .await
        .expect("attach shows the approval in time")
        .expect("read attach's stderr");
        assert!(read > 0, "attach ended first:\n{shown}");
        shown.push_str(&line);
    }
    let approved = env.run_agentctl(&["approve", &id]).await;
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}",
        text(&approved.stderr)
    );
    let mut rest = String::new();
    tokio::time::timeout(
        WAIT,
        tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut rest),
    )
    .await
    .expect("attach ends with the run")
    .expect("read attach's stderr");
    shown.push_str(&rest);
    let status = tokio::time::timeout(WAIT, attach.wait())
        .await
        .expect("attach exits")
        .expect("wait for attach");
    assert_eq!(status.code(), Some(0), "{shown}");
    assert_eq!(shown.matches("approval needed").count(), 1, "{shown}");
    assert_eq!(shown.matches("allowed once").count(), 1, "{shown}");
    finish(run).await;
}
