//! Checkpoints, diffs and rewinds end to end: a run's `write_file`, `edit_file`, a shell
//! `sed -i` and a file a shell command made are all in its diff and all undone by a rewind of
//! the files; a file changed by hand since is listed as a conflict; ignored and oversized files
//! are left alone and said; a preview changes nothing; a rewind is undone by a second one; the
//! conversation part is a fork at the run's start; an active run refuses it; `agentctl diff`
//! and `agentctl rewind --yes`.

use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::event::Event;
use serde_json::{Value, json};

fn read(s: &Scenario, path: &str) -> Option<String> {
    std::fs::read_to_string(s.workspace().join(path)).ok()
}

/// One run that changes the workspace four ways (and makes an oversized and an ignored file).
async fn a_run_that_writes(
    s: &Scenario,
    client: &mut agentd_tests::harness::Client,
    session: &str,
) -> String {
    s.mock.push(Reply::tool_call(
        "w1",
        "write_file",
        json!({"path": "new.txt", "content": "written by the model\n"}),
    ));
    s.mock.push(Reply::tool_call(
        "e1",
        "edit_file",
        json!({"path": "a.txt", "oldText": "alpha", "newText": "ALPHA"}),
    ));
    s.mock.push(Reply::tool_call(
        "s1",
        "run_shell",
        json!({"command": "sed -i s/one/two/ b.txt && echo made > shell.txt && head -c 3000 /dev/zero > big.bin && mkdir -p ignored && echo x > ignored/x"}),
    ));
    s.mock.push(Reply::text("done"));
    let run_id = client.prompt(session, "change things").await;
    let events = client.events_until_run_finished().await;
    let ok = events
        .iter()
        .filter(|e| {
            matches!(
                &e.event,
                Event::ToolCompleted {
                    is_error: false,
                    ..
                }
            )
        })
        .count();
    assert_eq!(ok, 3, "{events:#?}");
    run_id
}

const CONFIG: &str = "[checkpoints]\nmax_file_bytes = 2000\n";

async fn start() -> (Scenario, agentd_tests::harness::Client, String) {
    let s = Scenario::start_with(Format::OpenAi, CONFIG).await;
    std::fs::write(s.workspace().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(s.workspace().join("b.txt"), "one\n").unwrap();
    std::fs::write(s.workspace().join(".gitignore"), "ignored/\n").unwrap();
    // The user's own repository, which checkpoints never touch.
    let made = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(s.workspace())
        .status()
        .unwrap();
    assert!(made.success());
    let (mut client, session) = s.session().await;
    client
        .request(
            "session/update",
            json!({"sessionId": session, "permissionMode": "bypass"}),
        )
        .await
        .expect("session/update");
    (s, client, session)
}

fn paths(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|path| path.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_runs_changes_are_its_diff_and_a_rewind_undoes_them_and_is_undone() {
    let (s, mut client, session) = start().await;
    let status = client.request("daemon/status", json!({})).await.unwrap();
    assert_eq!(status["checkpoints"], "on");
    let run_id = a_run_that_writes(&s, &mut client, &session).await;

    let diff = client
        .request(
            "session/diff",
            json!({"sessionId": session, "runId": run_id}),
        )
        .await
        .expect("session/diff");
    let files: Vec<(String, String)> = diff["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["change"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("a.txt", "modified"),
        ("b.txt", "modified"),
        ("new.txt", "added"),
        ("shell.txt", "added"),
    ];
    assert_eq!(
        files,
        expected.map(|(p, c)| (p.to_owned(), c.to_owned())).to_vec()
    );
    let text = diff["diff"].as_str().unwrap();
    assert!(text.contains("-alpha\n+ALPHA\n"), "{text}");
    assert!(text.contains("-one\n+two\n"), "{text}");
    assert!(text.contains("+written by the model\n"), "{text}");

    // A person edits a file of the run afterwards.
    std::fs::write(s.workspace().join("new.txt"), "edited by hand\n").unwrap();
    let preview = client
        .request(
            "session/rewind",
            json!({"sessionId": session, "toRunId": run_id}),
        )
        .await
        .expect("session/rewind preview");
    assert_eq!(preview["applied"], false);
    assert_eq!(paths(&preview["plan"]["restore"]), ["a.txt", "b.txt"]);
    assert_eq!(paths(&preview["plan"]["delete"]), ["new.txt", "shell.txt"]);
    assert_eq!(paths(&preview["plan"]["conflicts"]), ["new.txt"]);
    assert_eq!(
        paths(&preview["plan"]["skipped"]),
        ["big.bin (3000 bytes, too large)"]
    );
    assert_eq!(
        read(&s, "a.txt").as_deref(),
        Some("ALPHA\n"),
        "a preview changes nothing"
    );

    let done = client
        .request(
            "session/rewind",
            json!({"sessionId": session, "toRunId": run_id, "confirm": true, "expect": preview["current"]}),
        )
        .await
        .expect("session/rewind");
    assert_eq!(done["applied"], true, "{done}");
    assert_eq!(done["failed"], json!([]));
    assert_eq!(read(&s, "a.txt").as_deref(), Some("alpha\n"));
    assert_eq!(read(&s, "b.txt").as_deref(), Some("one\n"));
    assert_eq!(read(&s, "new.txt"), None);
    assert_eq!(read(&s, "shell.txt"), None);
    assert!(
        read(&s, "big.bin").is_some(),
        "an oversized file is left alone"
    );
    assert_eq!(
        read(&s, "ignored/x").as_deref(),
        Some("x\n"),
        "an ignored file is left alone"
    );

    // The rewind is undone by going back to the seq it gave.
    let undo = client
        .request(
            "session/rewind",
            json!({"sessionId": session, "toSeq": done["undoSeq"], "confirm": true}),
        )
        .await
        .expect("undo");
    assert_eq!(undo["applied"], true);
    assert_eq!(read(&s, "a.txt").as_deref(), Some("ALPHA\n"));
    assert_eq!(read(&s, "b.txt").as_deref(), Some("two\n"));
    assert_eq!(read(&s, "new.txt").as_deref(), Some("edited by hand\n"));
    assert_eq!(read(&s, "shell.txt").as_deref(), Some("made\n"));
    let user_git: Vec<String> = std::fs::read_dir(s.workspace().join(".git"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !user_git.contains(&"index".to_owned()),
        "the user's .git has no index: {user_git:?}"
    );
    let objects = std::fs::read_dir(s.workspace().join(".git/objects"))
        .unwrap()
        .count();
    assert_eq!(
        objects, 2,
        "only info/ and pack/: no object written into the user's .git"
    );
}

#[tokio::test]
async fn a_confirm_after_the_workspace_changed_is_refused_and_so_is_an_active_run() {
    let (s, mut client, session) = start().await;
    let run_id = a_run_that_writes(&s, &mut client, &session).await;
    let preview = client
        .request(
            "session/rewind",
            json!({"sessionId": session, "toRunId": run_id}),
        )
        .await
        .unwrap();
    std::fs::write(s.workspace().join("late.txt"), "late\n").unwrap();
    let refused = client
        .request(
            "session/rewind",
            json!({"sessionId": session, "toRunId": run_id, "confirm": true, "expect": preview["current"]}),
        )
        .await
        .unwrap_err();
    assert!(
        refused.message.contains("changed since the preview"),
        "{refused:?}"
    );
    assert_eq!(read(&s, "a.txt").as_deref(), Some("ALPHA\n"));

    s.mock.push(Reply::held("thinking", " more"));
    client.prompt(&session, "hold on").await;
    s.mock.wait_for_requests_after(4).await;
    let busy = client
        .request(
            "session/rewind",
            json!({"sessionId": session, "toRunId": run_id, "confirm": true}),
        )
        .await
        .unwrap_err();
    assert!(busy.message.contains("a run is active"), "{busy:?}");
    s.mock.release();
    client.events_until_run_finished().await;
}

#[tokio::test]
async fn the_conversation_rewinds_as_a_fork_at_the_runs_start() {
    let (s, mut client, session) = start().await;
    s.mock.push(Reply::text("first answer"));
    client.prompt(&session, "first question").await;
    client.events_until_run_finished().await;
    let second = a_run_that_writes(&s, &mut client, &session).await;
    let done = client
        .request(
            "session/rewind",
            json!({"sessionId": session, "toRunId": second, "files": false, "conversation": true, "confirm": true}),
        )
        .await
        .expect("session/rewind");
    let branch = done["sessionId"]
        .as_str()
        .expect("a new session")
        .to_owned();
    assert_eq!(
        read(&s, "a.txt").as_deref(),
        Some("ALPHA\n"),
        "files: false"
    );
    let got = client
        .request(
            "session/get",
            json!({"sessionId": branch, "includeHistory": true}),
        )
        .await
        .unwrap();
    let texts: Vec<&str> = got["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(texts, ["first question", "first answer"]);
    let listed = client
        .request("session/checkpoints", json!({"sessionId": session}))
        .await
        .unwrap();
    let runs = listed["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["prompt"], "first question");
    assert_eq!(runs[0]["changedFiles"], 0);
    assert_eq!(runs[1]["changedFiles"], 4);
}

#[tokio::test]
async fn agentctl_diff_and_rewind() {
    let (s, mut client, session) = start().await;
    a_run_that_writes(&s, &mut client, &session).await;
    let out = s
        .daemon
        .env
        .run_agentctl(&["diff", &session, "--run", "1"])
        .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout.contains("+ALPHA"), "{stdout}");
    assert!(
        !stdout.contains('\u{1b}'),
        "no colour into a pipe: {stdout}"
    );
    let listed = s.daemon.env.run_agentctl(&["rewind", &session]).await;
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains("change things"), "{listed}");
    assert!(listed.contains("4 files"), "{listed}");
    let refused = s
        .daemon
        .env
        .run_agentctl(&["rewind", &session, "--run", "1"])
        .await;
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--yes"),
        "{refused:?}"
    );
    assert_eq!(read(&s, "a.txt").as_deref(), Some("ALPHA\n"));
    let done = s
        .daemon
        .env
        .run_agentctl(&["rewind", &session, "--run", "1", "--yes"])
        .await;
    let stdout = String::from_utf8_lossy(&done.stdout);
    assert!(done.status.success(), "{done:?}");
    assert!(stdout.contains("restored 2 file(s), removed 2"), "{stdout}");
    assert!(stdout.contains("--seq"), "{stdout}");
    assert_eq!(read(&s, "a.txt").as_deref(), Some("alpha\n"));
}

#[tokio::test]
async fn chat_diff_and_rewind() {
    use agentd_tests::harness::TestEnv;
    use agentd_tests::mock_llm::MockLlm;
    use agentd_tests::pty::Pty;
    let mock = MockLlm::start().await;
    let env = TestEnv::new().config(&config_toml(&mock, Format::OpenAi, ""));
    mock.push(Reply::tool_call(
        "w1",
        "write_file",
        json!({"path": "new.txt", "content": "written in the chat\n"}),
    ));
    mock.push(Reply::text("Wrote it."));
    let mut command = env.agentctl();
    command.args(["chat", "--mode", "bypass"]);
    let mut pty = Pty::spawn(command, 100, 30);
    pty.expect("› ").await;
    pty.send("make a file\r");
    // The write is shown as the lines it put in.
    pty.expect("│ +written in the chat").await;
    pty.expect("Wrote it.").await;
    pty.expect(" out · ").await;
    let made = env.workspace().join("new.txt");
    assert!(made.exists());
    pty.send("/diff\r");
    pty.expect("+written in the chat").await;
    // `/rewind` alone picks the run; Enter previews it.
    pty.send("/rewind\r");
    pty.wait_visible("the runs picked from", |screen| {
        screen
            .contents()
            .lines()
            .any(|line| line.starts_with("›   1  1 file(s)   make a file"))
    })
    .await;
    pty.send("\r");
    pty.expect("to do it: /rewind 1 yes").await;
    pty.send("/rewind 1\r");
    pty.expect("to do it: /rewind 1 yes").await;
    assert!(made.exists(), "a preview changes nothing");
    pty.send("/rewind 1 yes\r");
    pty.expect("this chat goes on in ses_").await;
    assert!(!made.exists());
    pty.send("/quit\r");
    assert_eq!(pty.wait().await.code(), Some(0));
}

#[tokio::test]
async fn without_git_checkpoints_are_off_status_says_why_and_runs_go_on() {
    // A PATH with a shell and nothing else: no git.
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/bin/sh", bin.path().join("sh")).unwrap();
    let path = bin.path().display().to_string();
    let s = Scenario::start_with_vars(Format::OpenAi, "", &[("PATH", path.as_str())]).await;
    let (mut client, session) = s.session().await;
    let status = client.request("daemon/status", json!({})).await.unwrap();
    let said = status["checkpoints"].as_str().unwrap();
    assert!(said.starts_with("off: git is not installed"), "{said}");
    s.mock.push(Reply::tool_call(
        "w1",
        "write_file",
        json!({"path": "new.txt", "content": "x\n"}),
    ));
    s.mock.push(Reply::text("done"));
    client.prompt(&session, "write").await;
    let events = client.events_until_run_finished().await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(&e.event, Event::Checkpointed { .. } | Event::Warning { .. })),
        "{events:#?}"
    );
    assert_eq!(read(&s, "new.txt").as_deref(), Some("x\n"));
    let refused = client
        .request("session/diff", json!({"sessionId": session}))
        .await
        .unwrap_err();
    assert!(
        refused.message.contains("git is not installed"),
        "{refused:?}"
    );
}
