//! The daemon process and its state are private to it: tools cannot read the daemon's memory or
//! environment (where the provider keys are), and no other user can read its transcripts, logs
//! or process records, whatever the umask.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use agentd_tests::harness::{Daemon, TestEnv, binary};
use agentd_tests::mock_llm::{Format, MockLlm, Reply};
use agentd_tests::scenario::*;
use protocol::event::{Event, RunStatus};
use serde_json::json;

/// The permission bits of `path` in octal (symlinks followed).
fn mode(path: &Path) -> String {
    let mode = std::fs::metadata(path)
        .unwrap_or_else(|err| panic!("stat {}: {err}", path.display()))
        .permissions()
        .mode();
    format!("{:o}", mode & 0o7777)
}

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

/// Under umask 022 the state dir, sessions dir and process records dir are 0700 and session
/// files, the index, logs and process records 0600; a state dir an older daemon left 0755 is
/// tightened.
#[tokio::test]
async fn state_is_private_whatever_the_umask() {
    let env = TestEnv::new().umask(0o022);
    let state = env.path("state").join("agentd");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut s = scenario_in(env, Format::Anthropic).await;
    let gate = s.workspace().join("gate.fifo");
    mkfifo(&gate);
    s.mock.push(Reply::tool_call(
        "c_wait",
        "run_shell",
        json!({"command": "cat gate.fifo"}),
    ));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "wait").await;
    let mut events = client
        .persisted_events_until(|event| matches!(event, Event::ToolStarted { .. }))
        .await;
    // The shell's group is recorded while it runs.
    let records = state.join("processes");
    let record = || {
        std::fs::read_dir(&records)
            .ok()?
            .flatten()
            .map(|entry| entry.path())
            .next()
    };
    wait_until("the process record", || record().is_some()).await;
    let record = record().unwrap();
    assert_eq!(mode(&record), "600", "{}", record.display());
    write_fifo(&gate, "go\n").await;
    events.extend(client.events_until_run_finished().await);
    assert_eq!(run_status(&events), RunStatus::Completed);

    s.daemon.signal(libc::SIGTERM);
    assert!(s.daemon.wait_exit().await.success());
    for dir in [&state, &state.join("sessions"), &records] {
        assert_eq!(mode(dir), "700", "{}", dir.display());
    }
    let session_file = session_file(&s.daemon.env, &session);
    assert_eq!(mode(&session_file), "600");
    let index = state.join("sessions").join("index.json");
    assert_eq!(mode(&index), "600");
    let logs: Vec<_> = std::fs::read_dir(&state)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "log"))
        .collect();
    assert!(!logs.is_empty(), "no log file in {}", state.display());
    for log in logs {
        assert_eq!(mode(&log), "600", "{}", log.display());
    }
}

/// `$XDG_DATA_HOME/agentd` (the user's memory stores) is made 0700 at startup under umask
/// 022, and one left 0755 by an older daemon is tightened.
#[tokio::test]
async fn the_data_dir_is_private_whatever_the_umask() {
    let env = TestEnv::new().umask(0o022);
    let data = env.path("data").join("agentd");
    let daemon = Daemon::start_in(env).await;
    assert_eq!(mode(&data), "700", "{}", data.display());
    drop(daemon);

    let env = TestEnv::new().umask(0o022);
    let data = env.path("data").join("agentd");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let daemon = Daemon::start_in(env).await;
    assert_eq!(mode(&data), "700", "{}", data.display());
    drop(daemon);
}
