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
async fn continue_skips_the_sessions_of_subagents() {
    let mock = MockLlm::start().await;
    let env = env_for(&mock);
    mock.push(Reply::tool_call(
        "c1",
        "task",
        json!({"prompt": "look around"}),
    ));
    mock.push(Reply::text("the child's report"));
    mock.push(Reply::text("parent done"));
    let first = env.run_agentctl(&["run", "delegate this"]).await;
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let parent = session_id_from(&text(&first.stderr));
    let listed = env.run_agentctl(&["--json", "sessions", "list"]).await;
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let children: Vec<&Value> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["parentSessionId"] == parent.as_str())
        .collect();
    assert_eq!(children.len(), 1, "{listed}");
    mock.push(Reply::text("continued"));
    let second = env.run_agentctl(&["run", "-c", "go on"]).await;
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    assert_eq!(session_id_from(&text(&second.stderr)), parent);
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
async fn an_at_mention_attaches_the_file_but_piped_text_never_does() {
    let mock = MockLlm::start().await;
    let env = env_for(&mock);
    std::fs::write(env.workspace().join("notes.md"), "the notes\n").unwrap();
    std::fs::write(env.workspace().join("secret.txt"), "do not send\n").unwrap();
    mock.push(Reply::text("read them"));
    mock.push(Reply::text("ok"));
    let output = env
        .run_agentctl(&["run", "summarise @notes.md please"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        last_user_text(&mock.requests()[0].json),
        "summarise @notes.md please\n\n```notes.md\nthe notes\n```"
    );
    // A word of piped text names a file: it is not read.
    let mut child = env
        .agentctl()
        .args(["run", "-c", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn agentctl");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"look at @secret.txt").await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .expect("agentctl finished")
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        last_user_text(&mock.requests()[1].json),
        "look at @secret.txt"
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
    // (Sessions created in the same second list in id order: which one comes first varies.)
    let limited = env
        .run_agentctl(&["--json", "sessions", "list", "--cwd", ".", "--limit", "1"])
        .await;
    let listed: Value = serde_json::from_slice(&limited.stdout).unwrap();
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listed}");
    let preview = sessions[0]["preview"].as_str().unwrap();
    assert!(
        ["fix the flaky test", "write the release notes"].contains(&preview),
        "{listed}"
    );
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

#[tokio::test]
async fn status_and_models_show_the_provider_and_a_changed_environment_asks_for_a_restart() {
    let mock = MockLlm::start().await;
    let env = env_for(&mock);
    let output = env.run_agentctl(&["status"]).await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains(&format!(
            "provider     openai (openai), model gpt-4o-mini, {}",
            mock.openai_base_url().trim_end_matches('/')
        )),
        "{stdout}"
    );
    assert!(stdout.contains("config.toml (current, loaded "), "{stdout}");
    assert!(
        !stdout.contains("sk-test") && !stderr.contains("restart"),
        "{stdout}{stderr}"
    );

    let models = env.run_agentctl(&["models"]).await;
    let table = text(&models.stdout);
    assert!(
        table.contains("*  openai    openai  gpt-4o-mini"),
        "{table}"
    );
    assert!(
        table.contains("$OPENAI_API_KEY") && !table.contains("sk-test"),
        "{table}"
    );

    // This shell now has another model variable than the daemon started with.
    let changed = env
        .agentctl()
        .env("AGENTD_MODEL", "gpt-5")
        .args(["status"])
        .output()
        .await
        .unwrap();
    let stderr = text(&changed.stderr);
    assert!(stderr.contains("run `agentctl daemon restart`"), "{stderr}");
    assert!(
        !stderr.contains("gpt-5"),
        "values are never shown: {stderr}"
    );
    let pid_before = daemon_pid(&env).await;

    // The restart picks up the shell's environment: no warning any more.
    let restarted = env
        .agentctl()
        .env("AGENTD_MODEL", "gpt-5")
        .args(["daemon", "restart"])
        .output()
        .await
        .unwrap();
    assert_eq!(
        restarted.status.code(),
        Some(0),
        "{}",
        text(&restarted.stderr)
    );
    assert!(text(&restarted.stdout).contains("agentd restarted"));
    let after = env
        .agentctl()
        .env("AGENTD_MODEL", "gpt-5")
        .args(["status"])
        .output()
        .await
        .unwrap();
    assert!(
        !text(&after.stderr).contains("restart"),
        "{}",
        text(&after.stderr)
    );
    assert!(text(&after.stdout).contains("model gpt-5"));
    assert_ne!(daemon_pid(&env).await, pid_before);
    let stopped = env.run_agentctl(&["daemon", "stop"]).await;
    assert_eq!(stopped.status.code(), Some(0));
}

async fn daemon_pid(env: &TestEnv) -> u64 {
    let output = env.run_agentctl(&["--json", "daemon", "status"]).await;
    let status: Value = serde_json::from_slice(&output.stdout).unwrap();
    status["pid"].as_u64().unwrap()
}

#[tokio::test]
async fn daemon_status_without_a_daemon_says_not_running_and_exits_3() {
    let env = TestEnv::new();
    let output = env.run_agentctl(&["daemon", "status"]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("agentd is not running"), "{stderr}");
    assert!(!stderr.contains("--no-start"), "{stderr}");
    // A missing daemon binary names AGENTD_BIN.
    let missing = env
        .agentctl()
        .env("AGENTD_BIN", env.path("no-such-agentd"))
        .args(["status"])
        .output()
        .await
        .unwrap();
    assert_eq!(missing.status.code(), Some(3));
    assert!(
        text(&missing.stderr).contains("set AGENTD_BIN"),
        "{}",
        text(&missing.stderr)
    );
}

#[tokio::test]
async fn errors_name_agentctl_commands_not_wire_methods() {
    let mock = MockLlm::start().await;
    let env = env_for(&mock);
    mock.push(Reply::text("ok"));
    let output = env.run_agentctl(&["run", "hello"]).await;
    let session_id = session_id_from(&text(&output.stderr));
    let steer = env.run_agentctl(&["steer", &session_id, "faster"]).await;
    let stderr = text(&steer.stderr);
    assert_eq!(steer.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("`agentctl followup {session_id} TEXT`")),
        "{stderr}"
    );
    assert!(!stderr.contains("session/"), "{stderr}");
}

#[tokio::test]
async fn with_stdin_piped_the_approval_keys_come_from_the_terminal() {
    use tokio::io::AsyncReadExt;
    let mock = MockLlm::start().await;
    let env = TestEnv::new()
        .var("OPENAI_API_KEY", "sk-test")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .config("[permissions]\ndefault_mode = \"default\"\n");
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "touch made-by-tty"}),
    ));
    mock.push(Reply::text("made it"));
    let agentctl = agentd_tests::harness::binary("agentctl");
    let pipeline = format!(
        "printf 'piped notes' | {} run 'act on this'",
        agentctl.display()
    );
    // `script` gives the pipeline a terminal: agentctl's stdin is the pipe, /dev/tty the pty,
    // whose input is what this test writes to `script`'s stdin.
    let mut command = tokio::process::Command::new("script");
    env.apply(&mut command);
    let mut child = command
        .args(["-qfec", &pipeline, "/dev/null"])
        .current_dir(env.workspace())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn script");
    let mut screen = child.stdout.take().unwrap();
    let mut keys = child.stdin.take().unwrap();
    let mut seen = Vec::new();
    let asked = tokio::time::timeout(WAIT, async {
        let mut chunk = [0u8; 4096];
        while !String::from_utf8_lossy(&seen).contains("allow?") {
            let read = screen.read(&mut chunk).await.unwrap();
            assert!(
                read > 0,
                "the screen ended: {}",
                String::from_utf8_lossy(&seen)
            );
            seen.extend_from_slice(&chunk[..read]);
        }
    })
    .await;
    assert!(
        asked.is_ok(),
        "no prompt: {}",
        String::from_utf8_lossy(&seen)
    );
    keys.write_all(b"y").await.unwrap();
    keys.flush().await.unwrap();
    let mut rest = Vec::new();
    tokio::time::timeout(WAIT, screen.read_to_end(&mut rest))
        .await
        .expect("agentctl finished")
        .unwrap();
    let status = child.wait().await.unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&seen),
        String::from_utf8_lossy(&rest)
    );
    assert_eq!(status.code(), Some(0), "{all}");
    assert!(env.workspace().join("made-by-tty").exists(), "{all}");
    assert!(
        last_user_text(&mock.requests()[0].json).contains("```stdin\npiped notes\n```"),
        "the pipe was still attached"
    );
    drop(keys);
}

#[tokio::test]
async fn approve_takes_a_unique_prefix_of_an_approval_id() {
    let mock = MockLlm::start().await;
    let env = TestEnv::new()
        .var("OPENAI_API_KEY", "sk-test")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .config("[permissions]\ndefault_mode = \"default\"\n");
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "touch ok.txt"}),
    ));
    mock.push(Reply::text("touched"));
    let started = env.run_agentctl(&["daemon", "start"]).await;
    assert_eq!(started.status.code(), Some(0), "{}", text(&started.stderr));
    let mut watcher = agentd_tests::harness::Client::connect_raw(&env.socket)
        .await
        .unwrap();
    watcher.initialize_as("watcher", false).await;
    watcher
        .request("daemon/subscribe", json!({}))
        .await
        .unwrap();
    let run = env
        .agentctl()
        .args(["run", "--approve", "wait", "touch it"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let approval_id = loop {
        let event = watcher.next_notification_result().await;
        if event["event"]["type"] == "approvalRequested" {
            break event["event"]["approval"]["approvalId"]
                .as_str()
                .unwrap()
                .to_owned();
        }
    };
    let prefix = &approval_id[..10];
    let approved = env.run_agentctl(&["approve", prefix]).await;
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}",
        text(&approved.stderr)
    );
    assert_eq!(
        text(&approved.stdout),
        format!(
            "approval {}: allowed once\n",
            agentctl::ids::short(&approval_id)
        )
    );
    let output = tokio::time::timeout(WAIT, run.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(env.workspace().join("ok.txt").exists());
}

#[tokio::test]
async fn daemon_upgrade_restarts_into_the_binary_on_disk_and_says_its_version() {
    let mock = MockLlm::start().await;
    let env = env_for(&mock);
    let started = env.run_agentctl(&["daemon", "start"]).await;
    assert_eq!(started.status.code(), Some(0), "{}", text(&started.stderr));
    let pid_before = daemon_pid(&env).await;

    let upgraded = env.run_agentctl(&["daemon", "upgrade"]).await;
    assert_eq!(
        upgraded.status.code(),
        Some(0),
        "{}",
        text(&upgraded.stderr)
    );
    let stdout = text(&upgraded.stdout);
    let binary = agentd_tests::harness::binary("agentd");
    assert!(stdout.contains("agentd restarted (pid "), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "{} is the same version as the daemon that ran ({})",
            binary.display(),
            env!("CARGO_PKG_VERSION")
        )),
        "{stdout}"
    );
    assert!(
        !stdout.contains("systemd"),
        "no service manager here: {stdout}"
    );
    let pid_after = daemon_pid(&env).await;
    assert_ne!(pid_after, pid_before);

    let json_run = env.run_agentctl(&["--json", "daemon", "upgrade"]).await;
    let result: Value = serde_json::from_slice(&json_run.stdout).unwrap();
    assert_eq!(result["via"], "agentctl", "{result}");
    assert_eq!(result["previousPid"], pid_after);
    assert_eq!(result["binary"], binary.display().to_string());
    let stopped = env.run_agentctl(&["daemon", "stop"]).await;
    assert_eq!(stopped.status.code(), Some(0));
}
