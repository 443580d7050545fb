//! Interactive chat (`agentctl chat`, and `agentctl` alone on a terminal) driven through a
//! pseudo-terminal: a prompt streams its answer, a line typed during a run is a steer or a
//! follow-up, an approval is answered with one key, Ctrl-C cancels then quits, `/mode` and the
//! other local commands answer without a model call. Assertions are on the screen's text.

use agentd_tests::harness::{TestEnv, text};
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::pty::Pty;
use agentd_tests::scenario::{
    config_toml, mkfifo, request_tool_results, request_user_texts, write_fifo,
};
use serde_json::json;

/// The terminal the chat gets.
const COLS: u16 = 100;
const ROWS: u16 = 30;

/// The after-run line, the last thing a run writes (`tokens 10 in · 5 out · 1 step · 12 ms`).
const AFTER_RUN: &str = " out · ";

/// Permissions that ask before shell commands and writes.
const ASK: &str = "[permissions]\ndefault_mode = \"default\"\n";

/// An agentctl environment whose daemon talks to `mock`; `extra` goes into config.toml.
fn chat_env(mock: &MockLlm, extra: &str) -> TestEnv {
    TestEnv::new().config(&config_toml(mock, Format::OpenAi, extra))
}

/// `agentctl ARGS` on a terminal of its own, once its first prompt is up.
async fn start_chat(env: &TestEnv, args: &[&str]) -> Pty {
    let mut command = env.agentctl();
    command.args(args);
    let mut pty = Pty::spawn(command, COLS, ROWS);
    pty.expect("/help for commands").await;
    pty.expect("› ").await;
    pty
}

/// The session id the screen named last (`session ses_…`).
fn session_on_screen(screen: &str) -> String {
    let at = screen.rfind("session ses_").expect("a session line") + "session ".len();
    screen[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

#[tokio::test]
async fn agentctl_alone_on_a_terminal_chats_and_ctrl_d_quits() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text("Hello from the model."));
    mock.push(Reply::text("Still here."));
    let env = chat_env(&mock, "");
    let mut pty = start_chat(&env, &[]).await;

    pty.send("say hello\r");
    pty.expect("Hello from the model.").await;
    // The run ended: the next line is a new prompt in the same session.
    pty.expect(AFTER_RUN).await;
    pty.send("again\r");
    pty.expect("Still here.").await;
    pty.expect(AFTER_RUN).await;

    pty.send("\x04");
    pty.expect("stays").await;
    let status = pty.wait().await;
    assert_eq!(status.code(), Some(0), "{}", pty.screen());
    let session = session_on_screen(&pty.screen());

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let users = request_user_texts(Format::OpenAi, &requests[1]);
    assert_eq!(
        users,
        ["say hello", "again"],
        "one session holds both turns"
    );
    let listed = env.run_agentctl(&["--json", "sessions", "list"]).await;
    assert!(
        text(&listed.stdout).contains(&session),
        "{}",
        text(&listed.stdout)
    );
}

#[tokio::test]
async fn a_line_typed_during_a_run_is_a_steer_and_alt_enter_a_follow_up() {
    let mock = MockLlm::start().await;
    let env = chat_env(&mock, "");
    let gate = env.workspace().join("gate");
    mkfifo(&gate);
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "cat gate"}),
    ));
    mock.push(Reply::text("Steered."));
    mock.push(Reply::text("Followed up."));
    let mut pty = start_chat(&env, &["chat"]).await;

    pty.send("read the gate\r");
    // The tool holds the run until the gate opens.
    pty.expect("run_shell: cat gate").await;
    pty.send("use tabs\r");
    pty.expect("queued steer: use tabs").await;
    pty.send("then stop\x1b\r");
    pty.expect("queued follow-up: then stop").await;
    write_fifo(&gate, "open\n").await;

    pty.expect("steer delivered: use tabs").await;
    pty.expect("Steered.").await;
    pty.expect("follow-up delivered: then stop").await;
    pty.expect("Followed up.").await;
    pty.expect(AFTER_RUN).await;

    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let second = request_user_texts(Format::OpenAi, &requests[1]);
    assert_eq!(
        second.last().map(String::as_str),
        Some("use tabs"),
        "{second:?}"
    );
    let third = request_user_texts(Format::OpenAi, &requests[2]);
    assert_eq!(
        third.last().map(String::as_str),
        Some("then stop"),
        "{third:?}"
    );

    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}

#[tokio::test]
async fn an_approval_is_answered_with_one_key() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "touch approved.txt"}),
    ));
    mock.push(Reply::tool_call(
        "c2",
        "run_shell",
        json!({"command": "touch denied.txt"}),
    ));
    mock.push(Reply::text("Touched one."));
    let env = chat_env(&mock, ASK);
    let mut pty = start_chat(&env, &["chat"]).await;

    pty.send("touch them\r");
    pty.expect("approval needed: run_shell touch approved.txt")
        .await;
    pty.expect("allow?").await;
    // One key alone on the line, then Enter, answers.
    pty.send("y\r");
    pty.expect("allowed once").await;
    pty.expect("approval needed: run_shell touch denied.txt")
        .await;
    pty.expect("allow?").await;
    // A sentence answers nothing (its `s` must not allow for the session): it is a steer,
    // and the approval still waits; local commands still work.
    pty.send("sure, go ahead\r");
    pty.expect("queued steer: sure, go ahead").await;
    pty.expect("the approval still waits").await;
    pty.send("/cost\r");
    pty.expect("session: ").await;
    // `n` asks why; the reason typed goes to the model.
    pty.send("n\r");
    pty.expect("why not?").await;
    pty.send("no, use tabs\r");
    pty.expect("denied").await;
    pty.expect("Touched one.").await;
    pty.expect(AFTER_RUN).await;
    assert!(env.workspace().join("approved.txt").exists());
    assert!(!env.workspace().join("denied.txt").exists());
    let requests = mock.requests();
    let results = request_tool_results(Format::OpenAi, &requests[2]);
    let denied = &results
        .iter()
        .find(|(id, _)| id == "c2")
        .expect("c2's result")
        .1;
    assert!(
        denied.contains("denied") && denied.contains("no, use tabs"),
        "{denied}"
    );

    pty.send("\x04");
    assert_eq!(pty.wait().await.code(), Some(0));
}

#[tokio::test]
async fn ctrl_c_cancels_the_run_and_twice_when_idle_quits_keeping_the_session() {
    let mock = MockLlm::start().await;
    mock.push(Reply::stall());
    let env = chat_env(&mock, "");
    let mut pty = start_chat(&env, &["chat"]).await;

    pty.send("think forever\r");
    mock.wait_for_requests(1).await;
    pty.send("\x03");
    pty.expect("cancelling").await;
    pty.expect("run cancelled").await;
    pty.expect(AFTER_RUN).await;

    // Idle now: one Ctrl-C warns, the second quits.
    pty.send("\x03");
    pty.expect("Ctrl-C again").await;
    pty.send("\x03");
    pty.expect("stays").await;
    assert_eq!(pty.wait().await.code(), Some(0));

    let session = session_on_screen(&pty.screen());
    let listed = env.run_agentctl(&["--json", "sessions", "list"]).await;
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("json");
    let sessions = listed["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["sessionId"], session.as_str());
    assert_eq!(sessions[0]["status"], "idle");
}

#[tokio::test]
async fn mode_plan_before_the_first_prompt_starts_the_session_in_plan_mode() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_call(
        "c1",
        "write_file",
        json!({"path": "planned.txt", "content": "x"}),
    ));
    mock.push(Reply::text("Plan: write planned.txt."));
    let env = chat_env(&mock, "");
    let mut pty = start_chat(&env, &["chat"]).await;

    pty.send("/mode plan\r");
    pty.expect("mode plan for the session the next prompt starts")
        .await;
    pty.send("/status\r");
    pty.expect("no session yet").await;
    pty.send("write it\r");
    pty.expect("Plan: write planned.txt.").await;
    pty.expect(AFTER_RUN).await;
    assert!(!env.workspace().join("planned.txt").exists());
    pty.send("/status\r");
    pty.expect("mode plan").await;
    // Local commands never reach the model.
    assert_eq!(mock.requests().len(), 2);

    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}

#[tokio::test]
async fn local_commands_answer_without_the_model() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text("Hi.").usage(120, 7, 100));
    let env = chat_env(&mock, "");
    let mut pty = start_chat(&env, &["chat"]).await;

    pty.send("/help\r");
    pty.expect("/mode [mode]").await;
    pty.send("/frobnicate\r");
    pty.expect("unknown command /frobnicate").await;
    pty.send("/mode sideways\r");
    pty.expect("unknown mode sideways").await;
    pty.send("hello\r");
    pty.expect("Hi.").await;
    pty.expect(AFTER_RUN).await;
    pty.send("/cost\r");
    pty.expect("session: 120 tokens in (100 cached), 7 out")
        .await;
    pty.send("/sessions\r");
    pty.expect("TITLE / FIRST PROMPT").await;
    pty.expect("this chat: ses_").await;
    pty.send("/new\r");
    pty.expect("the next prompt starts a new session").await;
    pty.send("/status\r");
    pty.expect("no session yet").await;
    assert_eq!(mock.requests().len(), 1);

    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}

#[tokio::test]
async fn chat_continues_the_newest_session_of_the_directory_or_a_given_one() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text("First answer."));
    mock.push(Reply::text("Second answer."));
    mock.push(Reply::text("Third answer."));
    let env = chat_env(&mock, "");
    let mut first = start_chat(&env, &["chat"]).await;
    first.send("first\r");
    first.expect("First answer.").await;
    first.expect(AFTER_RUN).await;
    first.send("/quit\r");
    assert_eq!(first.wait().await.code(), Some(0));
    let session = session_on_screen(&first.screen());

    let mut command = env.agentctl();
    command.args(["chat", "-c"]);
    let mut again = Pty::spawn(command, COLS, ROWS);
    // Resumed: named by its first prompt, and its last turn shown again.
    again
        .expect(&format!("session {session} · mock-model · bypass · first"))
        .await;
    again.expect("› first").await;
    again.expect("First answer.").await;
    again.send("second\r");
    again.expect("Second answer.").await;
    again.send("/quit\r");
    assert_eq!(again.wait().await.code(), Some(0));

    // A unique prefix names the session as well as its whole id.
    let mut given = start_chat(&env, &["chat", "--session", &session[..12]]).await;
    given.send("third\r");
    given.expect("Third answer.").await;
    given.send("/quit\r");
    assert_eq!(given.wait().await.code(), Some(0));

    let requests = mock.requests();
    let users = request_user_texts(Format::OpenAi, &requests[2]);
    assert_eq!(users, ["first", "second", "third"]);
}

#[tokio::test]
async fn chat_without_a_terminal_or_a_session_to_continue_says_what_to_do() {
    let mock = MockLlm::start().await;
    let env = chat_env(&mock, "");
    // No terminal: `agentctl` alone is a usage error, and so is `agentctl chat`.
    let alone = env.run_agentctl(&[]).await;
    assert_eq!(alone.status.code(), Some(2));
    assert!(
        text(&alone.stderr).contains("`agentctl help`"),
        "{}",
        text(&alone.stderr)
    );
    let chat = env.run_agentctl(&["chat"]).await;
    assert_eq!(chat.status.code(), Some(2));
    assert!(
        text(&chat.stderr).contains("use `agentctl run PROMPT` in scripts"),
        "{}",
        text(&chat.stderr)
    );
    // Refused before starting a daemon.
    assert!(!env.socket.exists());
    // A terminal, but nothing to continue here.
    let mut command = env.agentctl();
    command.args(["chat", "-c"]);
    let mut pty = Pty::spawn(command, COLS, ROWS);
    pty.expect("no session in").await;
    assert_eq!(pty.wait().await.code(), Some(1));
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn mode_and_model_change_the_session_from_its_next_run() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text("First."));
    mock.push(Reply::tool_call(
        "c1",
        "write_file",
        json!({"path": "planned.txt", "content": "x"}),
    ));
    mock.push(Reply::text("Planned only."));
    let env = chat_env(&mock, "");
    let mut pty = start_chat(&env, &["chat"]).await;

    pty.send("hello\r");
    pty.expect("First.").await;
    pty.expect(AFTER_RUN).await;
    pty.send("/mode plan\r");
    pty.expect("mode plan from the next run").await;
    pty.send("/model mock:other-model\r");
    pty.expect("model mock:other-model from the next run").await;
    pty.send("write it\r");
    pty.expect("Planned only.").await;
    pty.expect(AFTER_RUN).await;
    // Plan mode refused the write; the new model answered.
    assert!(!env.workspace().join("planned.txt").exists());
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let model = |index: usize| {
        let body: serde_json::Value = serde_json::from_str(&requests[index].body).expect("json");
        body["model"].as_str().unwrap_or_default().to_owned()
    };
    assert_eq!(model(0), "mock-model");
    assert_eq!(model(1), "other-model");
    pty.send("/status\r");
    pty.expect("model mock:other-model · mode plan · idle")
        .await;

    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}

#[tokio::test]
async fn lines_typed_in_an_earlier_chat_come_back_with_up() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text("Noted."));
    mock.push(Reply::text("Again."));
    let env = chat_env(&mock, "");
    let mut first = start_chat(&env, &["chat"]).await;
    first.send("remember this line\r");
    first.expect("Noted.").await;
    first.expect(AFTER_RUN).await;
    first.send("/quit\r");
    assert_eq!(first.wait().await.code(), Some(0));
    let history = env.path("state").join("agentd").join("chat_history");
    let mode = std::fs::metadata(&history)
        .expect("history file")
        .permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
        0o600
    );

    // Up twice: `/quit`, then the prompt before it.
    let mut second = start_chat(&env, &["chat"]).await;
    second.send("\x1b[A\x1b[A\r");
    second.expect("Again.").await;
    second.send("/quit\r");
    assert_eq!(second.wait().await.code(), Some(0));
    let users = request_user_texts(Format::OpenAi, &mock.requests()[1]);
    assert_eq!(users, ["remember this line"]);
}

#[tokio::test]
async fn a_daemon_that_goes_away_ends_the_chat_with_exit_3_and_how_to_go_on() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text("Here."));
    let env = chat_env(&mock, "");
    // It waits for the daemon to come back (`chat_restart`): here, one second.
    let mut command = env.agentctl();
    command.arg("chat").env("AGENTCTL_RECONNECT_SECS", "1");
    let mut pty = Pty::spawn(command, COLS, ROWS);
    pty.expect("/help for commands").await;
    pty.expect("› ").await;
    pty.send("hello\r");
    pty.expect("Here.").await;
    pty.expect(AFTER_RUN).await;
    let session = session_on_screen(&pty.screen());

    let stopped = env.run_agentctl(&["daemon", "stop"]).await;
    assert_eq!(stopped.status.code(), Some(0), "{}", text(&stopped.stderr));
    pty.expect("waiting for it to come back").await;
    pty.expect("lost the connection to agentd").await;
    pty.expect(&format!("`agentctl chat --session {session}` continues"))
        .await;
    assert_eq!(pty.wait().await.code(), Some(3));
}

#[tokio::test]
async fn ctrl_c_at_an_approval_prompt_cancels_the_run_and_nothing_runs() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "touch never.txt"}),
    ));
    let env = chat_env(&mock, ASK);
    let mut pty = start_chat(&env, &["chat"]).await;

    pty.send("touch it\r");
    pty.expect("allow?").await;
    pty.send("\x03");
    pty.expect("cancelling").await;
    pty.expect("run cancelled").await;
    pty.expect(AFTER_RUN).await;
    assert!(!env.workspace().join("never.txt").exists());
    // Idle again: the approval keys are plain text once more.
    pty.send("\x04");
    pty.expect("stays").await;
    assert_eq!(pty.wait().await.code(), Some(0));
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn chat_on_a_running_session_shows_the_run_and_steers_it() {
    let mock = MockLlm::start().await;
    let env = chat_env(&mock, "");
    let gate = env.workspace().join("gate");
    mkfifo(&gate);
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "cat gate"}),
    ));
    mock.push(Reply::text("Steered from the chat."));
    let started = env
        .run_agentctl(&["--json", "run", "--background", "wait at the gate"])
        .await;
    assert_eq!(started.status.code(), Some(0), "{}", text(&started.stderr));
    let started: serde_json::Value = serde_json::from_slice(&started.stdout).expect("json");
    let session = started["sessionId"].as_str().expect("sessionId").to_owned();
    // The command has started (after the batch's checkpoint): a steer now cannot skip it.
    let mut watcher = agentd_tests::harness::Client::connect_raw(&env.socket)
        .await
        .expect("connect");
    watcher.initialize().await;
    watcher.subscribe(&session, Some(0)).await;
    watcher
        .persisted_events_until(|event| matches!(event, protocol::event::Event::ToolStarted { .. }))
        .await;

    let mut pty = start_chat(&env, &["chat", "--session", &session]).await;
    pty.send("use the side door\r");
    pty.expect("queued steer: use the side door").await;
    write_fifo(&gate, "open\n").await;
    pty.expect("steer delivered: use the side door").await;
    pty.expect("Steered from the chat.").await;
    pty.expect(AFTER_RUN).await;
    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}

#[tokio::test]
async fn chat_warns_when_the_daemon_runs_with_another_environment() {
    let mock = MockLlm::start().await;
    let env = chat_env(&mock, "");
    let started = env.run_agentctl(&["daemon", "start"]).await;
    assert_eq!(started.status.code(), Some(0), "{}", text(&started.stderr));
    let mut command = env.agentctl();
    command
        .args(["chat"])
        .env("ANTHROPIC_API_KEY", "another-key");
    let mut pty = Pty::spawn(command, COLS, ROWS);
    pty.expect("runs with other OPENAI_*, ANTHROPIC_* or AGENTD_* variables")
        .await;
    pty.expect("agentctl daemon restart").await;
    pty.expect("/help for commands").await;
    pty.expect("› ").await;
    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
    assert!(!pty.screen().contains("another-key"), "never a value");
}

#[tokio::test]
async fn control_sequences_from_the_model_never_reach_the_terminal_raw() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text("before \u{1b}]52;c;ZXZpbA==\u{7} after"));
    let env = chat_env(&mock, "");
    let mut pty = start_chat(&env, &["chat", "--model", "mock:\u{1b}[2Jmodel"]).await;
    pty.send("hello\r");
    pty.expect("before ^[]52;c;ZXZpbA==^G after").await;
    pty.send("/quit\r");
    pty.wait().await;
    let screen = pty.screen();
    assert!(!screen.contains("\u{1b}]52"), "{screen:?}");
    assert!(!screen.contains("\u{1b}[2J"), "{screen:?}");
}

#[tokio::test]
async fn an_at_mention_in_the_chat_attaches_the_file() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text("It says alpha."));
    let env = chat_env(&mock, "");
    std::fs::write(env.workspace().join("a.txt"), "alpha\n").unwrap();
    let mut pty = start_chat(&env, &["chat"]).await;
    pty.send("what is in @a.txt\r");
    pty.expect("It says alpha.").await;
    pty.expect(AFTER_RUN).await;
    let users = request_user_texts(Format::OpenAi, &mock.requests()[0]);
    assert_eq!(users, ["what is in @a.txt\n\n```a.txt\nalpha\n```"]);
    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}
