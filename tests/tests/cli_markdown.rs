//! The answer's markdown as `agentctl run` shows it: rendered for a terminal (headings, lists,
//! a code block with syntax colours, an aligned table) on a pseudo-terminal read through a
//! terminal emulator, without a single style under `NO_COLOR`, and exactly as the model wrote
//! it when stdout is a pipe.

use agentd_tests::harness::{TestEnv, text};
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::pty::Pty;
use agentd_tests::scenario::config_toml;
use expect_test::expect;

/// The terminal `run` gets (rows enough that nothing scrolls away).
const COLS: u16 = 60;
const ROWS: u16 = 45;

/// An answer with a heading, emphasis, a nested and a numbered list and a code block.
const ANSWER: &str = "# The plan\n\nChange **two** files, then run `make check`.\n\n\
    ## Steps\n\n- edit `main.rs`\n  - keep the tests\n- edit `lib.rs`\n\n\
    1. build\n2. test\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\nThat is all.";

/// `agentctl ARGS` on a pseudo-terminal with `extra` variables, to its exit: the terminal.
async fn run_on_terminal(env: &TestEnv, extra: &[(&str, &str)], args: &[&str]) -> Pty {
    let mut command = env.agentctl();
    command.args(args).envs(extra.iter().copied());
    let mut pty = Pty::spawn(command, COLS, ROWS);
    // The last line: everything before it has been read from the terminal.
    pty.expect("session: ses_").await;
    let status = pty.wait().await;
    assert_eq!(status.code(), Some(0), "{}", pty.screen());
    pty
}

/// The screen's rows above the after-run line (`tokens …`), which holds timings and ids.
fn answer_rows(screen: &vt100::Screen) -> Vec<String> {
    let (_, cols) = screen.size();
    screen
        .rows(0, cols.get())
        .take_while(|row| !row.starts_with("tokens "))
        .map(|row| row.trim_end().to_owned())
        .collect()
}

/// Whether `text` has an SGR sequence (a colour or a style).
fn has_styles(text: &str) -> bool {
    regex::Regex::new(r"\x1b\[[0-9;]*m")
        .expect("a regex")
        .is_match(text)
}

#[tokio::test]
async fn headings_lists_and_a_code_block_are_rendered_for_the_terminal() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text(ANSWER).fragmented());
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    let pty = run_on_terminal(&env, &[], &["run", "plan it"]).await;
    let parser = pty.visible();
    let screen = parser.screen();
    expect![[r#"
        # The plan

        Change two files, then run make check.

        ## Steps

        • edit main.rs
          ◦ keep the tests
        • edit lib.rs

        1. build
        2. test

        ```rust
        fn main() {
            println!("hi");
        }
        ```

        That is all."#]]
    .assert_eq(&answer_rows(screen).join("\n"));
    // Styled, not only laid out: the heading and the strong word are bold, the code coloured.
    let bold = |row: u16, col: u16| screen.cell(row, col).is_some_and(|cell| cell.bold());
    assert!(bold(0, 2), "the heading's text");
    assert!(bold(2, 7), "**two**");
    assert!(!bold(2, 0), "the plain text around it");
    let code_row = answer_rows(screen)
        .iter()
        .position(|row| row == "fn main() {")
        .expect("the code") as u16;
    let color = screen.cell(code_row, 0).map(|cell| cell.fgcolor());
    assert!(
        color.is_some_and(|color| color != vt100::Color::Default),
        "the keyword `fn` is coloured: {color:?}"
    );
}

#[tokio::test]
async fn a_table_is_aligned_by_display_width() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text(
        "Sizes:\n\n| file | lines | kind |\n|:-----|------:|:----:|\n| main.rs | 120 | bin |\n\
         | 日本.rs | 7 | library |\n\nSee above.",
    ));
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    let pty = run_on_terminal(&env, &[], &["run", "sizes"]).await;
    expect![[r#"
        Sizes:

        file    │ lines │  kind
        ────────┼───────┼────────
        main.rs │   120 │   bin
        日本.rs │     7 │ library

        See above."#]]
    .assert_eq(&answer_rows(pty.visible().screen()).join("\n"));
}

#[tokio::test]
async fn no_color_renders_the_markdown_without_a_single_style() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text(ANSWER));
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    let pty = run_on_terminal(&env, &[("NO_COLOR", "1")], &["run", "plan it"]).await;
    let screen = pty.screen();
    assert!(!has_styles(&screen), "{screen:?}");
    // Still rendered: bullets, inline code kept in backticks.
    let rows = answer_rows(pty.visible().screen());
    assert!(
        rows.iter().any(|row| row == "• edit `main.rs`"),
        "{rows:#?}"
    );
    // `--color never` the same.
    mock.push(Reply::text(ANSWER));
    let pty = run_on_terminal(&env, &[], &["--color", "never", "run", "plan it"]).await;
    assert!(!has_styles(&pty.screen()), "{:?}", pty.screen());
}

#[tokio::test]
async fn run_piped_prints_the_markdown_raw_without_escape_sequences() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text(ANSWER).fragmented());
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    let output = env.run_agentctl(&["run", "plan it"]).await;
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stdout,
        format!("{ANSWER}\n"),
        "exactly what the model wrote"
    );
    assert!(
        !stdout.contains('\x1b') && !stderr.contains('\x1b'),
        "{stderr:?}"
    );
}
