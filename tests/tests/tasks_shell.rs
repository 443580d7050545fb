//! Background shell tasks seen from outside: `run_shell {runInBackground: true}` answers at
//! once with the task id and how to read the output, and the command (with everything it
//! started) dies with the session that started it, with the daemon's stop, and with a
//! killed daemon once it restarts.

use agentd_tests::harness::Client;
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use protocol::event::{Event, RunStatus, SessionEventEnvelope as Envelope};
use protocol::task::{TaskInfo, TaskKind, TaskStatus};
use serde_json::json;

/// A command that starts a long sleep in its group, writes the sleep's pid and waits.
const SLEEPER: &str = "sleep 300 & echo $! > sleeper.tmp; mv sleeper.tmp sleeper.pid; wait";

/// The pid the command wrote to `name` in the workspace (the outside world: polled, with the
/// scenario's deadline).
async fn pid_file(s: &Scenario, name: &str) -> i32 {
    let path = s.workspace().join(name);
    wait_until(&format!("the pid file {name}"), || path.exists()).await;
    std::fs::read_to_string(&path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Runs one turn in which the model starts `command` in the background; returns the client,
/// the session and the tool result.
async fn start_in_background(s: &Scenario, command: &str) -> (Client, String, String) {
    let (client, session, output, _) = start_in_background_seen(s, command).await;
    (client, session, output)
}

/// [`start_in_background`], with the events seen until the run finished.
async fn start_in_background_seen(
    s: &Scenario,
    command: &str,
) -> (Client, String, String, Vec<Envelope>) {
    s.mock.push(Reply::tool_call(
        "c_bg",
        "run_shell",
        json!({"command": command, "runInBackground": true}),
    ));
    s.mock.push(Reply::text("started it"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "start it in the background").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed, "{events:#?}");
    let results = tool_results(&events);
    let (_, output, is_error) = results
        .iter()
        .find(|(call, _, _)| call == "c_bg")
        .unwrap_or_else(|| panic!("no result for c_bg: {results:#?}"))
        .clone();
    assert!(!is_error, "{output}");
    (client, session, output, events)
}

/// The task's `taskFinished` on the session's stream: among `seen`, else the next ones.
async fn task_finished(client: &mut Client, seen: &[Envelope]) -> TaskInfo {
    let finished = |event: &Event| match event {
        Event::TaskFinished { task } => Some((**task).clone()),
        _ => None,
    };
    if let Some(task) = seen.iter().find_map(|envelope| finished(&envelope.event)) {
        return task;
    }
    let events = client
        .persisted_events_until(|event| matches!(event, Event::TaskFinished { .. }))
        .await;
    events
        .iter()
        .find_map(|envelope| finished(&envelope.event))
        .expect("a taskFinished event")
}

/// The task id the tool result names.
fn task_id_in(output: &str) -> &str {
    let start = output.find("task_").expect("a task id in the result");
    let id = &output[start..];
    &id[..id.find(':').expect("the id ends with a colon")]
}

/// The task's record in the daemon's state dir (read once the daemon has exited).
fn record_of(s: &Scenario, task_id: &str) -> TaskInfo {
    let path = s
        .daemon
        .env
        .path("state")
        .join("agentd")
        .join("tasks")
        .join(format!("{task_id}.json"));
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("{err}: {text}"))
}

/// The task's output file in the daemon's state dir.
fn output_file(s: &Scenario, task_id: &str) -> String {
    let path = s
        .daemon
        .env
        .path("state")
        .join("agentd")
        .join("tasks")
        .join(format!("{task_id}.out"));
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The output and the exit code land in the task, announced by `taskFinished`.
#[tokio::test]
async fn the_output_and_exit_code_land_in_the_task() {
    let s = Scenario::start(Format::OpenAi).await;
    let (mut client, _session, output, seen) =
        start_in_background_seen(&s, "echo to-out; echo to-err >&2; exit 3").await;
    let task = task_finished(&mut client, &seen).await;
    assert!(output.contains(&task.task_id), "{output}");
    assert_eq!(task.kind, TaskKind::Shell);
    assert_eq!(task.status, TaskStatus::Failed);
    assert_eq!(task.exit_code, Some(3));
    assert_eq!(task.result.as_deref(), Some("exited with code 3"));
    let mut lines: Vec<String> = output_file(&s, &task.task_id)
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort_unstable();
    assert_eq!(lines, ["to-err", "to-out"]);
}

/// Past `[tasks] shell_output_max_bytes` the file keeps the head and the latest tail, with a
/// marker of what was cut; exit 0 is `completed`.
#[tokio::test]
async fn the_output_cap_keeps_head_and_tail() {
    let s = Scenario::start_with(Format::OpenAi, "[tasks]\nshell_output_max_bytes = 4096\n").await;
    let (mut client, _session, _, seen) =
        start_in_background_seen(&s, "echo BEGIN; seq 1 300000; echo END").await;
    let task = task_finished(&mut client, &seen).await;
    assert_eq!(task.status, TaskStatus::Completed);
    assert_eq!(task.exit_code, Some(0));
    let text = output_file(&s, &task.task_id);
    assert!(text.starts_with("BEGIN\n1\n2\n"), "{text}");
    assert!(text.ends_with("299999\n300000\nEND\n"), "{text}");
    assert!(text.contains("bytes omitted …]"), "{text}");
    assert!(text.len() < 4300, "{} bytes", text.len());
}

/// The call returns while the command still runs, with the task id and the tools that read
/// its output and stop it.
#[tokio::test]
async fn the_tool_returns_at_once_with_the_task_id_and_how_to_read_the_output() {
    let s = Scenario::start(Format::OpenAi).await;
    let (mut client, session, output) = start_in_background(&s, SLEEPER).await;
    assert!(
        output.starts_with("started background task task_"),
        "{output}"
    );
    assert!(output.contains("task_output"), "{output}");
    assert!(output.contains("task_stop"), "{output}");
    let pid = pid_file(&s, "sleeper.pid").await;
    assert!(!process_gone(pid), "the command ended with the call");
    client
        .request("session/delete", json!({"sessionId": session}))
        .await
        .expect("session/delete");
    wait_until("the background sleep to be killed", || process_gone(pid)).await;
}

/// Deleting the session kills its background command and what the command started.
#[tokio::test]
async fn deleting_the_session_kills_its_background_command() {
    let s = Scenario::start(Format::OpenAi).await;
    let (mut client, session, _) = start_in_background(&s, SLEEPER).await;
    let pid = pid_file(&s, "sleeper.pid").await;
    assert!(!process_gone(pid));
    let mut watcher = s.client().await;
    watcher
        .request("daemon/subscribe", json!({}))
        .await
        .expect("daemon/subscribe");
    client
        .request("session/delete", json!({"sessionId": session}))
        .await
        .expect("session/delete");
    let task = loop {
        let envelope = watcher.next_daemon_event().await;
        if let Event::TaskFinished { task } = envelope.event {
            break task;
        }
    };
    assert_eq!(task.status, TaskStatus::Cancelled);
    assert_eq!(task.parent_session_id.as_deref(), Some(session.as_str()));
    wait_until("the background sleep to be killed", || process_gone(pid)).await;
}

/// The daemon's stop (SIGTERM) kills every background command, records it `interrupted` (not
/// `cancelled`: nobody stopped it), and the daemon still exits 0.
#[tokio::test]
async fn daemon_shutdown_kills_background_commands() {
    let mut s = Scenario::start(Format::OpenAi).await;
    let (client, _session, output) = start_in_background(&s, SLEEPER).await;
    let pid = pid_file(&s, "sleeper.pid").await;
    s.daemon.signal(libc::SIGTERM);
    let status = s.daemon.wait_exit().await;
    assert!(status.success(), "{status}");
    drop(client);
    wait_until("the background sleep to be killed", || process_gone(pid)).await;
    // Recorded before the daemon exited, not left for the next start to find.
    let task = record_of(&s, task_id_in(&output));
    assert_eq!(task.status, TaskStatus::Interrupted, "{task:#?}");
    assert!(task.finished_at.is_some(), "{task:#?}");
    assert!(
        task.error.as_deref().is_some_and(
            |error| error.starts_with("the daemon stopped while this task was running")
        ),
        "{task:#?}"
    );
}

/// A daemon killed with SIGKILL leaves no background command running once it restarts (the
/// death signal and the supervisor's records).
#[tokio::test]
async fn a_killed_daemon_leaves_no_background_command_after_restart() {
    let mut s = Scenario::start(Format::OpenAi).await;
    let (client, _session, _) = start_in_background(&s, SLEEPER).await;
    let pid = pid_file(&s, "sleeper.pid").await;
    s.daemon.kill().await;
    drop(client);
    s.daemon.restart().await;
    wait_until("the background sleep to be killed", || process_gone(pid)).await;
}

/// A background command meets the same rules as a foreground one, before it starts: a denied
/// command is refused (no task, nothing runs), an allowed one starts.
#[tokio::test]
async fn a_background_command_is_checked_like_a_foreground_one() {
    let rules = "[permissions]\n\
         default_mode = \"default\"\n\
         allow = [\"Bash(echo:*)\"]\n\
         deny = [\"Bash(touch:*)\"]\n";
    let s = Scenario::start_with(Format::OpenAi, rules).await;
    s.mock.push(Reply::tool_calls(vec![
        (
            "c_denied",
            "run_shell",
            json!({"command": "touch pwned", "runInBackground": true}).to_string(),
        ),
        (
            "c_allowed",
            "run_shell",
            json!({"command": "echo ran > ran.txt", "runInBackground": true}).to_string(),
        ),
    ]));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "go").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed, "{events:#?}");
    let results = tool_results(&events);
    let result = |id: &str| {
        results
            .iter()
            .find(|(call, _, _)| call == id)
            .unwrap_or_else(|| panic!("no result for {id}: {results:#?}"))
            .clone()
    };
    let (_, denied, denied_is_error) = result("c_denied");
    assert!(
        denied_is_error && denied.contains("Bash(touch:*)"),
        "{denied}"
    );
    let (_, allowed, allowed_is_error) = result("c_allowed");
    assert!(!allowed_is_error, "{allowed}");
    assert!(allowed.starts_with("started background task"), "{allowed}");
    let ran = s.workspace().join("ran.txt");
    wait_until("the allowed command to run", || {
        std::fs::read_to_string(&ran).is_ok_and(|text| text == "ran\n")
    })
    .await;
    assert!(!s.workspace().join("pwned").exists());
}
