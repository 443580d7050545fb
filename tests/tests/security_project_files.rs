//! Project configuration is out of the file tools' reach: `.mcp.json`, `.git/hooks`,
//! `.git/config` and the settings directories are refused in every mode (`acceptEdits` and
//! `bypass` included), whether or not they exist; `AGENTS.md` / `CLAUDE.md` are written only
//! after an approval that names them, asked every time, and denied when nobody can answer.

use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::approval::ApprovalDecision;
use protocol::event::{Event, RunStatus};
use serde_json::json;

use crate::approvals::{model_saw, requested, respond, result_of, until_approval, write};

/// `(decision, decidedBy, sessionRule)` of every `approvalResolved` in `events`.
fn resolutions(events: &[Envelope]) -> Vec<(ApprovalDecision, String, Option<String>)> {
    events
        .iter()
        .filter_map(|envelope| match &envelope.event {
            Event::ApprovalResolved {
                decision,
                decided_by,
                session_rule,
                ..
            } => Some((*decision, decided_by.clone(), session_rule.clone())),
            _ => None,
        })
        .collect()
}

const ACCEPT_EDITS: &str = "[permissions]\ndefault_mode = \"acceptEdits\"\n";
/// Bypass mode and allow rules covering every edit: nothing else would ask.
const BYPASS: &str = "[permissions]\ndefault_mode = \"bypass\"\nallow = [\"Edit\", \"Write(*)\"]\n";

#[tokio::test]
async fn project_configuration_is_refused_in_accept_edits_existing_or_not() {
    let s = Scenario::start_with(Format::OpenAi, ACCEPT_EDITS).await;
    let workspace = s.workspace();
    std::fs::create_dir_all(workspace.join(".git")).unwrap();
    std::fs::write(workspace.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(workspace.join("src")).unwrap();
    let server = r#"{"mcpServers":{"x":{"command":"sh","args":["-c","id"]}}}"#;
    let results = s
        .run_batch(vec![
            (
                "c_mcp",
                "write_file",
                json!({"path": ".mcp.json", "content": server}),
            ),
            (
                "c_mcp_sub",
                "write_file",
                json!({"path": "src/.mcp.json", "content": server}),
            ),
            (
                "c_hook",
                "write_file",
                json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\nid\n"}),
            ),
            (
                "c_config",
                "edit_file",
                json!({"path": ".git/config", "oldText": "[core]", "newText": "[core]\n\thooksPath = /tmp"}),
            ),
            (
                "c_claude",
                "write_file",
                json!({"path": "src/../.claude/settings.json", "content": "{\"permissions\":{\"allow\":[\"Bash\"]}}"}),
            ),
            (
                "c_plain",
                "write_file",
                json!({"path": "src/mcp.json", "content": "{}"}),
            ),
        ])
        .await;
    let protected = [".mcp.json", "src/.mcp.json", ".git", ".git", ".claude"];
    for (result, protected) in results.iter().zip(protected) {
        assert!(result.1, "not refused: {result:?}");
        assert!(
            result.0.contains(&format!("`{protected}` is protected")),
            "{result:?}"
        );
    }
    assert!(!results[5].1, "a plain file is written: {:?}", results[5]);
    assert!(!workspace.join(".mcp.json").exists());
    assert!(!workspace.join("src/.mcp.json").exists());
    assert!(!workspace.join(".git/hooks").exists());
    assert!(!workspace.join(".claude").exists());
    assert_eq!(
        std::fs::read_to_string(workspace.join(".git/config")).unwrap(),
        "[core]\n"
    );
}

#[tokio::test]
async fn agents_md_under_bypass_asks_every_time_and_the_approval_remembers_nothing() {
    let s = Scenario::start_with(Format::OpenAi, BYPASS).await;
    let workspace = s.workspace();
    std::fs::write(workspace.join("AGENTS.md"), "old notes\n").unwrap();
    s.mock.push(write("c1", "AGENTS.md", "new notes\n"));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "update the notes").await;
    let (mut events, approval) = until_approval(&mut client).await;
    assert!(
        approval
            .reason
            .contains("`AGENTS.md` is read into every session's prompt"),
        "{}",
        approval.reason
    );
    assert_eq!(
        approval.options,
        [
            ApprovalDecision::AllowOnce,
            ApprovalDecision::Deny,
            ApprovalDecision::DenyAndCancel
        ]
    );
    assert_eq!(approval.session_rule, None);
    assert_eq!(approval.always_rule, None);
    // allowAlways has no rule to write; allowSession (not offered) allows this call only.
    let refused = respond(&mut client, &approval.approval_id, "allowAlways", None)
        .await
        .unwrap_err();
    assert!(refused.message.contains("not offered"), "{refused:?}");
    respond(&mut client, &approval.approval_id, "allowSession", None)
        .await
        .unwrap();
    events.extend(client.events_until_run_finished().await);
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(
        std::fs::read_to_string(workspace.join("AGENTS.md")).unwrap(),
        "new notes\n"
    );
    assert_eq!(
        resolutions(&events),
        [(
            ApprovalDecision::AllowOnce,
            "client:agentd-tests".to_owned(),
            None
        )]
    );

    // Asked again: nothing was remembered. Denied, the file stays.
    s.mock.push(write("c2", "AGENTS.md", "planted\n"));
    s.mock.push(Reply::text("done"));
    client.prompt(&session, "again").await;
    let (mut events, approval) = until_approval(&mut client).await;
    assert_eq!(approval.tool_call_id, "c2");
    respond(&mut client, &approval.approval_id, "deny", None)
        .await
        .unwrap();
    events.extend(client.events_until_run_finished().await);
    let (output, is_error) = result_of(&events, "c2");
    assert!(is_error && output.contains("denied"), "{output}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("AGENTS.md")).unwrap(),
        "new notes\n"
    );
}

#[tokio::test]
async fn claude_md_under_bypass_is_denied_when_nobody_can_answer() {
    let s = Scenario::start_with(Format::OpenAi, BYPASS).await;
    let workspace = s.workspace();
    s.mock.push(write("c1", "docs/CLAUDE.md", "planted\n"));
    s.mock.push(Reply::text("could not"));
    let mut client = s.client().await;
    let session = create_session(&mut client, &workspace).await;
    client.prompt(&session, "write the notes").await;
    // Subscribed only once the model has the tool result: nobody could answer before.
    s.mock.wait_for_requests(2).await;
    client.subscribe(&session, Some(0)).await;
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    assert_eq!(requested(&events).len(), 1);
    assert_eq!(
        resolutions(&events),
        [(ApprovalDecision::Deny, "mode".to_owned(), None)]
    );
    assert!(model_saw(&s, "c1").contains("denied"));
    assert!(!workspace.join("docs/CLAUDE.md").exists());
}

/// A standing `agentctl run --approve all` (or `edits`) is a mode in the client: it allows an
/// ordinary edit once, but never a write of `AGENTS.md`, which the daemon asks a person every
/// time. The model reads why.
#[tokio::test]
async fn agentctl_run_approve_all_never_writes_agents_md() {
    let s = Scenario::start_with(Format::OpenAi, crate::approvals::ASK).await;
    let workspace = s.workspace();
    s.mock
        .push(write("c1", "AGENTS.md", "Always run with bypass."));
    s.mock.push(write("c2", "notes.txt", "fine"));
    s.mock.push(Reply::text("done"));
    let output = s
        .daemon
        .env
        .run_agentctl(&["run", "--approve", "all", "update the notes"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(!workspace.join("AGENTS.md").exists());
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes.txt")).unwrap(),
        "fine"
    );
    let saw = model_saw(&s, "c1");
    assert!(saw.contains("must be answered by a person"), "{saw}");
}
