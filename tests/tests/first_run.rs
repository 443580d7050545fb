//! A run that finds no provider because the daemon started before this shell's provider
//! variables were set: off a terminal agentctl says what to run (the variables by name, never a
//! value); on one it offers to restart the daemon with them and, on yes, the run goes on.

use agentd_tests::harness::{TestEnv, text};
use agentd_tests::mock_llm::{MockLlm, Reply};
use agentd_tests::pty::Pty;

/// A daemon started with no provider at all (no config, no variables).
async fn keyless_daemon() -> TestEnv {
    let env = TestEnv::new().config("[permissions]\ndefault_mode = \"bypass\"\n");
    let started = env.run_agentctl(&["daemon", "start"]).await;
    assert_eq!(started.status.code(), Some(0), "{}", text(&started.stderr));
    env
}

/// `agentctl run hello` on a terminal with this shell's provider variables, once it asks.
async fn run_asking_to_restart(env: &TestEnv, mock: &MockLlm) -> Pty {
    let mut command = env.agentctl();
    command
        .args(["run", "hello"])
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", mock.openai_base_url());
    let mut pty = Pty::spawn(command, 120, 30);
    pty.expect("Restart it with them? [y/N]").await;
    pty
}

#[tokio::test]
async fn off_a_terminal_a_run_without_a_provider_names_the_variables_and_the_restart() {
    let mock = MockLlm::start().await;
    let env = keyless_daemon().await;
    let run = env
        .agentctl()
        .args(["run", "hello"])
        .env("OPENAI_API_KEY", "sk-secret-value")
        .env("OPENAI_BASE_URL", mock.openai_base_url())
        .output()
        .await
        .expect("run agentctl");
    let stderr = text(&run.stderr);
    assert_ne!(run.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("no provider configured"), "{stderr}");
    assert!(
        stderr.contains("started without this shell's ")
            && stderr
                .contains("OPENAI_API_KEY, OPENAI_BASE_URL, which it reads only when it starts")
            && stderr.contains("run `agentctl daemon restart` in this shell"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("sk-secret-value"),
        "never a value: {stderr}"
    );
    assert_eq!(mock.requests().len(), 0, "no model call without a provider");
}

#[tokio::test]
async fn on_a_terminal_yes_restarts_the_daemon_with_this_shell_and_the_run_goes_on() {
    let mock = MockLlm::start().await;
    mock.push(Reply::text("Answered after the restart."));
    let env = keyless_daemon().await;
    let mut pty = run_asking_to_restart(&env, &mock).await;
    pty.send("y\r");
    pty.expect("agentd restarted (pid").await;
    pty.expect("Answered after the restart.").await;
    assert_eq!(pty.wait().await.code(), Some(0), "{}", pty.screen());
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn on_a_terminal_no_leaves_the_daemon_as_it_is() {
    let mock = MockLlm::start().await;
    let env = keyless_daemon().await;
    let before = env.run_agentctl(&["--json", "daemon", "status"]).await;
    let before: serde_json::Value = serde_json::from_slice(&before.stdout).expect("json");
    let mut pty = run_asking_to_restart(&env, &mock).await;
    pty.send("n\r");
    pty.expect("no provider configured").await;
    assert_ne!(pty.wait().await.code(), Some(0), "{}", pty.screen());
    let after = env.run_agentctl(&["--json", "daemon", "status"]).await;
    let after: serde_json::Value = serde_json::from_slice(&after.stdout).expect("json");
    assert_eq!(before["pid"], after["pid"], "not restarted");
    assert_eq!(mock.requests().len(), 0);
}
