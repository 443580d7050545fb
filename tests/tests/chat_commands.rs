//! The chat's daily commands through a pseudo-terminal and a terminal emulator: `/context`
//! shows how full the model's context window is with the config's compaction limits (and the
//! after-run line a compact gauge), `/model` lists the configured providers' models,
//! `/permissions` the rules in force with the file of each.

use agentd_tests::harness::TestEnv;
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::pty::Pty;
use agentd_tests::scenario::config_toml;

/// Wide enough that no answer wraps.
const COLS: u16 = 200;
const ROWS: u16 = 40;

async fn start_chat(mock: &MockLlm, extra: &str) -> (TestEnv, Pty) {
    let env = TestEnv::new().config(&config_toml(mock, Format::OpenAi, extra));
    let mut command = env.agentctl();
    command.arg("chat");
    let mut pty = Pty::spawn(command, COLS, ROWS);
    pty.expect("/help for commands").await;
    pty.expect("› ").await;
    (env, pty)
}

#[tokio::test]
async fn context_shows_how_full_the_window_is_and_the_configs_limits() {
    let mock = MockLlm::start().await;
    // 32000 of the default 128k window: a quarter.
    mock.push(Reply::text("Hi.").usage(31_000, 1_000, 0));
    let (_env, mut pty) = start_chat(
        &mock,
        "[context]\nsoft_limit_percent = 40\nhard_limit_percent = 90\n",
    )
    .await;
    pty.send("/context\r");
    pty.wait_visible("the gauge before any run", |screen| {
        screen.contents().contains("context: no model call yet")
    })
    .await;
    pty.send("hello\r");
    pty.wait_visible("the after-run line's gauge", |screen| {
        screen.contents().contains(" out · ")
            && screen.contents().contains("context ██░░░░░░ 25% of 128k")
    })
    .await;
    pty.send("/context\r");
    let shown = pty
        .wait_visible("the context gauge", |screen| {
            screen
                .contents()
                .contains("25% · 32000 of 128k tokens at the last model call")
        })
        .await;
    let contents = shown.screen().contents();
    let bar = format!("context {}{} 25%", "█".repeat(10), "░".repeat(30));
    assert!(contents.contains(&bar), "{contents}");
    assert!(
        contents.contains("soft limit 40% (51k): old tool results are cleared")
            && contents.contains("hard limit 90% (115k): the older history is summarised"),
        "{contents}"
    );
    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}

#[tokio::test]
async fn model_without_a_name_lists_the_configured_models() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text("Hi."));
    let extra = format!(
        "default_provider = \"mock\"\n[providers.other]\nkind = \"openai\"\nbase_url = \"{}\"\n\
         api_key = \"k\"\nmodel = \"other-model\"\n",
        mock.openai_base_url()
    );
    let (_env, mut pty) = start_chat(&mock, &extra).await;
    // Before the first prompt: the model the next prompt's session gets is marked.
    pty.send("/model\r");
    let listed = pty
        .wait_visible("the models", |screen| {
            screen.contents().contains("other:other-model")
        })
        .await;
    let contents = listed.screen().contents();
    assert!(
        contents.contains("* mock:mock-model  (openai)"),
        "{contents}"
    );
    assert!(
        contents.contains("  other:other-model  (openai)"),
        "{contents}"
    );
    // In a session on the other model, that one is marked.
    pty.send("/model other:other-model\r");
    pty.expect("model other:other-model for the session").await;
    pty.send("hello\r");
    pty.expect(" out · ").await;
    pty.send("/model\r");
    pty.wait_visible("the session's model marked", |screen| {
        screen.contents().contains("* other:other-model  (openai)")
    })
    .await;
    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}

#[tokio::test]
async fn permissions_lists_the_rules_in_force_with_the_file_of_each() {
    let mock = MockLlm::start().await;
    let (env, mut pty) = start_chat(
        &mock,
        "[permissions]\nallow = [\"Bash(git log:*)\"]\ndeny = [\"Bash(rm -rf:*)\"]\n",
    )
    .await;
    pty.send("/permissions\r");
    let shown = pty
        .wait_visible("the rules", |screen| {
            screen.contents().contains("Bash(git log:*)")
        })
        .await;
    let contents = shown.screen().contents();
    let config = env.path("config").join("agentd").join("config.toml");
    let config = config.display();
    assert!(
        contents.contains(&format!("deny   Bash(rm -rf:*)   user  {config}")),
        "{contents}"
    );
    assert!(
        contents.contains(&format!("allow  Bash(git log:*)  user  {config}")),
        "{contents}"
    );
    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}
