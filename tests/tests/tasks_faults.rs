//! A subagent whose start fails half-way: its record and its child session are made at the
//! same time, and whichever could not be made takes the other with it (no task without a
//! record of how it ended, no child session without a task).

use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use protocol::event::Event;
use protocol::task::TaskStatus;
use serde_json::json;

/// The session files in the state directory.
fn session_files(s: &Scenario) -> Vec<std::path::PathBuf> {
    let dir = s.daemon.env.path("state").join("agentd").join("sessions");
    std::fs::read_dir(dir)
        .map(|dir| {
            dir.flatten()
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
                .collect()
        })
        .unwrap_or_default()
}

/// The `task` tool's result in a run's events.
fn task_output(events: &[Envelope]) -> (String, bool) {
    events
        .iter()
        .find_map(|envelope| match &envelope.event {
            Event::ToolCompleted {
                tool,
                output,
                is_error,
                ..
            } if tool == "task" => Some((output.clone(), *is_error)),
            _ => None,
        })
        .expect("a task tool result")
}

#[tokio::test]
async fn a_child_whose_session_file_cannot_be_written_fails_its_task_and_leaves_no_file() {
    let (s, fault) = Scenario::start_with_write_fault(Format::OpenAi, "").await;
    let dir = s.workspace().join(".agents/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("marked.md"),
        "---\nname: marked\ndescription: Marked\n---\nMARKED CHILD BODY",
    )
    .unwrap();
    let (mut client, session) = s.session().await;
    // Only the child's header holds its definition's body.
    std::fs::write(&fault, "MARKED CHILD BODY").unwrap();
    s.mock.push(Reply::tool_call(
        "call_a",
        "task",
        json!({"prompt": "look around", "agentType": "marked"}),
    ));
    s.mock.push(Reply::text("ok"));
    client.prompt(&session, "delegate").await;
    let events = client.events_until_run_finished().await;
    let (output, is_error) = task_output(&events);
    assert!(is_error, "{output}");
    assert!(output.contains("could not be created"), "{output}");
    let failed = events.iter().find_map(|envelope| match &envelope.event {
        Event::TaskFinished { task } => Some(task.clone()),
        _ => None,
    });
    let failed = failed.expect("taskFinished");
    assert_eq!(failed.status, TaskStatus::Failed, "{failed:?}");
    assert_eq!(failed.child_session_id, None, "{failed:?}");
    assert_eq!(session_files(&s).len(), 1, "{:?}", session_files(&s));
    // The model got no child's request.
    assert_eq!(s.mock.requests().len(), 2);
}

#[tokio::test]
async fn a_task_whose_record_cannot_be_written_starts_no_child_and_leaves_no_session() {
    let mut s = Scenario::start(Format::OpenAi).await;
    // Records cannot be written: where their directory goes, there is a file.
    s.daemon.signal(libc::SIGTERM);
    assert!(s.daemon.wait_exit().await.success());
    let tasks = s.daemon.env.path("state").join("agentd").join("tasks");
    let _ = std::fs::remove_dir_all(&tasks);
    std::fs::write(&tasks, "not a directory").unwrap();
    s.daemon.restart().await;

    let (mut client, session) = s.session().await;
    s.mock.push(Reply::tool_call(
        "call_a",
        "task",
        json!({"prompt": "look around"}),
    ));
    s.mock.push(Reply::text("ok"));
    client.prompt(&session, "delegate").await;
    let events = client.events_until_run_finished().await;
    let (output, is_error) = task_output(&events);
    assert!(is_error, "{output}");
    assert!(output.contains("did not start"), "{output}");
    // The child session made beside the record is gone again, file and listing.
    assert_eq!(session_files(&s).len(), 1, "{:?}", session_files(&s));
    let list = client.request("session/list", json!({})).await.unwrap();
    let listed = list["sessions"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{list}");
    assert_eq!(listed[0]["sessionId"], session.as_str(), "{list}");
    assert_eq!(s.mock.requests().len(), 2);
}
