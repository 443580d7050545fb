//! Files the daemon touches (issue 7, items 15–18): the socket path and its directory and lock
//! file, what sits in the sessions directory (FIFOs, hostile ids), agentctl against a daemon
//! that does not answer, and config edits by concurrent and racing "always allow" answers.

use std::os::unix::fs::PermissionsExt;

use agentd_tests::harness::{Client, Daemon, TestEnv, text};
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use protocol::approval::ApprovalDecision;
use protocol::error as codes;
use protocol::event::{Event, RunStatus};
use serde_json::{Value, json};

use crate::approvals::{ASK, shell};

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn config_path(env: &TestEnv) -> std::path::PathBuf {
    env.path("config").join("agentd").join("config.toml")
}

/// The `[permissions] allow` rules of the config file, which must parse.
fn allow_rules(env: &TestEnv) -> Vec<String> {
    let text = std::fs::read_to_string(config_path(env)).unwrap();
    let config: toml::Table = text
        .parse()
        .unwrap_or_else(|err| panic!("the config no longer parses ({err}):\n{text}"));
    config
        .get("permissions")
        .and_then(|p| p.get("allow"))
        .and_then(|allow| allow.as_array())
        .map(|allow| {
            allow
                .iter()
                .map(|rule| rule.as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_socket_in_a_shared_directory_leaves_the_directory_mode_alone() {
    let env = TestEnv::new();
    let shared = env.path("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let env = env.socket_flag(shared.join("agentd.sock"));
    let daemon = Daemon::start_in(env).await;
    let mut client = daemon.client().await;
    client.request("daemon/status", json!({})).await.unwrap();
    assert_eq!(mode(&shared), 0o1777, "the shared dir keeps its mode");
    assert_eq!(mode(daemon.socket()) & 0o077, 0, "the socket is private");
    let lock = agentd_tests::harness::lock_path(daemon.socket());
    assert_eq!(mode(&lock) & 0o077, 0, "the lock file is private");
}

#[tokio::test]
async fn a_regular_file_or_a_directory_at_the_socket_path_is_refused_and_left_intact() {
    let env = TestEnv::new();
    let file = env.path("work").join("notes.txt");
    std::fs::write(&file, "my notes\n").unwrap();
    let env = env.socket_flag(file.clone());
    let (status, stderr) = env.daemon_refusal().await;
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains("is not a socket") && stderr.contains("notes.txt"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "my notes\n");
    assert!(
        !agentd_tests::harness::lock_path(&file).exists(),
        "no lock file is left beside somebody's file"
    );

    let dir = env.path("work").join("a-dir");
    std::fs::create_dir(&dir).unwrap();
    let env = env.socket_flag(dir.clone());
    let (status, stderr) = env.daemon_refusal().await;
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("is not a socket"), "{stderr}");
    assert!(dir.is_dir());
}

#[tokio::test]
async fn the_log_on_a_stderr_that_is_no_terminal_has_no_colour_codes() {
    // A refusal is logged as an error, to a pipe here (as to journald or a file).
    let env = TestEnv::new();
    let file = env.path("work").join("notes.txt");
    std::fs::write(&file, "my notes\n").unwrap();
    let (status, stderr) = env.socket_flag(file).daemon_refusal().await;
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("ERROR"), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "colour codes on a pipe: {stderr:?}"
    );
}

#[tokio::test]
async fn a_lock_file_that_is_not_agentds_is_not_overwritten() {
    let env = TestEnv::new();
    let socket = env.path("work").join("agentd.sock");
    let lock = agentd_tests::harness::lock_path(&socket);
    std::fs::write(&lock, "important\n").unwrap();
    let env = env.socket_flag(socket.clone());
    let (status, stderr) = env.daemon_refusal().await;
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("not an agentd lock file"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&lock).unwrap(), "important\n");
    assert!(!socket.exists(), "no socket was bound");
}

#[tokio::test]
async fn a_fifo_in_the_sessions_dir_does_not_hang_startup() {
    let mut s = Scenario::start(Format::OpenAi).await;
    let mut client = s.client().await;
    let session = create_session(&mut client, &s.workspace()).await;
    drop(client);
    s.daemon.kill().await;
    let sessions_dir = session_file(&s.daemon.env, &session)
        .parent()
        .unwrap()
        .to_path_buf();
    mkfifo(&sessions_dir.join("ses_fifo.jsonl"));
    std::fs::create_dir(sessions_dir.join("ses_dir.jsonl")).unwrap();

    s.daemon.restart().await;
    let mut client = s.client().await;
    let list = client.request("session/list", json!({})).await.unwrap();
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|info| info["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [session.as_str()], "{list}");
    let listed = s.daemon.env.run_agentctl(&["sessions", "list"]).await;
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed.stderr));
    assert!(text(&listed.stdout).contains(agentctl::ids::short(&session)));
    let log = s.daemon.log();
    assert!(
        log.contains("ses_fifo.jsonl") && log.contains("named pipe"),
        "{log}"
    );
}

#[tokio::test]
async fn agentctl_gives_up_on_a_daemon_that_never_answers() {
    let env = TestEnv::new();
    // Takes connections into its backlog and never answers, like a hung daemon.
    let _silent = std::os::unix::net::UnixListener::bind(&env.socket).unwrap();
    let output = env.run_agentctl(&["--no-start", "sessions", "list"]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("did not answer") && stderr.contains("initialize"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_hostile_session_id_is_skipped_on_load_and_refused_by_every_method() {
    let mut s = Scenario::start(Format::OpenAi).await;
    let mut client = s.client().await;
    let real = create_session(&mut client, &s.workspace()).await;
    drop(client);
    s.daemon.kill().await;

    let real_file = session_file(&s.daemon.env, &real);
    let sessions_dir = real_file.parent().unwrap().to_path_buf();
    let text_of_real = std::fs::read_to_string(&real_file).unwrap();
    let mut header: Value = serde_json::from_str(text_of_real.lines().next().unwrap()).unwrap();
    header["id"] = json!("../../../victim");
    let hostile = format!("{header}\n");
    std::fs::write(sessions_dir.join("ses_evil.jsonl"), &hostile).unwrap();
    // Where `../../../victim` points from the sessions dir, holding a loadable session.
    let victim = s.daemon.env.dir.path().join("victim.jsonl");
    std::fs::write(&victim, &hostile).unwrap();
    // A copy under another name: its header names a session that is not this file.
    std::fs::write(sessions_dir.join("ses_copy.jsonl"), &text_of_real).unwrap();

    s.daemon.restart().await;
    let mut client = s.client().await;
    let list = client.request("session/list", json!({})).await.unwrap();
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|info| info["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [real.as_str()], "{list}");

    let bad = "../../../victim";
    for (method, params) in [
        ("session/get", json!({"sessionId": bad})),
        ("session/delete", json!({"sessionId": bad})),
        ("session/prompt", json!({"sessionId": bad, "text": "hi"})),
        ("session/steer", json!({"sessionId": bad, "text": "hi"})),
        ("session/followUp", json!({"sessionId": bad, "text": "hi"})),
        ("session/cancel", json!({"sessionId": bad})),
        ("session/subscribe", json!({"sessionId": bad})),
        ("session/list", json!({"cursor": bad})),
        ("approval/list", json!({"sessionId": bad})),
        (
            "approval/respond",
            json!({"approvalId": "apr_../../x", "decision": "deny"}),
        ),
    ] {
        let err = client.request(method, params.clone()).await.unwrap_err();
        assert_eq!(
            err.code,
            codes::INVALID_PARAMS as i64,
            "{method} {params}: {err:?}"
        );
        assert!(err.message.contains("invalid"), "{method}: {err:?}");
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), hostile);
    assert_eq!(
        std::fs::read_to_string(&real_file).unwrap(),
        text_of_real,
        "the real session is untouched"
    );
    let log = s.daemon.log();
    assert!(
        log.contains("skipping session file") && log.contains("ses_evil.jsonl"),
        "{log}"
    );
}

/// `n` new sessions, subscribed on `client` and prompted once each.
async fn prompted_sessions(s: &Scenario, client: &mut Client, n: usize) {
    for i in 0..n {
        let session = create_session(client, &s.workspace()).await;
        client.subscribe(&session, Some(0)).await;
        client.prompt(&session, &format!("touch {i}")).await;
    }
}

/// The approvals requested on `client` until there are `n`.
async fn approvals(client: &mut Client, n: usize) -> Vec<protocol::approval::PendingApproval> {
    let mut found = Vec::new();
    while found.len() < n {
        if let Event::ApprovalRequested { approval, .. } = client.next_persisted_event().await.event
        {
            found.push(approval);
        }
    }
    found
}

#[tokio::test]
async fn twelve_concurrent_allow_always_answers_keep_twelve_rules() {
    const N: usize = 12;
    let s = Scenario::start_with(Format::OpenAi, ASK).await;
    for i in 0..N {
        s.mock
            .push(shell(&format!("c{i}"), &format!("touch f{i}.txt")));
    }
    for _ in 0..N {
        s.mock.push(Reply::text("done"));
    }
    let mut client = s.client().await;
    prompted_sessions(&s, &mut client, N).await;
    let pending = approvals(&mut client, N).await;
    let mut ids = Vec::new();
    for approval in &pending {
        let params = json!({"approvalId": approval.approval_id, "decision": "allowAlways"});
        ids.push(client.send_request("approval/respond", &params).await);
    }
    for id in ids {
        let response = client.response_for(&json!(id)).await;
        assert!(
            response["result"]["ruleAdded"].is_string(),
            "every answer adds its rule: {response}"
        );
    }
    let mut finished = 0;
    while finished < N {
        if let Event::RunFinished { status, .. } = client.next_persisted_event().await.event {
            assert_eq!(status, RunStatus::Completed);
            finished += 1;
        }
    }
    let mut rules = allow_rules(&s.daemon.env);
    rules.sort();
    let mut expected: Vec<String> = (0..N)
        .map(|i| format!("run_shell(touch f{i}.txt:*)"))
        .collect();
    expected.sort();
    assert_eq!(rules, expected);
    let leftovers: Vec<_> = std::fs::read_dir(config_path(&s.daemon.env).parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .filter(|name| name != "config.toml")
        .collect();
    assert_eq!(leftovers, Vec::<std::ffi::OsString>::new(), "no temp file");
}

#[tokio::test]
async fn a_deny_racing_allow_always_has_one_winner_and_a_denied_call_writes_no_rule() {
    const ROUNDS: usize = 4;
    let s = Scenario::start_with(Format::OpenAi, ASK).await;
    let mut client = s.client().await;
    // One race at a time: only the claim decides, not concurrent config writes.
    for round in 0..ROUNDS {
        let command = format!("touch r{round}.txt");
        s.mock.push(shell(&format!("c{round}"), &command));
        s.mock.push(Reply::text("done"));
        prompted_sessions(&s, &mut client, 1).await;
        let approval = approvals(&mut client, 1).await.remove(0);
        let always = json!({"approvalId": approval.approval_id, "decision": "allowAlways"});
        let deny = json!({"approvalId": approval.approval_id, "decision": "deny"});
        let always = client.send_request("approval/respond", &always).await;
        let deny = client.send_request("approval/respond", &deny).await;
        let always = client.response_for(&json!(always)).await;
        let deny = client.response_for(&json!(deny)).await;
        let mut decision = None;
        loop {
            match client.next_persisted_event().await.event {
                Event::ApprovalResolved { decision: d, .. } => decision = Some(d),
                Event::RunFinished { .. } => break,
                _ => {}
            }
        }

        let always_won = always.get("result").is_some();
        let deny_won = deny.get("result").is_some();
        assert!(
            always_won != deny_won,
            "exactly one answer wins: {always} {deny}"
        );
        let loser = if always_won { &deny } else { &always };
        assert_eq!(
            loser["error"]["code"],
            json!(codes::ALREADY_DECIDED),
            "{loser}"
        );
        let rule = format!("run_shell({command}:*)");
        let rules = allow_rules(&s.daemon.env);
        if deny_won {
            assert_eq!(decision, Some(ApprovalDecision::Deny));
            assert!(!rules.contains(&rule), "denied, yet {rule} is in {rules:?}");
        } else {
            assert_eq!(decision, Some(ApprovalDecision::AllowAlways));
            assert!(rules.contains(&rule), "{rule} missing from {rules:?}");
        }
    }
}

#[tokio::test]
async fn a_fifo_as_config_is_a_config_error_not_a_hang() {
    let env = TestEnv::new();
    let config = config_path(&env);
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    mkfifo(&config);
    // The daemon starts (a broken config is reported to clients, never a hang at startup) and
    // session/create says what is wrong with the config.
    let daemon = Daemon::start_in(env).await;
    let mut client = daemon.client().await;
    let err = client
        .request(
            "session/create",
            json!({"cwd": daemon.env.workspace().display().to_string()}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, codes::CONFIG_ERROR as i64, "{err:?}");
    assert!(err.message.contains("not a regular file"), "{err:?}");
}

#[tokio::test]
async fn a_hostile_repository_with_fifo_and_huge_project_files_still_gets_a_session() {
    let s = Scenario::start(Format::OpenAi).await;
    let repo = s.workspace();
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    // AGENTS.md a FIFO nobody writes to; CLAUDE.md a 64 MiB file; settings a FIFO too.
    mkfifo(&repo.join("AGENTS.md"));
    std::fs::write(repo.join("CLAUDE.md"), "x".repeat(64 * 1024 * 1024)).unwrap();
    std::fs::create_dir_all(repo.join(".agents")).unwrap();
    mkfifo(&repo.join(".agents").join("settings.toml"));
    let sub = repo.join("sub");
    std::fs::create_dir_all(&sub).unwrap();

    let mut client = s.client().await;
    let session = create_session(&mut client, &sub).await;
    let got = client
        .request("session/get", json!({"sessionId": session}))
        .await
        .unwrap();
    assert_eq!(got["session"]["status"], json!("idle"), "{got}");
    s.mock.push(Reply::text("ok"));
    client.subscribe(&session, None).await;
    client.prompt(&session, "hi").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let request = &s.mock.requests()[0];
    assert!(
        request.body.contains(&"x".repeat(1000)),
        "the head of the readable notes is used"
    );
    assert!(
        request.body.len() < 1024 * 1024,
        "the huge CLAUDE.md was not read whole: {} bytes sent",
        request.body.len()
    );
}
