//! What `agentctl chat` leaves on the screen of a run, through a pseudo-terminal and a
//! terminal emulator: colours by default and none under `NO_COLOR`, the answer's markdown
//! rendered, a shell command's last lines kept under its ✓ line once it ended, and `/expand`
//! showing the whole result of the last tool call.

use agentd_tests::harness::TestEnv;
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::pty::Pty;
use agentd_tests::scenario::config_toml;
use serde_json::json;

const COLS: u16 = 80;
const ROWS: u16 = 40;

/// The after-run line, the last thing a run writes (`tokens 10 in · 5 out · 1 step · 12 ms`).
const AFTER_RUN: &str = " out · ";

async fn start_chat(mock: &MockLlm, extra: &[(&str, &str)]) -> (TestEnv, Pty) {
    let env = TestEnv::new().config(&config_toml(mock, Format::OpenAi, ""));
    let mut command = env.agentctl();
    command.arg("chat").envs(extra.iter().copied());
    let mut pty = Pty::spawn(command, COLS, ROWS);
    pty.expect("/help for commands").await;
    pty.expect("› ").await;
    (env, pty)
}

/// The screen's rows, trailing spaces trimmed.
fn rows(screen: &vt100::Screen) -> Vec<String> {
    let (_, cols) = screen.size();
    screen
        .rows(0, cols.get())
        .map(|row| row.trim_end().to_owned())
        .collect()
}

fn has_row(screen: &vt100::Screen, row: &str) -> bool {
    rows(screen).iter().any(|shown| shown == row)
}

/// Whether `text` has an SGR sequence (a colour or a style).
fn has_styles(text: &str) -> bool {
    regex::Regex::new(r"\x1b\[[0-9;]*m")
        .expect("a regex")
        .is_match(text)
}

#[tokio::test]
async fn chat_colours_by_default_and_renders_the_markdown() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "true"}),
    ));
    mock.push(Reply::text("## Done\n\n- **one**\n- two\n"));
    let (_env, mut pty) = start_chat(&mock, &[]).await;
    pty.send("go\r");
    pty.expect(AFTER_RUN).await;
    let visible = pty
        .wait_visible("the rendered list", |screen| {
            has_row(screen, "• one") && has_row(screen, "## Done")
        })
        .await;
    let screen = pty.screen();
    assert!(screen.contains("\x1b[32m✓"), "a green ✓: {screen:?}");
    let rows = rows(visible.screen());
    let at = rows
        .iter()
        .position(|row| row == "• one")
        .expect("the item") as u16;
    assert!(
        visible.screen().cell(at, 2).is_some_and(|cell| cell.bold()),
        "**one** is bold"
    );
    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}

#[tokio::test]
async fn no_color_chat_has_no_styles_but_the_markdown_is_laid_out() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "true"}),
    ));
    mock.push(Reply::text("## Done\n\n- **one**\n- `two`\n"));
    let (_env, mut pty) = start_chat(&mock, &[("NO_COLOR", "1")]).await;
    pty.send("go\r");
    pty.expect(AFTER_RUN).await;
    pty.wait_visible("the rendered list", |screen| {
        has_row(screen, "• one") && has_row(screen, "• `two`")
    })
    .await;
    pty.send("/quit\r");
    // The chat's last words: everything before them has been read from the terminal.
    pty.expect("stays").await;
    assert_eq!(pty.wait().await.code(), Some(0));
    let screen = pty.screen();
    assert!(!has_styles(&screen), "{screen:?}");
}

#[tokio::test]
async fn a_shell_commands_last_lines_stay_on_screen_after_it_ends() {
    let mock = MockLlm::start().await;
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "seq 1 40; echo the last line"}),
    ));
    mock.push(Reply::text("Counted."));
    let (_env, mut pty) = start_chat(&mock, &[]).await;
    pty.send("count\r");
    pty.expect(AFTER_RUN).await;
    let visible = pty
        .wait_visible("the run's end", |screen| has_row(screen, "Counted."))
        .await;
    let screen = visible.screen();
    let rows = rows(screen);
    let done = rows
        .iter()
        .position(|row| row.starts_with("✓ run_shell: seq 1 40; echo the last line ("))
        .unwrap_or_else(|| panic!("the ✓ line: {rows:#?}"));
    assert_eq!(
        rows[done + 1..done + 7],
        [
            "  │ … 38 earlier lines",
            "  │ 39",
            "  │ 40",
            "  │ the last line",
            "  │ [exit code 0]",
            "Counted.",
        ],
        "{rows:#?}"
    );
    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}

#[tokio::test]
async fn expand_shows_the_whole_result_of_the_last_tool_call() {
    let mock = MockLlm::start().await;
    let (env, mut pty) = start_chat(&mock, &[]).await;
    let lines: String = (1..=20).map(|n| format!("entry number {n}\n")).collect();
    std::fs::write(env.workspace().join("list.txt"), lines).expect("write the file");
    mock.push(Reply::tool_call(
        "c1",
        "read_file",
        json!({"path": "list.txt"}),
    ));
    mock.push(Reply::text("Read it."));
    pty.send("read it\r");
    pty.expect(AFTER_RUN).await;
    let visible = pty
        .wait_visible("the run's end", |screen| has_row(screen, "Read it."))
        .await;
    let before = rows(visible.screen()).join("\n");
    assert!(before.contains("entry number 1"), "{before}");
    assert!(
        !before.contains("entry number 19"),
        "only the first rows: {before}"
    );

    pty.send("/expand\r");
    let visible = pty
        .wait_visible("the whole result", |screen| {
            rows(screen)
                .iter()
                .any(|row| row.contains("entry number 20"))
        })
        .await;
    let after = rows(visible.screen());
    let header = after
        .iter()
        .rposition(|row| row.starts_with("✓ read_file"))
        .unwrap_or_else(|| panic!("the result's header: {after:#?}"));
    let shown: Vec<&String> = after[header..]
        .iter()
        .filter(|row| row.contains("entry number "))
        .collect();
    assert_eq!(shown.len(), 20, "every line: {after:#?}");
    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}

#[tokio::test]
async fn a_resumed_chat_renders_the_replayed_answer_and_expands_its_last_result() {
    let mock = MockLlm::start().await;
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    let lines: String = (1..=12).map(|n| format!("entry number {n}\n")).collect();
    std::fs::write(env.workspace().join("list.txt"), lines).expect("write the file");
    mock.push(Reply::tool_call(
        "c1",
        "read_file",
        json!({"path": "list.txt"}),
    ));
    mock.push(Reply::text("It lists:\n\n- **twelve** entries\n- in order"));
    let output = env.run_agentctl(&["run", "read it"]).await;
    assert_eq!(output.status.code(), Some(0));

    let mut command = env.agentctl();
    command.args(["chat", "-c"]);
    let mut pty = Pty::spawn(command, COLS, ROWS);
    pty.expect("/help for commands").await;
    pty.wait_visible("the replayed answer rendered", |screen| {
        has_row(screen, "• twelve entries") && has_row(screen, "• in order")
    })
    .await;
    pty.send("/expand\r");
    let visible = pty
        .wait_visible("the earlier result whole", |screen| {
            rows(screen)
                .iter()
                .any(|row| row.contains("entry number 12"))
        })
        .await;
    let rows = rows(visible.screen());
    assert!(rows.iter().any(|row| row == "✓ read_file"), "{rows:#?}");
    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}
