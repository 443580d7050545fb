//! Output redirection (`>`, `>>`, `&>`, `2>`) and `tee FILE` are writes: a target outside the
//! workspace (or protected, or unknowable before the command runs) asks in every mode but
//! bypass, and an allow rule for the command does not cover it.

use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::event::RunStatus;

use crate::approvals::{requested, respond, result_of, shell, started, until_approval};

/// Shell commands ask unless a rule allows them; `echo` and `tee` are allowed by a rule.
const ALLOW_ECHO: &str = "[permissions]\n\
     default_mode = \"default\"\n\
     allow = [\"Bash(echo:*)\", \"Bash(tee:*)\"]\n";

both_formats!(an_allow_rule_for_the_command_does_not_cover_a_redirect_outside_the_workspace);
async fn an_allow_rule_for_the_command_does_not_cover_a_redirect_outside_the_workspace(
    format: Format,
) {
    let s = Scenario::start_with(format, ALLOW_ECHO).await;
    let outside = s.daemon.env.path("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let profile = outside.join("profile");
    s.mock.push(Reply::tool_calls(vec![
        (
            "c1",
            "run_shell",
            serde_json::json!({"command": "echo inside > inside.txt"}).to_string(),
        ),
        (
            "c2",
            "run_shell",
            serde_json::json!({"command": format!("echo pwned >> {}", profile.display())})
                .to_string(),
        ),
    ]));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "write").await;
    let (mut events, approval) = until_approval(&mut client).await;
    assert_eq!(approval.tool_call_id, "c2", "only the write outside asks");
    assert!(
        approval.reason.contains("outside the workspace")
            && approval.reason.contains("does not cover"),
        "{}",
        approval.reason
    );
    respond(&mut client, &approval.approval_id, "deny", None)
        .await
        .unwrap();
    events.extend(client.events_until_run_finished().await);

    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(requested(&events).len(), 1);
    assert!(started(&events, "c1"), "{:?}", result_of(&events, "c1"));
    assert_eq!(
        std::fs::read_to_string(s.workspace().join("inside.txt")).unwrap(),
        "inside\n"
    );
    assert!(!started(&events, "c2"));
    assert!(!profile.exists());
}

both_formats!(tee_and_redirects_into_protected_dirs_ask_in_accept_edits_mode);
async fn tee_and_redirects_into_protected_dirs_ask_in_accept_edits_mode(format: Format) {
    let s = Scenario::start_with(
        format,
        "[permissions]\n\
         default_mode = \"acceptEdits\"\n\
         allow = [\"Bash(echo:*)\", \"Bash(tee:*)\"]\n",
    )
    .await;
    let outside = s.daemon.env.path("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let hosts = outside.join("hosts");
    s.mock.push(shell(
        "c1",
        &format!("echo 10.0.0.1 evil | tee -a {}", hosts.display()),
    ));
    s.mock.push(shell(
        "c2",
        r#"echo '{"permissions":{"allow":["Bash"]}}' > .agents/settings.json"#,
    ));
    s.mock.push(shell("c3", "echo fine | tee notes.txt"));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "write").await;
    let mut events = Vec::new();
    for (call, fragment) in [
        ("c1", "outside the workspace"),
        ("c2", "protected `.agents`"),
    ] {
        let (seen, approval) = until_approval(&mut client).await;
        events.extend(seen);
        assert_eq!(approval.tool_call_id, call);
        assert!(approval.reason.contains(fragment), "{}", approval.reason);
        respond(&mut client, &approval.approval_id, "deny", None)
            .await
            .unwrap();
    }
    events.extend(client.events_until_run_finished().await);

    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(
        requested(&events).len(),
        2,
        "tee inside the workspace does not ask"
    );
    assert!(!hosts.exists());
    assert!(!s.workspace().join(".agents/settings.json").exists());
    assert!(started(&events, "c3"));
    assert_eq!(
        std::fs::read_to_string(s.workspace().join("notes.txt")).unwrap(),
        "fine\n"
    );
}

both_formats!(bypass_mode_writes_outside_the_workspace_without_asking);
async fn bypass_mode_writes_outside_the_workspace_without_asking(format: Format) {
    let s = Scenario::start_with(format, "[permissions]\ndefault_mode = \"bypass\"\n").await;
    let outside = s.daemon.env.path("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let log = outside.join("build.log");
    s.mock
        .push(shell("c1", &format!("echo built >> {}", log.display())));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "build").await;
    let events = client.events_until_run_finished().await;

    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(requested(&events), []);
    assert!(started(&events, "c1"));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "built\n");
}

both_formats!(an_edit_deny_rule_covers_a_redirect_into_the_denied_path_even_in_bypass);
async fn an_edit_deny_rule_covers_a_redirect_into_the_denied_path_even_in_bypass(format: Format) {
    let s = Scenario::start_with(
        format,
        "[permissions]\ndefault_mode = \"bypass\"\ndeny = [\"Edit(./secrets/**)\"]\n",
    )
    .await;
    std::fs::create_dir_all(s.workspace().join("secrets")).unwrap();
    s.mock.push(shell("c1", "echo leaked | tee secrets/key"));
    s.mock.push(shell("c2", "echo fine > notes.txt"));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "write").await;
    let events = client.events_until_run_finished().await;

    assert_eq!(run_status(&events), RunStatus::Completed);
    let (output, is_error) = result_of(&events, "c1");
    assert!(
        is_error && output.contains("Edit(./secrets/**)"),
        "{output}"
    );
    assert!(!started(&events, "c1"));
    assert!(!s.workspace().join("secrets/key").exists());
    assert!(started(&events, "c2"));
}
