//! "Deny always": an answer that refuses the call and adds a deny rule to the user config, so a
//! new session refuses such calls without asking (the daemon side of ACP's `reject_always`
//! and `agentctl deny --always`).

use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::approval::ApprovalDecision;
use protocol::event::RunStatus;

use crate::approvals::{ASK, requested, respond, result_of, shell, until_approval, user_config};

#[tokio::test]
async fn deny_always_writes_a_deny_rule_and_a_new_session_refuses_without_asking() {
    let s = Scenario::start_with(Format::OpenAi, ASK).await;
    s.mock.push(shell("c1", "touch never.txt"));
    s.mock.push(Reply::text("ok, not doing it"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "touch it").await;
    let (_, approval) = until_approval(&mut client).await;
    assert!(
        approval.options.contains(&ApprovalDecision::DenyAlways),
        "{:?}",
        approval.options
    );
    let answer = respond(&mut client, &approval.approval_id, "denyAlways", None)
        .await
        .unwrap();
    assert_eq!(answer["ruleAdded"], "run_shell(touch never.txt:*)");
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let (output, is_error) = result_of(&events, "c1");
    assert!(is_error && output.contains("denied"), "{output}");
    assert!(!s.workspace().join("never.txt").exists());

    let config = user_config(&s);
    assert_eq!(
        config["permissions"]["deny"],
        toml::Value::Array(vec!["run_shell(touch never.txt:*)".into()]),
        "{config:#?}"
    );

    // A new session of the same daemon is refused the same command without being asked.
    s.mock.push(shell("c2", "touch never.txt"));
    s.mock.push(Reply::text("refused again"));
    let (mut other, second) = s.session().await;
    other.prompt(&second, "touch it again").await;
    let events = other.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(
        requested(&events),
        [],
        "a remembered deny rule does not ask"
    );
    let (output, is_error) = result_of(&events, "c2");
    assert!(is_error, "{output}");
    assert!(!s.workspace().join("never.txt").exists());
}

#[tokio::test]
async fn deny_always_is_not_offered_for_a_broad_command_and_is_refused() {
    let s = Scenario::start_with(Format::OpenAi, ASK).await;
    s.mock.push(shell("c1", "bash -c 'touch broad.txt'"));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "run it").await;
    let (_, approval) = until_approval(&mut client).await;
    assert!(
        !approval.options.contains(&ApprovalDecision::DenyAlways),
        "{:?}",
        approval.options
    );
    let refused = respond(&mut client, &approval.approval_id, "denyAlways", None)
        .await
        .unwrap_err();
    assert!(
        refused.message.contains("denyAlways is not offered"),
        "{refused:?}"
    );
    respond(&mut client, &approval.approval_id, "deny", None)
        .await
        .unwrap();
    client.events_until_run_finished().await;
}
