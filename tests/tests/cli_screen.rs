//! What `agentctl run` and `attach` show a person (issue 13, "Seeing what happens"): text
//! from the model and tools neutralised, the after-run line, approvals with what they approve,
//! bounded lines in a narrow terminal, colours on request only.

use agentd_tests::harness::{Client, TestEnv, text};
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::scenario::{create_session, request_tool_results};
use agentd_tests::terminal::without_colors;
use protocol::event::Event;
use serde_json::{Value, json};

/// An environment whose daemon talks to `mock` (OpenAI format), running tools without asking.
fn bypass_env(mock: &MockLlm) -> TestEnv {
    TestEnv::new()
        .var("OPENAI_API_KEY", "sk-test")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .config("[permissions]\ndefault_mode = \"bypass\"\n")
}

/// An OSC 52 clipboard write, a title change and a screen clear.
const HOSTILE: &str = "\x1b]52;c;cHduZWQ=\x07\x1b]0;owned\x07\x1b[2J";

#[tokio::test]
async fn control_sequences_never_reach_the_terminal_raw_but_json_keeps_them() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": format!("echo '{HOSTILE}' && false")}),
    ));
    mock.push(Reply::text(format!("answer {HOSTILE} end")));
    let env = bypass_env(&mock);
    let output = env.run_agentctl(&["run", "go"]).await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        !stdout.contains('\x1b') && !stdout.contains('\x07'),
        "{stdout:?}"
    );
    assert!(
        !stderr.contains('\x1b') && !stderr.contains('\x07'),
        "{stderr:?}"
    );
    assert_eq!(stdout, "answer ^[]52;c;cHduZWQ=^G^[]0;owned^G^[[2J end\n");
    assert!(stderr.contains("^[]52;c;"), "the tool summary: {stderr:?}");

    // --json keeps the exact text (JSON-escaped).
    mock.push(Reply::text(format!("again {HOSTILE}")));
    let output = env.run_agentctl(&["--json", "run", "go"]).await;
    let stdout = text(&output.stdout);
    assert!(!stdout.contains('\x1b'), "{stdout:?}");
    let completed: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("ndjson"))
        .filter(|line| {
            line["event"]["type"] == "messageCompleted" && line["event"]["role"] == "assistant"
        })
        .collect();
    assert_eq!(completed.len(), 1, "{stdout}");
    assert_eq!(completed[0]["event"]["content"], format!("again {HOSTILE}"));
}

#[tokio::test]
async fn after_a_run_one_line_says_tokens_steps_and_duration() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_call("c1", "run_shell", json!({"command": "true"})).usage(100, 7, 40));
    mock.push(Reply::text("done").usage(120, 9, 60));
    let env = bypass_env(&mock);
    let output = env.run_agentctl(&["run", "go"]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let line = stderr
        .lines()
        .find(|line| line.starts_with("tokens "))
        .unwrap_or_else(|| panic!("no after-run line: {stderr}"));
    assert!(
        line.starts_with("tokens 220 in (100 cached) · 16 out · 2 steps · "),
        "{line}"
    );
    // Then how full the context window was at the last model call.
    assert!(
        (line.contains(" ms · context ") || line.contains(" s · context "))
            && line.ends_with(" of 128k"),
        "{line}"
    );
    // It comes before the session line, the last one.
    assert!(stderr.ends_with(&format!("{line}\nsession: {}\n", session_of(&stderr))));
}

fn session_of(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|line| line.strip_prefix("session: "))
        .unwrap_or_else(|| panic!("no session line: {stderr}"))
        .to_owned()
}

/// What a terminal of `columns` shows: every piece between line ends, carriage returns and
/// line erasures, colours removed.
fn screen_pieces(screen: &str) -> Vec<String> {
    without_colors(screen)
        .replace("\x1b[2K", "\r")
        .split(['\n', '\r'])
        .filter(|piece| !piece.is_empty())
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_50_column_terminal_gets_lines_that_fit_and_a_thinking_line() {
    let mock = MockLlm::start().await;
    let long = format!("echo {}", "word ".repeat(40));
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": long.trim_end()}),
    ));
    mock.push(Reply::text("short answer"));
    let env = bypass_env(&mock);
    let (screen, code) = env
        .run_agentctl_in_terminal(50, &[], &["--color", "never", "run", "go"])
        .await;
    assert_eq!(code, Some(0), "{screen:?}");
    let pieces = screen_pieces(&screen);
    let too_wide: Vec<&String> = pieces
        .iter()
        .filter(|piece| agentctl::render::display_width(piece) >= 50)
        .collect();
    assert!(too_wide.is_empty(), "wider than 49 columns: {too_wide:#?}");
    assert!(
        pieces
            .iter()
            .any(|piece| piece.contains(" run_shell: echo word") && piece.ends_with('…')),
        "{pieces:#?}"
    );
    assert!(
        pieces
            .iter()
            .any(|piece| piece.contains("thinking… 0s · Ctrl-C to cancel")),
        "{pieces:#?}"
    );
    assert!(
        pieces.iter().any(|piece| piece == "short answer"),
        "{pieces:#?}"
    );
    assert!(!screen.contains("\x1b[3"), "--color never: {screen:?}");
}

#[tokio::test]
async fn colours_follow_color_and_no_color() {
    let mock = MockLlm::start().await;
    let env = bypass_env(&mock);
    let sgr = |screen: &str| screen.contains("\x1b[32m") || screen.contains("\x1b[2m");
    for (args, extra, coloured) in [
        (&["run", "a"][..], &[][..], true),
        (&["run", "b"][..], &[("NO_COLOR", "1")][..], false),
        (&["--color", "never", "run", "c"][..], &[][..], false),
        (
            &["--color", "always", "run", "d"][..],
            &[("NO_COLOR", "1")][..],
            true,
        ),
    ] {
        mock.push(Reply::tool_call(
            "c1",
            "run_shell",
            json!({"command": "true"}),
        ));
        mock.push(Reply::text("ok"));
        let (screen, code) = env.run_agentctl_in_terminal(80, extra, args).await;
        assert_eq!(code, Some(0), "{screen:?}");
        assert_eq!(sgr(&screen), coloured, "{args:?} {extra:?}: {screen:?}");
    }
    // Without a terminal, `always` still colours stderr; `auto` does not.
    mock.push(Reply::text("ok"));
    let plain = env.run_agentctl(&["run", "e"]).await;
    assert!(!text(&plain.stderr).contains('\x1b'));
    mock.push(Reply::text("ok"));
    let forced = env.run_agentctl(&["--color", "always", "run", "f"]).await;
    assert!(
        text(&forced.stderr).contains("\x1b[2m"),
        "{}",
        text(&forced.stderr)
    );
    assert_eq!(
        text(&forced.stdout),
        "ok\n",
        "stdout is the model's text, never coloured"
    );
}

/// An environment whose daemon asks before shell commands and edits.
fn asking_env(mock: &MockLlm) -> TestEnv {
    TestEnv::new()
        .var("OPENAI_API_KEY", "sk-test")
        .var("OPENAI_BASE_URL", mock.openai_base_url())
        .config("[permissions]\ndefault_mode = \"default\"\n")
}

/// The tool result the model read for call `id` in the last request.
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
async fn an_edit_approval_shows_the_diff_and_the_rules_and_n_tells_the_model_why() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_call(
        "c1",
        "edit_file",
        json!({"path": "style.txt", "oldText": "indent = spaces", "newText": "indent = four spaces"}),
    ));
    mock.push(Reply::text("ok, tabs then"));
    let env = asking_env(&mock);
    std::fs::write(env.workspace().join("style.txt"), "indent = spaces\n").unwrap();
    let mut terminal = env.spawn_agentctl_in_terminal(120, &["--color", "never", "run", "fix it"]);
    let shown = terminal.wait_for("allow?", 0).await;
    let screen = terminal.screen.clone();
    assert!(
        screen.contains("approval needed: edit_file style.txt"),
        "{screen:?}"
    );
    assert!(
        screen.contains("  - indent = spaces\r\n  + indent = four spaces"),
        "{screen:?}"
    );
    assert!(
        screen.contains("[s] allows `Edit(/style.txt)` for this session"),
        "{screen:?}"
    );
    assert!(
        !screen.contains("why: approval needed to"),
        "the reason repeats: {screen:?}"
    );
    terminal.type_keys("n").await;
    terminal.wait_for("why not?", shown).await;
    terminal.type_keys("no, use tabs\r").await;
    let (screen, code) = terminal.finish().await;
    assert_eq!(code, Some(0), "{screen:?}");
    assert!(screen.contains("ok, tabs then"), "{screen:?}");
    let seen = last_tool_result(&mock, "c1");
    assert!(
        seen.contains("by the user") && seen.contains("no, use tabs"),
        "{seen}"
    );
    assert_eq!(
        std::fs::read_to_string(env.workspace().join("style.txt")).unwrap(),
        "indent = spaces\n"
    );
}

#[tokio::test]
async fn a_denial_by_the_approve_policy_is_reported_as_policy_not_as_the_user() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "touch x"}),
    ));
    mock.push(Reply::text("fine"));
    let env = asking_env(&mock);
    let output = env
        .run_agentctl(&["--json", "run", "--approve", "never", "go"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let resolved: Vec<Value> = text(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("ndjson"))
        .filter(|line| line["event"]["type"] == "approvalResolved")
        .collect();
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0]["event"]["decidedBy"], "policy:agentctl");
    let seen = last_tool_result(&mock, "c1");
    assert!(
        seen.starts_with(
            "denied by the client's approval policy (policy:agentctl), not by the user"
        ),
        "{seen}"
    );
}

#[tokio::test]
async fn attach_on_a_terminal_answers_a_pending_approval_inline() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "touch attached.txt"}),
    ));
    mock.push(Reply::text("done"));
    let env = asking_env(&mock);
    let started = env.run_agentctl(&["daemon", "start"]).await;
    assert_eq!(started.status.code(), Some(0), "{}", text(&started.stderr));
    // This client counts as an answerer (so the approval waits) but never answers.
    let mut watcher = Client::connect_raw(&env.socket).await.expect("connect");
    watcher.initialize_as("watcher", true).await;
    let session_id = create_session(&mut watcher, &env.workspace()).await;
    watcher.subscribe(&session_id, Some(0)).await;
    watcher.prompt(&session_id, "touch it").await;
    loop {
        let envelope = watcher.next_event().await;
        if matches!(envelope.event, Event::ApprovalRequested { .. }) {
            break;
        }
    }
    let mut terminal =
        env.spawn_agentctl_in_terminal(100, &["--color", "never", "attach", &session_id]);
    terminal.wait_for("allow?", 0).await;
    assert!(
        terminal
            .screen
            .contains("approval needed: run_shell touch attached.txt"),
        "{:?}",
        terminal.screen
    );
    terminal.type_keys("y").await;
    let (screen, code) = terminal.finish().await;
    assert_eq!(code, Some(0), "{screen:?}");
    assert!(screen.contains("done"), "{screen:?}");
    // Shown once: not by the replay and again by the prompt.
    assert_eq!(
        screen
            .matches("approval needed: run_shell touch attached.txt")
            .count(),
        1,
        "{screen:?}"
    );
    assert!(env.workspace().join("attached.txt").exists());
    loop {
        let envelope = watcher.next_event().await;
        if let Event::ApprovalResolved { decided_by, .. } = envelope.event {
            assert_eq!(decided_by, "client:agentctl");
            break;
        }
    }
}

#[tokio::test]
async fn run_background_approve_wait_keeps_approvals_pending_for_approve() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "touch later.txt"}),
    ));
    mock.push(Reply::text("done later"));
    let env = asking_env(&mock);
    let started = env.run_agentctl(&["daemon", "start"]).await;
    assert_eq!(started.status.code(), Some(0), "{}", text(&started.stderr));
    // A watcher that does not answer approvals: nobody who answers follows the run.
    let mut watcher = Client::connect_raw(&env.socket).await.expect("connect");
    watcher.initialize_as("watcher", false).await;
    watcher
        .request("daemon/subscribe", json!({}))
        .await
        .expect("daemon/subscribe");
    let output = env
        .run_agentctl(&["run", "--background", "--approve", "wait", "touch it later"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("its approvals wait for an answer"),
        "{}",
        text(&output.stderr)
    );
    let approval_id = loop {
        let event = watcher.next_notification_result().await;
        assert_ne!(
            event["event"]["type"], "approvalResolved",
            "decided before anyone could answer: {event}"
        );
        if event["event"]["type"] == "approvalRequested" {
            break event["event"]["approval"]["approvalId"]
                .as_str()
                .expect("approvalId")
                .to_owned();
        }
    };
    let approved = env.run_agentctl(&["approve", &approval_id]).await;
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}",
        text(&approved.stderr)
    );
    loop {
        let event = watcher.next_notification_result().await;
        if event["event"]["type"] == "runFinished" {
            assert_eq!(event["event"]["status"], "completed", "{event}");
            break;
        }
    }
    assert!(env.workspace().join("later.txt").exists());

    // edits|all cannot answer for a run nobody follows.
    let refused = env
        .run_agentctl(&["run", "--background", "--approve", "all", "x"])
        .await;
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused.stderr).contains("--approve wait"),
        "{}",
        text(&refused.stderr)
    );
}

#[tokio::test]
async fn session_text_in_listings_is_neutralised_too() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text("ok"));
    let env = bypass_env(&mock);
    let title = format!("title {HOSTILE}");
    let output = env.run_agentctl(&["run", "--title", &title, "go"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let session_id = session_of(&text(&output.stderr));
    for args in [
        vec!["sessions", "list"],
        vec!["sessions", "show", &session_id],
    ] {
        let listed = env.run_agentctl(&args).await;
        let stdout = text(&listed.stdout);
        assert_eq!(listed.status.code(), Some(0), "{}", text(&listed.stderr));
        assert!(
            !stdout.contains('\x1b') && !stdout.contains('\x07'),
            "{args:?}: {stdout:?}"
        );
    }
    let shown = env.run_agentctl(&["sessions", "show", &session_id]).await;
    assert!(
        text(&shown.stdout).contains("title ^[]52;c;"),
        "{}",
        text(&shown.stdout)
    );
}
