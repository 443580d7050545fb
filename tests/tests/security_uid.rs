//! Files of another user are not trusted: project settings, notes and config.toml owned by
//! another uid are never read, and the walk up to the git root stops at a directory of another uid (a `.git`,
//! settings and notes planted in a shared, world-writable parent do not apply below it).
//! These tests need root to make files of another user (`nobody`); otherwise they say so and
//! return.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use agentd_tests::mock_llm::Reply;
use agentd_tests::scenario::*;
use protocol::event::{Event, RunStatus};
use serde_json::{Value, json};

use crate::approvals::shell;

/// The other user the tests plant files as: `nobody`.
const OTHER_UID: u32 = 65534;

/// Notes text that must never reach the model when another user wrote it.
const PLANTED_NOTES: &str = "NOTES PLANTED BY ANOTHER USER";

/// True (after saying so) when the test cannot act as another user.
fn without_root(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("{test} needs root to create files owned by another uid");
        return true;
    }
    false
}

fn give_to_other_user(path: &Path) {
    std::os::unix::fs::chown(path, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
}

/// A shared, world-writable directory as its owner (another user when `theirs`, else us) left
/// it: a `.git`, project settings choosing `acceptEdits`, and notes. Returns `work/` inside
/// it, a workspace of our own.
fn shared_parent_with_a_project(parent: &Path, theirs: bool) -> PathBuf {
    let settings = parent.join(".agents").join("settings.json");
    std::fs::create_dir_all(parent.join(".git")).unwrap();
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        r#"{"permissions": {"defaultMode": "acceptEdits"}}"#,
    )
    .unwrap();
    std::fs::write(parent.join("AGENTS.md"), PLANTED_NOTES).unwrap();
    std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o1777)).unwrap();
    if theirs {
        for path in [
            parent.to_path_buf(),
            parent.join(".git"),
            parent.join(".agents"),
            settings,
            parent.join("AGENTS.md"),
        ] {
            give_to_other_user(&path);
        }
    }
    let work = parent.join("work");
    std::fs::create_dir(&work).unwrap();
    work
}

/// `session/create` in `cwd` without a mode (the project's settings may choose one); returns
/// the session id and its mode.
async fn create(client: &mut agentd_tests::harness::Client, cwd: &Path) -> (String, Value) {
    let session = create_session(client, cwd).await;
    let got = client
        .request("session/get", json!({"sessionId": session}))
        .await
        .unwrap();
    (session, got["session"]["permissionMode"].clone())
}

/// Prompts `session` once (the model ends with "ok", after any replies already queued) and
/// returns the run's events and the first request of the run (the system prompt is in it).
async fn one_run(
    s: &Scenario,
    client: &mut agentd_tests::harness::Client,
    session: &str,
) -> (Vec<Envelope>, String) {
    let before = s.mock.requests().len();
    s.mock.push(Reply::text("ok"));
    client.subscribe(session, Some(0)).await;
    client.prompt(session, "hi").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    (events, s.mock.requests()[before].body.clone())
}

fn warnings(events: &[Envelope]) -> Vec<String> {
    events
        .iter()
        .filter_map(|envelope| match &envelope.event {
            Event::Warning { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// Another user's world-writable directory above the workspace, holding a `.git`, settings
/// and notes, makes no project of the workspace: its mode and notes do not apply. The same
/// directory of our own does (the walk still reaches our git root).
#[tokio::test]
async fn a_project_planted_in_a_shared_parent_by_another_user_does_not_apply() {
    if without_root("a_project_planted_in_a_shared_parent_by_another_user_does_not_apply") {
        return;
    }
    // Scenarios default to bypass: a mode from project settings shows as acceptEdits.
    let s = Scenario::start(agentd_tests::mock_llm::Format::OpenAi).await;
    let theirs = shared_parent_with_a_project(&s.daemon.env.path("theirs"), true);
    let ours = shared_parent_with_a_project(&s.daemon.env.path("ours"), false);
    let mut client = s.client().await;

    let (session, mode) = create(&mut client, &theirs).await;
    assert_eq!(
        mode,
        json!("bypass"),
        "another user's settings chose the mode"
    );
    let (_, body) = one_run(&s, &mut client, &session).await;
    assert!(
        !body.contains(PLANTED_NOTES),
        "another user's notes reached the model: {body}"
    );

    let (session, mode) = create(&mut client, &ours).await;
    assert_eq!(
        mode,
        json!("acceptEdits"),
        "our own project's settings apply"
    );
    let (_, body) = one_run(&s, &mut client, &session).await;
    assert!(
        body.contains(PLANTED_NOTES),
        "our own notes are used: {body}"
    );
}

/// In the workspace itself, a settings file and notes owned by another user are not read,
/// and the user is told which file and what to do; our own settings file and notes beside
/// them still apply.
#[tokio::test]
async fn another_users_settings_file_and_notes_in_the_workspace_are_not_read() {
    if without_root("another_users_settings_file_and_notes_in_the_workspace_are_not_read") {
        return;
    }
    let s = Scenario::start(agentd_tests::mock_llm::Format::OpenAi).await;
    let work = s.workspace();
    std::fs::create_dir_all(work.join(".git")).unwrap();
    std::fs::create_dir_all(work.join(".agents")).unwrap();
    let theirs = work.join(".agents").join("settings.toml");
    std::fs::write(
        &theirs,
        "[permissions]\ndefault_mode = \"acceptEdits\"\ndeny = [\"Bash(echo:*)\"]\n",
    )
    .unwrap();
    give_to_other_user(&theirs);
    std::fs::write(
        work.join(".agents").join("settings.json"),
        r#"{"permissions": {"deny": ["Bash(touch:*)"]}}"#,
    )
    .unwrap();
    std::fs::write(work.join("AGENTS.md"), PLANTED_NOTES).unwrap();
    give_to_other_user(&work.join("AGENTS.md"));
    std::fs::write(work.join("CLAUDE.md"), "our own notes").unwrap();

    let mut client = s.client().await;
    let (session, mode) = create(&mut client, &work).await;
    assert_eq!(
        mode,
        json!("bypass"),
        "another user's settings chose the mode"
    );
    s.mock.push(shell("c1", "echo unasked"));
    s.mock.push(shell("c2", "touch x"));
    let (events, body) = one_run(&s, &mut client, &session).await;

    assert!(!body.contains(PLANTED_NOTES), "{body}");
    assert!(body.contains("our own notes"), "{body}");
    let results = tool_results(&events);
    let (_, output, is_error) = &results[0];
    assert!(!is_error && output.contains("unasked"), "{output}");
    let (_, output, is_error) = &results[1];
    assert!(
        *is_error && output.contains("Bash(touch:*)"),
        "our own deny rule applies: {output}"
    );
    assert!(!work.join("x").exists());
    let warnings = warnings(&events);
    assert!(
        warnings
            .iter()
            .any(|warning| warning.contains(&theirs.display().to_string())
                && warning.contains("another user")
                && warning.contains("chown")),
        "{warnings:?}"
    );
}

/// config.toml chooses providers, keys and rules: one another user owns is refused (reported
/// like any bad config: sessions cannot start until it is fixed), one of root is read.
#[tokio::test]
async fn another_users_config_file_is_refused_and_roots_is_read() {
    if without_root("another_users_config_file_is_refused_and_roots_is_read") {
        return;
    }
    use agentd_tests::harness::{Daemon, TestEnv};
    use protocol::daemon::{DaemonStatusParams, DaemonStatusResult};
    use protocol::methods::DaemonStatus;
    for (owner, refused) in [(OTHER_UID, true), (0, false)] {
        let env = TestEnv::new()
            .var("OPENAI_API_KEY", "sk-test")
            .config("max_steps = 5\n");
        let config = env.path("config").join("agentd").join("config.toml");
        std::os::unix::fs::chown(&config, Some(owner), Some(owner)).unwrap();
        let daemon = Daemon::start_in(env).await;
        let mut client = daemon.client().await;
        let status: DaemonStatusResult = client
            .call::<DaemonStatus>(&DaemonStatusParams {})
            .await
            .unwrap();
        match status.config_error {
            Some(error) if refused => assert!(
                error.contains("belongs to another user (uid 65534)")
                    && error.contains("config.toml"),
                "{error}"
            ),
            None if !refused => {}
            other => panic!("owner {owner}: unexpected config error {other:?}"),
        }
    }
}
