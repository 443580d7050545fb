//! The daemon process and its state are private to it: tools cannot read the daemon's memory or
//! environment (where the provider keys are), and no other user can read its transcripts, logs
//! or process records, whatever the umask.

use agentd_tests::harness::{Daemon, TestEnv, binary};
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::scenario::*;
use protocol::event::RunStatus;
use serde_json::json;

/// A scenario whose daemon starts from `env` (configured against a fresh mock here).
async fn scenario_in(env: TestEnv, format: Format) -> Scenario {
    let mock = MockLlm::start().await;
    let env = env.config(&config_toml(&mock, format, ""));
    Scenario {
        daemon: Daemon::start_in(env).await,
        mock,
        format,
    }
}

/// `tr '\0' '\n' < /proc/$PPID/environ` printed the provider key; now the daemon is not
/// dumpable, so its environment, memory map and memory are closed to its tools, and it leaves
/// no core file.
#[tokio::test]
async fn a_tool_cannot_read_the_daemons_environment_or_memory() {
    let secret = "sk-harden-test-0123456789";
    let s = scenario_in(
        TestEnv::new().var("AGENTD_TEST_SECRET", secret),
        Format::OpenAi,
    )
    .await;
    let pid = s.daemon.pid();
    // The daemon's pid, not `$PPID`: the shell's parent need not be the daemon itself.
    let command = format!(
        "tr '\\0' '\\n' < /proc/{pid}/environ; cat /proc/{pid}/maps; \
         head -c 4096 /proc/{pid}/mem | tr -cd '[:print:]'; echo; echo shell-ran"
    );
    s.mock.push(Reply::tool_call(
        "c_env",
        "run_shell",
        json!({ "command": command }),
    ));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "look at your parent").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let results = tool_results(&events);
    let (_, output, _) = &results[0];
    assert!(output.contains("shell-ran"), "{output}");
    assert!(!output.contains(secret), "the key leaked:\n{output}");
    let exe = binary("agentd").display().to_string();
    assert!(!output.contains(&exe), "the memory map leaked:\n{output}");

    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let core = limits
        .lines()
        .find(|line| line.starts_with("Max core file size"))
        .unwrap_or_else(|| panic!("no core limit in:\n{limits}"));
    let values: Vec<&str> = core.split_whitespace().skip(4).take(2).collect();
    assert_eq!(values, ["0", "0"], "{core}");
}
