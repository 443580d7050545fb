//! `agentctl approvals list`, `approve` and `deny` against the fake daemon: the params they
//! send for approvals and budget pauses, and the daemon's refusals passed on.

use super::*;

/// Run an approvals command against `daemon`.
async fn approvals_command(daemon: &FakeDaemon, command: &str) -> Result<(), CommandError> {
    let ctx = daemon.context();
    let call = async {
        match command {
            "list" => crate::commands::approvals::list(&ctx, Some("ses_1".to_owned())).await,
            "approve --session" => {
                crate::commands::approvals::respond(
                    &ctx,
                    "apr_1".to_owned(),
                    crate::commands::approvals::Answer::approve(true, false, None),
                )
                .await
            }
            "deny --cancel --reason" => {
                crate::commands::approvals::respond(
                    &ctx,
                    "apr_1".to_owned(),
                    crate::commands::approvals::Answer::deny(
                        true,
                        false,
                        Some("not now".to_owned()),
                    ),
                )
                .await
            }
            "approve bud_1 --limit 500" => {
                crate::commands::approvals::respond(
                    &ctx,
                    "bud_1".to_owned(),
                    crate::commands::approvals::Answer::approve(false, false, Some(500.0)),
                )
                .await
            }
            "deny 1" => {
                crate::commands::approvals::respond(
                    &ctx,
                    "1".to_owned(),
                    crate::commands::approvals::Answer::deny(false, false, None),
                )
                .await
            }
            "deny bud_1 --cancel" => {
                crate::commands::approvals::respond(
                    &ctx,
                    "bud_1".to_owned(),
                    crate::commands::approvals::Answer::deny(true, false, None),
                )
                .await
            }
            other => panic!("unknown command {other}"),
        }
    };
    tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .unwrap()
}

#[tokio::test]
async fn approvals_list_approve_and_deny_send_the_right_params() {
    let daemon = FakeDaemon::start(Script::default());
    approvals_command(&daemon, "list").await.unwrap();
    assert_eq!(
        daemon.params("approval/list"),
        json!({"sessionId": "ses_1"})
    );
    assert_eq!(daemon.params("budget/list"), json!({"sessionId": "ses_1"}));
    assert_eq!(
        daemon.params("initialize")["capabilities"],
        json!({"approvals": false}),
        "one-shot commands do not subscribe, and declare nothing"
    );

    let daemon = FakeDaemon::start(Script::default());
    approvals_command(&daemon, "approve --session")
        .await
        .unwrap();
    assert_eq!(
        daemon.params("approval/respond"),
        json!({"approvalId": "apr_1", "decision": "allowSession"})
    );

    let daemon = FakeDaemon::start(Script::default());
    approvals_command(&daemon, "deny --cancel --reason")
        .await
        .unwrap();
    assert_eq!(
        daemon.params("approval/respond"),
        json!({"approvalId": "apr_1", "decision": "denyAndCancel", "reason": "not now"})
    );
}

/// A budget pause is answered by `approve` (continue, `--limit`) and `deny` (stop); a bare
/// prefix finds it among the approvals and pauses; an approval's flag is refused for it.
#[tokio::test]
async fn approve_and_deny_answer_a_budget_pause() {
    let daemon = FakeDaemon::start(Script::default());
    approvals_command(&daemon, "approve bud_1 --limit 500")
        .await
        .unwrap();
    assert_eq!(
        daemon.params("budget/respond"),
        json!({"requestId": "bud_1", "decision": "continue", "newLimit": 500.0})
    );

    // `1` names apr_1 and bud_1 alike.
    let daemon = FakeDaemon::start(Script::default());
    let ambiguous = approvals_command(&daemon, "deny 1").await.unwrap_err();
    assert_eq!(ambiguous.code, crate::output::EXIT_USAGE);
    assert!(
        ambiguous.message.contains("  apr_1\n  bud_1"),
        "{}",
        ambiguous.message
    );
    assert!(daemon.all_params("budget/respond").is_empty());

    let daemon = FakeDaemon::start(Script::default());
    let refused = approvals_command(&daemon, "deny bud_1 --cancel")
        .await
        .unwrap_err();
    assert_eq!(refused.code, crate::output::EXIT_USAGE);
    assert!(
        refused.message.contains("--cancel answers an approval"),
        "{}",
        refused.message
    );
    assert!(daemon.all_params("budget/respond").is_empty());
}

#[tokio::test]
async fn approve_fails_with_the_daemons_message_when_already_decided_or_unknown() {
    for (code, text) in [
        (
            -32008,
            "approval apr_1 was already decided (allowOnce by client:zed)",
        ),
        (-32005, "no pending approval apr_1"),
    ] {
        let daemon = FakeDaemon::start(Script {
            errors: HashMap::from([("approval/respond", (code, text))]),
            ..Script::default()
        });
        let err = approvals_command(&daemon, "approve --session")
            .await
            .unwrap_err();
        assert_eq!(err.code, 1);
        assert_eq!(err.message, text);
    }
}
