//! The daily-driver `agentctl` (issue 13) end to end: `run -c`, unique-prefix ids, piped
//! stdin attached to the prompt, `run --json`'s result object and `--output final`, the
//! session listing, `--mode/--model` on an existing session, per-run flags.

use agentd_tests::harness::{TestEnv, WAIT, text};
use agentd_tests::mock_llm::{MockLlm, Reply};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

/// An environment whose daemon talks to `mock` (OpenAI format), running tools without asking.
fn env_for(mock: &MockLlm) -> TestEnv {
    TestEnv::new()
        .var("OPENAI_API_KEY", "sk-test")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .config("[permissions]\ndefault_mode = \"bypass\"\n")
}

fn session_id_from(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|line| line.strip_prefix("session: "))
        .unwrap_or_else(|| panic!("no session id in stderr:\n{stderr}"))
        .trim()
        .to_owned()
}

/// The text of the last user message of a recorded OpenAI request.
fn last_user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|messages| messages.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|message| message["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn continue_and_id_prefixes_reach_the_right_session() {
    let mock = MockLlm::start().await;
    let env = env_for(&mock);
    mock.push(Reply::text("first"));
    let first = env.run_agentctl(&["run", "remember the number 7"]).await;
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let session_id = session_id_from(&text(&first.stderr));

    // -c continues the newest session of this directory.
    mock.push(Reply::text("second"));
    let second = env.run_agentctl(&["run", "-c", "which number?"]).await;
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    assert_eq!(session_id_from(&text(&second.stderr)), session_id);
    let requests = mock.requests();
    let history = requests[1].json["messages"].to_string();
    assert!(history.contains("remember the number 7"), "{history}");

    // A unique prefix (with or without `ses_`) names the session.
    let prefix = &session_id[..10];
    let shown = env.run_agentctl(&["sessions", "show", prefix]).await;
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    assert!(text(&shown.stdout).contains(&session_id));
    let bare = &session_id["ses_".len()..12];
    mock.push(Reply::text("third"));
    let third = env
        .run_agentctl(&["run", "--session", bare, "and now?"])
        .await;
    assert_eq!(third.status.code(), Some(0), "{}", text(&third.stderr));
    assert_eq!(session_id_from(&text(&third.stderr)), session_id);

    // -c in a directory without sessions says so.
    let elsewhere = env.path("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let none = env
        .run_agentctl(&["run", "-c", "--cwd", elsewhere.to_str().unwrap(), "hi"])
        .await;
    assert_eq!(none.status.code(), Some(1));
    assert!(
        text(&none.stderr).contains("no session in"),
        "{}",
        text(&none.stderr)
    );
}

#[tokio::test]
async fn an_ambiguous_prefix_lists_the_candidates() {
    let mock = MockLlm::start().await;
    let env = env_for(&mock);
    for _ in 0..2 {
        mock.push(Reply::text("ok"));
        let output = env.run_agentctl(&["run", "hello"]).await;
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    }
    // `ses_` matches both.
    let output = env.run_agentctl(&["sessions", "show", "ses_"]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("ambiguous: 2 sessions match"), "{stderr}");
    assert_eq!(stderr.matches("\n  ses_").count(), 2, "{stderr}");
}

#[tokio::test]
async fn piped_stdin_is_attached_to_the_prompt_as_a_fenced_block() {
    let mock = MockLlm::start().await;
    let env = env_for(&mock);
    mock.push(Reply::text("looks fine"));
    let mut child = env
        .agentctl()
        .args(["run", "review this"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn agentctl");
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"--- a/x\n+++ b/x\n+new line\n")
        .await
        .unwrap();
    drop(stdin);
    let output = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .expect("agentctl finished")
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        last_user_text(&mock.requests()[0].json),
        "review this\n\n```stdin\n--- a/x\n+++ b/x\n+new line\n```"
    );
}

#[tokio::test]
async fn run_json_ends_with_a_result_object_and_output_final_prints_only_the_answer() {
    let mock = MockLlm::start().await;
    let env = TestEnv::new()
        .var("OPENAI_API_KEY", "sk-test")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .config("[permissions]\ndefault_mode = \"default\"\n");
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "touch x"}),
    ));
    mock.push(Reply::text("Could not run it.").usage(11, 5, 0));
    let output = env.run_agentctl(&["--json", "run", "make x"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let last: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "result", "{stdout}");
    assert_eq!(last["status"], "completed");
    assert_eq!(last["finalText"], "Could not run it.");
    assert_eq!(last["steps"], 2);
    assert!(last["sessionId"].as_str().unwrap().starts_with("ses_"));
    assert!(last["runId"].as_str().unwrap().starts_with("run_"));
    assert!(
        last["usage"]["inputTokens"].as_u64().unwrap() >= 11,
        "{last}"
    );
    let denials = last["denials"].as_array().unwrap();
    assert_eq!(denials.len(), 1, "{last}");
    assert_eq!(denials[0]["tool"], "run_shell");
    // Every line before it is an event envelope.
    for line in stdout.lines().rev().skip(1) {
        let envelope: Value = serde_json::from_str(line).unwrap();
        assert!(envelope["event"]["type"].is_string(), "{line}");
    }

    mock.push(Reply::text("The final ").fragmented());
    mock.push(Reply::text("unused"));
    let output = env
        .run_agentctl(&["run", "--output", "final", "say it"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "The final \n");
}

#[tokio::test]
async fn sessions_list_shows_previews_and_filters_by_cwd_and_limit() {
    let mock = MockLlm::start().await;
    let env = env_for(&mock);
    let other = env.path("other-project");
    std::fs::create_dir_all(&other).unwrap();
    for (prompt, cwd) in [
        ("fix the flaky test", None),
        ("write the release notes", None),
        ("elsewhere entirely", Some(other.to_str().unwrap())),
    ] {
        mock.push(Reply::text("done").usage(1200, 34, 0));
        let mut args = vec!["run"];
        if let Some(cwd) = cwd {
            args.extend(["--cwd", cwd]);
        }
        args.push(prompt);
        let output = env.run_agentctl(&args).await;
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    }
    let output = env.run_agentctl(&["sessions", "list", "--cwd", "."]).await;
    let table = text(&output.stdout);
    assert!(table.starts_with("ID "), "{table}");
    assert!(table.contains("TITLE / FIRST PROMPT"), "{table}");
    assert!(table.contains("fix the flaky test") && table.contains("write the release notes"));
    assert!(!table.contains("elsewhere entirely"), "{table}");
    assert!(table.contains("1.2k/34"), "{table}");
    let limited = env
        .run_agentctl(&["--json", "sessions", "list", "--limit", "1"])
        .await;
    let listed: Value = serde_json::from_slice(&limited.stdout).unwrap();
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0]["preview"], "elsewhere entirely");
}

#[tokio::test]
async fn run_flags_shape_the_session_and_mode_and_model_update_an_existing_one() {
    let mock = MockLlm::start().await;
    let env = env_for(&mock);
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "rm -rf build"}),
    ));
    mock.push(Reply::text("ok"));
    let output = env
        .run_agentctl(&[
            "run",
            "--deny",
            "Bash(rm:*)",
            "--append-system-prompt",
            "Answer in French.",
            "--max-steps",
            "2",
            "clean up",
        ])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let session_id = session_id_from(&text(&output.stderr));
    let requests = mock.requests();
    let system = requests[0].json["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(system.contains("Answer in French."), "{system}");
    let tool_result = requests[1].json["messages"].to_string();
    assert!(
        tool_result.contains("denied"),
        "the session's deny rule applied: {tool_result}"
    );

    mock.push(Reply::text("planned"));
    let output = env
        .run_agentctl(&[
            "run",
            "--session",
            &session_id,
            "--mode",
            "plan",
            "--model",
            "gpt-5",
            "next",
        ])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(mock.requests()[2].json["model"], "gpt-5");
    let shown = env
        .run_agentctl(&["--json", "sessions", "show", &session_id])
        .await;
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["session"]["permissionMode"], "plan");

    let refused = env
        .run_agentctl(&["run", "--session", &session_id, "--allow", "Read", "x"])
        .await;
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr).contains("--allow applies to a new session"));
}
