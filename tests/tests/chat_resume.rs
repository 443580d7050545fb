//! Choosing a session to resume, through a pseudo-terminal and a terminal emulator: `chat
//! --resume` picks one with the arrows and Enter and the chat then shows its last turn and
//! goes on in it; `/resume` inside a chat filters by typed text, Esc cancels, Tab shows every
//! directory's sessions; `--resume` off a terminal says what to use instead. And `/init`: the
//! mock model, given the init prompt, writes AGENTS.md with write_file (approved: the notes
//! file is always asked); a second `/init` asks to improve the file; `agentctl init` is the same
//! run from the command line.

use agentd_tests::harness::{TestEnv, text};
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::pty::Pty;
use agentd_tests::scenario::{config_toml, request_user_texts};
use serde_json::json;

const COLS: u16 = 120;
const ROWS: u16 = 30;

/// The after-run line, the last thing a run writes.
const AFTER_RUN: &str = " out · ";

/// `agentctl run PROMPT` (in `cwd`, else the workspace) to its end: the session's id.
async fn session_with(env: &TestEnv, prompt: &str, cwd: Option<&std::path::Path>) -> String {
    let mut args = vec!["--json", "run"];
    let cwd = cwd.map(|cwd| cwd.display().to_string());
    if let Some(cwd) = &cwd {
        args.extend(["--cwd", cwd.as_str()]);
    }
    args.push(prompt);
    let output = env.run_agentctl(&args).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let last = text(&output.stdout)
        .lines()
        .last()
        .map(str::to_owned)
        .expect("a result line");
    let result: serde_json::Value = serde_json::from_str(&last).expect("the result object");
    result["sessionId"]
        .as_str()
        .expect("a session id")
        .to_owned()
}

/// The screen's row that holds `needle`, if any.
fn row_with(screen: &vt100::Screen, needle: &str) -> Option<String> {
    screen
        .contents()
        .lines()
        .find(|line| line.contains(needle))
        .map(str::to_owned)
}

/// Whether the picker shows `needle`'s row as the selected one.
fn selected(screen: &vt100::Screen, needle: &str) -> bool {
    row_with(screen, needle).is_some_and(|row| row.starts_with("› "))
}

#[tokio::test]
async fn chat_resume_picks_a_session_with_the_arrows_and_shows_its_last_turn() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text("Alpha answer."));
    mock.push(Reply::text("Beta answer."));
    mock.push(Reply::text("Back in it."));
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    let alpha = session_with(&env, "alpha prompt", None).await;
    let beta = session_with(&env, "beta prompt", None).await;

    let mut command = env.agentctl();
    command.args(["chat", "--resume"]);
    let mut pty = Pty::spawn(command, COLS, ROWS);
    let shown = pty
        .wait_visible("the picker", |screen| {
            row_with(screen, "alpha prompt").is_some() && row_with(screen, "beta prompt").is_some()
        })
        .await;
    let contents = shown.screen().contents();
    assert!(
        contents.contains("resume a session · this directory (Tab: all directories)"),
        "{contents}"
    );
    let beta_row = row_with(shown.screen(), "beta prompt").expect("beta's row");
    assert!(beta_row.contains(" tok  beta prompt"), "{beta_row}");
    // Both were used within the same second: either may be first. Down selects the other.
    let (first, other, other_id, other_answer, first_answer) =
        if selected(shown.screen(), "beta prompt") {
            (
                "beta prompt",
                "alpha prompt",
                &alpha,
                "Alpha answer.",
                "Beta answer.",
            )
        } else {
            (
                "alpha prompt",
                "beta prompt",
                &beta,
                "Beta answer.",
                "Alpha answer.",
            )
        };
    assert!(selected(shown.screen(), first), "{contents}");
    pty.send("\x1b[B");
    pty.wait_visible("the other selected", |screen| {
        selected(screen, other) && !selected(screen, first)
    })
    .await;
    pty.send("\r");
    pty.expect(&format!(
        "session {other_id} · mock-model · bypass · {other}"
    ))
    .await;
    pty.wait_visible("its last turn", |screen| {
        let contents = screen.contents();
        contents.contains(&format!("› {other}"))
            && contents.contains(other_answer)
            && !contents.contains(first_answer)
            && !contents.contains("resume a session")
    })
    .await;
    pty.expect("› ").await;
    pty.send("again\r");
    pty.expect("Back in it.").await;
    pty.expect(AFTER_RUN).await;
    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
    let requests = mock.requests();
    let users = request_user_texts(Format::OpenAi, requests.last().expect("a request"));
    assert_eq!(users, [other, "again"]);
}

#[tokio::test]
async fn resume_in_the_chat_filters_by_text_cancels_with_esc_and_tab_shows_every_directory() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text("Alpha answer."));
    mock.push(Reply::text("Beta answer."));
    mock.push(Reply::text("Gamma answer."));
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    let elsewhere = env.path("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    session_with(&env, "alpha prompt", None).await;
    session_with(&env, "beta prompt", None).await;
    let gamma = session_with(&env, "gamma far away", Some(&elsewhere)).await;

    let mut command = env.agentctl();
    command.arg("chat");
    let mut pty = Pty::spawn(command, COLS, ROWS);
    pty.expect("/help for commands").await;
    pty.expect("› ").await;
    pty.send("/resume\r");
    let shown = pty
        .wait_visible("this directory's sessions", |screen| {
            row_with(screen, "alpha prompt").is_some() && row_with(screen, "beta prompt").is_some()
        })
        .await;
    assert!(row_with(shown.screen(), "gamma far away").is_none());
    // Typing filters: beta's row goes.
    pty.send("alp");
    pty.wait_visible("the filtered list", |screen| {
        screen.contents().contains("filter: alp")
            && selected(screen, "alpha prompt")
            && row_with(screen, "beta prompt").is_none()
    })
    .await;
    // Esc cancels: the picker is gone and the chat goes on without a session.
    pty.send("\x1b");
    pty.wait_visible("the picker cancelled", |screen| {
        let contents = screen.contents();
        contents.contains("(no session chosen)") && !contents.contains("resume a session")
    })
    .await;
    pty.send("/resume\r");
    pty.wait_visible("the picker again", |screen| {
        screen
            .contents()
            .contains("resume a session · this directory")
    })
    .await;
    // Tab: every directory's sessions; the filter finds gamma's.
    pty.send("\t");
    pty.wait_visible("every directory", |screen| {
        screen
            .contents()
            .contains("resume a session · all directories (Tab: this directory)")
            && row_with(screen, "gamma far away").is_some()
    })
    .await;
    pty.send("gamma");
    pty.wait_visible("gamma selected", |screen| {
        selected(screen, "gamma far away")
    })
    .await;
    pty.send("\r");
    pty.expect(&format!("session {gamma} · ")).await;
    pty.wait_visible("gamma's last turn", |screen| {
        screen.contents().contains("Gamma answer.")
    })
    .await;
    pty.send("/quit\r");
    pty.expect(&format!("session {gamma} stays")).await;
    assert_eq!(pty.wait().await.code(), Some(0));
}

#[tokio::test]
async fn resume_off_a_terminal_says_to_use_a_session_id() {
    let mock = MockLlm::start().await;
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    let output = env.run_agentctl(&["chat", "--resume"]).await;
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("--resume picks a session on a terminal, and stdin or stdout is not one;")
            && stderr.contains("`agentctl sessions list` shows the sessions")
            && stderr.contains("--session ID"),
        "{stderr}"
    );
    // Refused before starting a daemon.
    assert!(!env.socket.exists());
}

#[tokio::test]
async fn init_has_the_model_write_agents_md_and_a_second_init_improves_it() {
    let mock = MockLlm::start().await;
    let notes = "# AGENTS.md\n\nBuild: `cargo build`\n";
    mock.push(Reply::tool_call(
        "call_1",
        "write_file",
        json!({"path": "AGENTS.md", "content": notes}),
    ));
    mock.push(Reply::text("Wrote AGENTS.md."));
    mock.push(Reply::text("It is still right."));
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    let mut command = env.agentctl();
    command.arg("chat");
    let mut pty = Pty::spawn(command, COLS, ROWS);
    pty.expect("/help for commands").await;
    pty.expect("› ").await;
    pty.send("/init\r");
    // AGENTS.md is read into every prompt: each write of it is asked, whatever the mode.
    pty.expect("approval needed: write_file AGENTS.md").await;
    pty.expect("› ").await;
    pty.send("y\r");
    pty.expect("Wrote AGENTS.md.").await;
    pty.expect(AFTER_RUN).await;
    let written = std::fs::read_to_string(env.workspace().join("AGENTS.md")).unwrap();
    assert_eq!(written, notes);
    let requests = mock.requests();
    let first = request_user_texts(Format::OpenAi, &requests[0]);
    assert!(
        first.len() == 1
            && first[0].starts_with("Write an AGENTS.md at the root of this workspace")
            && first[0].contains("build, test, lint"),
        "{first:?}"
    );
    pty.send("/init keep it short\r");
    pty.expect("It is still right.").await;
    pty.expect(AFTER_RUN).await;
    let requests = mock.requests();
    let users = request_user_texts(Format::OpenAi, requests.last().expect("a request"));
    let second = users.last().expect("the second prompt");
    assert!(
        second.contains("This workspace has an AGENTS.md")
            && second.contains("improve AGENTS.md rather than replace it")
            && second.ends_with("The user adds: keep it short"),
        "{second}"
    );
    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}

#[tokio::test]
async fn agentctl_init_is_the_init_run_and_its_write_is_asked_of_a_person() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_call(
        "call_1",
        "write_file",
        json!({"path": "AGENTS.md", "content": "# Notes\n"}),
    ));
    mock.push(Reply::text("Could not."));
    mock.push(Reply::tool_call(
        "call_2",
        "write_file",
        json!({"path": "AGENTS.md", "content": "# Notes\n"}),
    ));
    mock.push(Reply::text("Done."));
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    // Off a terminal no policy answers the write of AGENTS.md, and the note says so.
    let output = env.run_agentctl(&["init", "--approve", "all"]).await;
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("it is asked of a person every time"),
        "{stderr}"
    );
    assert!(!env.workspace().join("AGENTS.md").exists());
    // On a terminal the person answers it with one key.
    let mut command = env.agentctl();
    command.args(["init", "name", "the", "linter"]);
    let mut pty = Pty::spawn(command, COLS, ROWS);
    pty.expect("write_file AGENTS.md").await;
    pty.send("y");
    pty.expect("Done.").await;
    assert_eq!(pty.wait().await.code(), Some(0));
    let written = std::fs::read_to_string(env.workspace().join("AGENTS.md")).unwrap();
    assert_eq!(written, "# Notes\n");
    let requests = mock.requests();
    let users = request_user_texts(Format::OpenAi, requests.last().expect("a request"));
    assert!(
        users[0].starts_with("Write an AGENTS.md")
            && users[0].ends_with("The user adds: name the linter"),
        "{users:?}"
    );
}
