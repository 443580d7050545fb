//! The raw-socket plugin example of `docs/editors.md` (`docs/examples/watch_session.py`) works
//! against a live daemon: it attaches to a session, shows its events and answers an approval.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use agentd_tests::harness::{Client, WAIT};
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::approval::ApprovalDecision;
use protocol::event::{Event, RunStatus};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

use crate::approvals::{ASK, shell};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/watch_session.py")
}

/// The example's output lines up to and including the first that starts with `prefix`.
async fn lines_until(lines: &mut Lines<BufReader<ChildStdout>>, prefix: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let line = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no line starting {prefix:?} from the example: {seen:#?}"))
            .unwrap()
            .unwrap_or_else(|| panic!("the example ended before {prefix:?}: {seen:#?}"));
        let done = line.starts_with(prefix);
        seen.push(line);
        if done {
            return seen;
        }
    }
}

fn start_example(socket: &Path, session_id: &str) -> (Child, Lines<BufReader<ChildStdout>>) {
    let mut child = tokio::process::Command::new("python3")
        .arg(example())
        .arg(session_id)
        .env("AGENTD_SOCKET", socket)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python3 runs the example");
    let stdout = child.stdout.take().unwrap();
    (child, BufReader::new(stdout).lines())
}

#[tokio::test]
async fn the_plugin_example_attaches_shows_events_and_answers_an_approval() {
    let s = Scenario::start_with(Format::OpenAi, ASK).await;
    // A viewer that does not answer approvals: only the example can.
    let mut observer = Client::connect_raw(s.daemon.socket()).await.unwrap();
    observer.initialize_as("observer", false).await;
    let session_id = create_session(&mut observer, &s.workspace()).await;
    observer.subscribe(&session_id, Some(0)).await;

    let (mut child, mut lines) = start_example(s.daemon.socket(), &session_id);
    lines_until(&mut lines, &format!("watching {session_id}")).await;

    s.mock.push(shell("call_1", "echo plugin-ran"));
    s.mock.push(Reply::text("all done"));
    observer.prompt(&session_id, "run the command").await;

    let asked = lines_until(&mut lines, "allow run_shell: echo plugin-ran? [y/N]").await;
    assert_eq!(
        asked[..2],
        ["runStarted", "messageCompleted run the command"]
    );
    assert!(
        asked.contains(&"approvalRequested".to_owned()),
        "{asked:#?}"
    );
    let stdin = child.stdin.as_mut().unwrap();
    stdin.write_all(b"y\n").await.unwrap();
    stdin.flush().await.unwrap();

    let shown = lines_until(&mut lines, "runFinished").await;
    let shown: Vec<&str> = shown
        .iter()
        .map(String::as_str)
        .filter(|line| !line.starts_with("toolProgress") && !line.starts_with("checkpointed"))
        .collect();
    assert_eq!(
        shown[..2],
        ["approvalResolved allowOnce", "toolStarted echo plugin-ran"]
    );
    assert!(
        shown.iter().any(|line| line.starts_with("toolCompleted")),
        "{shown:#?}"
    );
    assert!(shown.contains(&"messageCompleted all done"), "{shown:#?}");
    assert_eq!(shown.last(), Some(&"runFinished completed"));

    let events = observer.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let resolved: Vec<(ApprovalDecision, String)> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ApprovalResolved {
                decision,
                decided_by,
                ..
            } => Some((*decision, decided_by.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        resolved,
        [(
            ApprovalDecision::AllowOnce,
            "client:watch-session".to_owned()
        )]
    );
    let results = tool_results(&events);
    assert!(results[0].1.contains("plugin-ran"), "{results:?}");
}

#[tokio::test]
async fn an_answer_other_than_y_denies_the_call_and_the_run_goes_on() {
    let s = Scenario::start_with(Format::Anthropic, ASK).await;
    let mut observer = Client::connect_raw(s.daemon.socket()).await.unwrap();
    observer.initialize_as("observer", false).await;
    let session_id = create_session(&mut observer, &s.workspace()).await;
    observer.subscribe(&session_id, Some(0)).await;
    let (mut child, mut lines) = start_example(s.daemon.socket(), &session_id);
    lines_until(&mut lines, "watching").await;

    s.mock.push(shell("call_1", "touch not-made"));
    s.mock.push(Reply::text("understood"));
    observer.prompt(&session_id, "make it").await;
    lines_until(&mut lines, "allow run_shell: touch not-made?").await;
    let stdin = child.stdin.as_mut().unwrap();
    stdin.write_all(b"no\n").await.unwrap();
    stdin.flush().await.unwrap();
    let shown = lines_until(&mut lines, "runFinished").await;
    assert_eq!(shown[0], "approvalResolved deny");
    assert_eq!(shown.last().unwrap(), "runFinished completed");

    let events = observer.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert!(!s.workspace().join("not-made").exists());
}

/// `docs/editors.md` promises a short example that needs nothing but Python.
#[test]
fn the_plugin_example_is_short_and_needs_only_the_standard_library() {
    let text = std::fs::read_to_string(example()).unwrap();
    assert!(text.lines().count() <= 60, "{} lines", text.lines().count());
    let imports: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("import ") || line.starts_with("from "))
        .collect();
    assert_eq!(imports, ["import json, os, socket, sys, tempfile"]);
}

/// Every JSON block of `docs/editors.md` is valid JSON, and every agent it configures runs
/// `agentctl acp`.
#[test]
fn the_editor_settings_in_the_docs_are_valid_and_run_agentctl_acp() {
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/editors.md");
    let doc = std::fs::read_to_string(doc_path).unwrap();
    let blocks: Vec<&str> = doc
        .split("```json\n")
        .skip(1)
        .map(|rest| rest.split("\n```").next().unwrap())
        .collect();
    assert_eq!(blocks.len(), 2, "Zed and JetBrains");
    for block in blocks {
        let settings: serde_json::Value =
            serde_json::from_str(block).unwrap_or_else(|err| panic!("not JSON ({err}):\n{block}"));
        let agent = &settings["agent_servers"]["agentd"];
        assert!(
            agent["command"].as_str().unwrap().ends_with("agentctl"),
            "{agent}"
        );
        assert_eq!(agent["args"], serde_json::json!(["acp"]));
    }
    assert!(doc.contains(r#"commands = { default = { "agentctl", "acp" } }"#));
    assert!(doc.contains("examples/watch_session.py"));
}
