//! Trusted projects: a repository's `.agents/settings.*` deny and ask rules apply at once; its
//! allow rules and a default mode looser than the user's apply only once the user trusted the
//! project root (`project/trust`, `agentctl trust`). An untrusted project with allow rules gets
//! a `warning` at run start naming the command to trust it.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use agentd_tests::harness::Client;
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::error as codes;
use protocol::event::{Event, RunStatus};
use serde_json::{Value, json};

use crate::approvals::{ASK, requested, respond, result_of, shell, started, until_approval};

/// Project settings that allow `touch` and deny `rm`.
const PROJECT_RULES: &str = "[permissions]\nallow = [\"Bash(touch:*)\"]\ndeny = [\"Bash(rm:*)\"]\n";

fn write_project_settings(workspace: &Path, text: &str) {
    std::fs::create_dir_all(workspace.join(".agents")).unwrap();
    std::fs::write(workspace.join(".agents/settings.toml"), text).unwrap();
}

/// The messages of the `warning` events among `events`.
pub(crate) fn warnings(events: &[Envelope]) -> Vec<String> {
    events
        .iter()
        .filter_map(|envelope| match &envelope.event {
            Event::Warning { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

fn canonical(path: &Path) -> String {
    std::fs::canonicalize(path).unwrap().display().to_string()
}

async fn session_mode(client: &mut Client, session: &str) -> Value {
    let got = client
        .request("session/get", json!({"sessionId": session}))
        .await
        .unwrap();
    got["session"]["permissionMode"].clone()
}

both_formats!(an_untrusted_projects_allow_rule_waits_for_trust_and_its_deny_applies_at_once);
async fn an_untrusted_projects_allow_rule_waits_for_trust_and_its_deny_applies_at_once(
    format: Format,
) {
    let s = Scenario::start_with(format, ASK).await;
    let workspace = s.workspace();
    write_project_settings(&workspace, PROJECT_RULES);
    std::fs::write(workspace.join("victim.txt"), "keep").unwrap();
    let root = canonical(&workspace);

    // Untrusted: the allow rule is not applied (touch asks), the deny rule is (rm is refused).
    s.mock.push(shell("c1", "touch first.txt"));
    s.mock.push(shell("c2", "rm victim.txt"));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "go").await;
    let (mut events, approval) = until_approval(&mut client).await;
    assert_eq!(
        approval.tool_call_id, "c1",
        "the untrusted allow rule does not apply"
    );
    respond(&mut client, &approval.approval_id, "deny", None)
        .await
        .unwrap();
    events.extend(client.events_until_run_finished().await);
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(requested(&events).len(), 1, "the deny rule does not ask");
    let (output, is_error) = result_of(&events, "c2");
    assert!(is_error && output.contains("Bash(rm:*)"), "{output}");
    assert!(!started(&events, "c2"));
    assert!(workspace.join("victim.txt").exists());
    assert!(!workspace.join("first.txt").exists());
    let warned = warnings(&events);
    assert!(
        warned.iter().any(|warning| warning.contains("not trusted")
            && warning.contains("Bash(touch:*)")
            && warning.contains(&format!("`agentctl trust {root}`"))),
        "{warned:?}"
    );

    // Trusted with agentctl (from the workspace): the allow rule applies from the next run.
    let output = s.daemon.env.run_agentctl(&["trust"]).await;
    assert!(output.status.success(), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains(&root),
        "{output:?}"
    );
    s.mock.push(shell("c3", "touch second.txt"));
    s.mock.push(shell("c4", "rm victim.txt"));
    s.mock.push(Reply::text("done"));
    client.prompt(&session, "again").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(requested(&events), [], "trusted: touch runs, rm is denied");
    assert!(started(&events, "c3"), "{:?}", result_of(&events, "c3"));
    assert!(workspace.join("second.txt").exists());
    assert!(!started(&events, "c4"));
    assert!(workspace.join("victim.txt").exists());
    assert_eq!(warnings(&events), Vec::<String>::new());

    // Untrusted again: touch asks again, and the warning is back.
    let output = s.daemon.env.run_agentctl(&["untrust"]).await;
    assert!(output.status.success(), "{output:?}");
    s.mock.push(shell("c5", "touch third.txt"));
    s.mock.push(Reply::text("done"));
    client.prompt(&session, "once more").await;
    let (mut events, approval) = until_approval(&mut client).await;
    assert_eq!(approval.tool_call_id, "c5");
    respond(&mut client, &approval.approval_id, "deny", None)
        .await
        .unwrap();
    events.extend(client.events_until_run_finished().await);
    assert!(!workspace.join("third.txt").exists());
    assert_eq!(warnings(&events).len(), 1, "{:?}", warnings(&events));
}

/// An untrusted project may choose a stricter mode than the user's, never a looser one.
#[tokio::test]
async fn an_untrusted_project_cannot_loosen_the_mode() {
    let s = Scenario::start_with(Format::OpenAi, ASK).await;
    let loose = s.daemon.env.path("loose");
    let strict = s.daemon.env.path("strict");
    for (dir, mode) in [(&loose, "acceptEdits"), (&strict, "plan")] {
        std::fs::create_dir_all(dir).unwrap();
        write_project_settings(dir, &format!("[permissions]\ndefault_mode = \"{mode}\"\n"));
    }
    let mut client = s.client().await;
    let session = create_session(&mut client, &loose).await;
    assert_eq!(session_mode(&mut client, &session).await, "default");
    // The session's log says why the project's mode was not used.
    client.subscribe(&session, Some(0)).await;
    let events = client
        .persisted_events_until(|event| matches!(event, Event::Warning { .. }))
        .await;
    let warned = warnings(&events);
    assert!(
        warned[0].contains("acceptEdits")
            && warned[0].contains("agentctl trust")
            && !warned[0].contains("project/trust"),
        "{warned:?}"
    );
    let session = create_session(&mut client, &strict).await;
    assert_eq!(session_mode(&mut client, &session).await, "plan");

    client
        .request(
            "project/trust",
            json!({"path": loose.display().to_string()}),
        )
        .await
        .unwrap();
    let session = create_session(&mut client, &loose).await;
    assert_eq!(session_mode(&mut client, &session).await, "acceptEdits");
}

/// `project/trust` resolves the git root, `project/list` shows it across a restart, the store
/// is private, `project/untrust` removes it; bad paths are `-32602`.
#[tokio::test]
async fn trusted_projects_are_listed_kept_across_restarts_and_untrusted() {
    let mut s = Scenario::start(Format::OpenAi).await;
    let repo = s.daemon.env.path("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join("web/src")).unwrap();
    let root = canonical(&repo);
    let mut client = s.client().await;
    let trusted = client
        .request(
            "project/trust",
            json!({"path": repo.join("web/src").display().to_string()}),
        )
        .await
        .unwrap();
    assert_eq!(trusted, json!({"root": root, "trusted": true, "files": []}));
    for bad in ["relative/dir", "/nonexistent/agentd-trust-test"] {
        let error = client
            .request("project/trust", json!({"path": bad}))
            .await
            .unwrap_err();
        assert_eq!(
            error.code,
            i64::from(codes::INVALID_PARAMS),
            "{bad}: {error:?}"
        );
        assert!(!error.message.contains("agentctl"), "{}", error.message);
    }
    let store = s
        .daemon
        .env
        .path("state")
        .join("agentd/trusted_projects.json");
    let mode = std::fs::metadata(&store).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", store.display());
    drop(client);

    s.daemon.signal(libc::SIGTERM);
    s.daemon.wait_exit().await;
    s.daemon.restart().await;
    let mut client = s.client().await;
    let listed = client.request("project/list", json!({})).await.unwrap();
    assert_eq!(listed, json!({"projects": [{"root": root}]}));
    let untrusted = client
        .request("project/untrust", json!({"path": root}))
        .await
        .unwrap();
    assert_eq!(untrusted, json!({"root": root, "wasTrusted": true}));
    let listed = client.request("project/list", json!({})).await.unwrap();
    assert_eq!(listed, json!({"projects": []}));
}

/// `agentctl trust DIR` resolves DIR against the current directory and names the root the
/// daemon trusted; `untrust` says when nothing changed; a missing directory fails with the
/// daemon's message.
#[tokio::test]
async fn agentctl_trust_and_untrust_take_a_directory() {
    let s = Scenario::start(Format::OpenAi).await;
    let workspace = s.workspace();
    std::fs::create_dir_all(workspace.join(".git")).unwrap();
    std::fs::create_dir_all(workspace.join("pkg/lib")).unwrap();
    let root = canonical(&workspace);
    let env = &s.daemon.env;

    let output = env.run_agentctl(&["trust", "pkg/lib"]).await;
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(&format!("trusted {root}")), "{stdout}");

    let output = env.run_agentctl(&["--json", "untrust", "pkg"]).await;
    assert!(output.status.success(), "{output:?}");
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result, json!({"root": root, "wasTrusted": true}));

    let output = env.run_agentctl(&["untrust"]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("was not trusted"), "{stdout}");

    let output = env.run_agentctl(&["trust", "no/such/dir"]).await;
    assert!(!output.status.success(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not a directory"), "{stderr}");
}

/// Claude Code's project file, `.claude/settings.json`, is read with the same keys and under
/// the same trust rule: its deny applies at once, its allow only once the project is trusted.
#[tokio::test]
async fn claude_code_project_settings_follow_the_same_trust_rule() {
    let s = Scenario::start_with(Format::OpenAi, ASK).await;
    let workspace = s.workspace();
    std::fs::create_dir_all(workspace.join(".claude")).unwrap();
    std::fs::write(
        workspace.join(".claude/settings.json"),
        r#"{"permissions": {"allow": ["Bash(touch:*)"], "deny": ["Bash(rm:*)"]}, "env": {"X": "1"}}"#,
    )
    .unwrap();
    std::fs::write(workspace.join("victim.txt"), "keep").unwrap();

    s.mock.push(shell("c1", "rm victim.txt"));
    s.mock.push(shell("c2", "touch made.txt"));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "go").await;
    let (mut events, approval) = until_approval(&mut client).await;
    assert_eq!(approval.tool_call_id, "c2", "untrusted: touch asks");
    respond(&mut client, &approval.approval_id, "deny", None)
        .await
        .unwrap();
    events.extend(client.events_until_run_finished().await);
    let (output, is_error) = result_of(&events, "c1");
    assert!(is_error && output.contains("Bash(rm:*)"), "{output}");
    assert!(workspace.join("victim.txt").exists());

    let output = s.daemon.env.run_agentctl(&["trust"]).await;
    assert!(output.status.success(), "{output:?}");
    s.mock.push(shell("c3", "touch made.txt"));
    s.mock.push(Reply::text("done"));
    client.prompt(&session, "again").await;
    let events = client.events_until_run_finished().await;
    assert_eq!(requested(&events), [], "trusted: touch runs");
    assert!(workspace.join("made.txt").exists());
}
