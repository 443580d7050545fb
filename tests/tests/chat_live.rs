//! What `agentctl chat` shows while a run streams, through a pseudo-terminal and a terminal
//! emulator: the unfinished line of the answer as it comes, "thinking… Ns" until the model
//! answers, a running tool's elapsed time and output tail, all in a live area redrawn above the
//! prompt that never wraps and leaves nothing stale behind; a steer typed meanwhile still goes.

use agentd_tests::harness::TestEnv;
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::pty::Pty;
use agentd_tests::scenario::{config_toml, mkfifo, request_user_texts, write_fifo};
use serde_json::json;

/// The terminal the chat gets (rows enough that nothing scrolls away).
const COLS: u16 = 100;
const ROWS: u16 = 40;

/// The after-run line, the last thing a run writes (`tokens 10 in · 5 out · 1 step · 12 ms`).
const AFTER_RUN: &str = " out · ";

async fn start_chat(mock: &MockLlm, cols: u16) -> (TestEnv, Pty) {
    let env = TestEnv::new().config(&config_toml(mock, Format::OpenAi, ""));
    let mut command = env.agentctl();
    command.arg("chat");
    let mut pty = Pty::spawn(command, cols, ROWS);
    pty.expect("/help for commands").await;
    pty.expect("› ").await;
    (env, pty)
}

/// The screen's rows, as text.
fn rows(screen: &vt100::Screen) -> Vec<String> {
    let (_, cols) = screen.size();
    screen.rows(0, cols.get()).collect()
}

/// How many rows of the screen contain `text`.
fn rows_with(screen: &vt100::Screen, text: &str) -> usize {
    rows(screen).iter().filter(|row| row.contains(text)).count()
}

/// Some row contains `text`, and every such row fits (the terminal did not wrap it, and it
/// leaves the last column free).
fn fits(screen: &vt100::Screen, text: &str) -> bool {
    let (_, cols) = screen.size();
    let found: Vec<(u16, String)> = (0..)
        .zip(rows(screen))
        .filter(|(_, row)| row.contains(text))
        .collect();
    !found.is_empty()
        && found.iter().all(|(index, row)| {
            !screen.row_wrapped(*index) && row.chars().count() < usize::from(cols.get())
        })
}

/// `text` with its runs of whitespace made single spaces.
fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[tokio::test]
async fn the_unfinished_line_shows_while_it_streams_and_ends_up_once() {
    let mock = MockLlm::start().await;
    mock.push(Reply::held(
        "Hello wor",
        "ld, and the rest.\nSecond line.\n",
    ));
    let (_env, mut pty) = start_chat(&mock, COLS).await;

    pty.send("say hello\r");
    // Held after "Hello wor": no newline yet, the run not ended, and the half line is on the
    // screen.
    pty.wait_visible("the half line while the reply is held", |screen| {
        rows_with(screen, "Hello wor") == 1 && rows_with(screen, AFTER_RUN) == 0
    })
    .await;
    mock.release();
    pty.expect(AFTER_RUN).await;
    let visible = pty
        .wait_visible("the whole answer", |screen| {
            rows_with(screen, AFTER_RUN) == 1
        })
        .await;
    let screen = visible.screen();
    let contents = screen.contents();
    assert_eq!(
        rows_with(screen, "Hello world, and the rest."),
        1,
        "{contents}"
    );
    assert_eq!(
        rows_with(screen, "Hello wor"),
        1,
        "no stale half line: {contents}"
    );
    assert_eq!(rows_with(screen, "Second line."), 1, "{contents}");
    assert_eq!(rows_with(screen, "› say hello"), 1, "{contents}");
    // In order, then the after-run line (which no longer names the session), then the prompt.
    let after = &contents[contents.find("› say hello").expect("the prompt typed")..];
    let text_at = after.find("Hello world").expect("the answer");
    let second_at = after.find("Second line.").expect("its second line");
    let end_at = after.find(AFTER_RUN).expect("the after-run line");
    assert!(text_at < second_at && second_at < end_at, "{contents}");
    assert!(!contents.contains("session: ses_"), "{contents}");

    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}

#[tokio::test]
async fn thinking_shows_its_seconds_until_the_model_answers_then_goes() {
    let mock = MockLlm::start().await;
    mock.push(Reply::held("", "Thought it over."));
    let (_env, mut pty) = start_chat(&mock, COLS).await;

    pty.send("think first\r");
    // The seconds count up while the model has not answered.
    pty.wait_visible("thinking with its seconds", |screen| {
        rows_with(screen, "thinking… ") == 1
            && rows_with(screen, "s · Ctrl-C to cancel") == 1
            && rows_with(screen, "thinking… 0s") == 0
    })
    .await;
    mock.release();
    pty.expect(AFTER_RUN).await;
    let visible = pty
        .wait_visible("the answer without the thinking line", |screen| {
            rows_with(screen, "Thought it over.") == 1 && rows_with(screen, "thinking…") == 0
        })
        .await;
    assert_eq!(rows_with(visible.screen(), AFTER_RUN), 1);

    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}

#[tokio::test]
async fn a_running_shell_shows_its_output_tail_and_time_and_a_steer_still_goes() {
    let mock = MockLlm::start().await;
    let (env, mut pty) = start_chat(&mock, COLS).await;
    let gate = env.workspace().join("gate");
    mkfifo(&gate);
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": "echo line one; cat gate"}),
    ));
    mock.push(Reply::text("Steered."));

    pty.send("run it\r");
    pty.wait_visible("the tool with its time and output tail", |screen| {
        // `· 3s · 1 lines, …`: the seconds show once it ran a second.
        rows_with(screen, "run_shell: echo line one; cat gate · ") == 1
            && rows_with(screen, "s · 1 lines, 9 bytes of output: line one") == 1
    })
    .await;
    pty.send("use tabs\r");
    pty.wait_visible("the queued steer above the live rows", |screen| {
        rows_with(screen, "queued steer: use tabs") == 1
            && rows_with(screen, "run_shell: echo line one; cat gate · ") == 1
    })
    .await;
    write_fifo(&gate, "open\n").await;
    pty.expect("Steered.").await;
    pty.expect(AFTER_RUN).await;
    let visible = pty
        .wait_visible("the run's end", |screen| rows_with(screen, AFTER_RUN) == 1)
        .await;
    let screen = visible.screen();
    let contents = screen.contents();
    // The finished tool stays as one line; its live row is gone.
    assert_eq!(
        rows_with(screen, "✓ run_shell: echo line one; cat gate ("),
        1,
        "{contents}"
    );
    assert_eq!(
        rows_with(screen, "run_shell: echo line one; cat gate · "),
        0,
        "{contents}"
    );
    assert_eq!(rows_with(screen, "› use tabs"), 1, "{contents}");
    assert_eq!(rows_with(screen, "queued steer: use tabs"), 1, "{contents}");
    assert_eq!(
        rows_with(screen, "steer delivered: use tabs"),
        1,
        "{contents}"
    );
    let requests = mock.requests();
    let users = request_user_texts(Format::OpenAi, &requests[1]);
    assert_eq!(
        users.last().map(String::as_str),
        Some("use tabs"),
        "{users:?}"
    );

    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}

#[tokio::test]
async fn at_50_columns_live_rows_never_wrap_and_a_long_answer_comes_whole() {
    let mock = MockLlm::start().await;
    let (env, mut pty) = start_chat(&mock, 50).await;
    let gate = env.workspace().join("gate");
    mkfifo(&gate);
    let long_command = format!("echo {}; cat gate", "x".repeat(60));
    mock.push(Reply::tool_call(
        "c1",
        "run_shell",
        json!({"command": long_command}),
    ));
    let answer = "The quick brown fox jumps over the lazy dog while the run goes on, \
                  and on, and on, until the line is far wider than the pane.";
    let (first, rest) = answer.split_at(80);
    mock.push(Reply::held(first, format!("{rest}\n")));

    pty.send("go\r");
    pty.wait_visible("the tool's row cut to the width", |screen| {
        fits(screen, "run_shell: echo xxx")
    })
    .await;
    write_fifo(&gate, "open\n").await;
    // Held mid-line: every row of the half answer fits.
    pty.wait_visible("the half answer in rows that fit", |screen| {
        fits(screen, "The quick brown fox")
            && fits(screen, "lazy dog")
            && rows_with(screen, AFTER_RUN) == 0
    })
    .await;
    mock.release();
    pty.expect(AFTER_RUN).await;
    let visible = pty
        .wait_visible("the run's end", |screen| rows_with(screen, AFTER_RUN) == 1)
        .await;
    let screen = visible.screen();
    let contents = screen.contents();
    // The answer is all there, once, in order: its rows joined give it back (rows the
    // terminal wrapped join without a space; the live rows that grew too wide were cut
    // between words).
    let rows = rows(screen);
    let start = rows
        .iter()
        .position(|row| row.starts_with("The quick brown fox"))
        .expect("the answer's first row");
    let end = rows
        .iter()
        .position(|row| row.ends_with("wider than the pane."))
        .expect("the answer's last row");
    let mut joined = String::new();
    for (index, row) in (0..).zip(&rows).take(end + 1).skip(start) {
        joined.push_str(row);
        if !screen.row_wrapped(index) {
            joined.push(' ');
        }
    }
    assert_eq!(words(&joined), words(answer), "{contents}");
    assert_eq!(rows_with(screen, "The quick brown fox"), 1, "{contents}");

    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}
