//! Hooks in Claude Code's format, end to end: the user's `[hooks]` and a trusted project's
//! `.claude/settings.json` run their commands at the run's points, with the scripts the test
//! writes into its temp dirs; the mock LLM scripts the tool calls and records what the model is
//! sent next.

use std::path::{Path, PathBuf};

use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use protocol::event::{Event, RunStatus};
use serde_json::json;

use crate::security_trust::warnings;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A script beside the workspace (`$CLAUDE_PROJECT_DIR/..`), where user hooks find it.
fn script(s: &Scenario, name: &str, text: &str) -> PathBuf {
    let path = s.workspace().parent().unwrap().join(name);
    write(&path, text);
    path
}

/// `[[hooks.EVENT]]` running `sh $CLAUDE_PROJECT_DIR/../SCRIPT` for tools matching `matcher`.
fn user_hook(event: &str, matcher: &str, script: &str) -> String {
    format!(
        "[[hooks.{event}]]\nmatcher = \"{matcher}\"\nhooks = [{{ type = \"command\", command = 'sh \"$CLAUDE_PROJECT_DIR/../{script}\"' }}]\n"
    )
}

fn hook_outcomes(events: &[Envelope], wanted: &str) -> Vec<String> {
    events
        .iter()
        .filter_map(|envelope| match &envelope.event {
            Event::HookCompleted { event, outcome, .. } if event == wanted => Some(outcome.clone()),
            _ => None,
        })
        .collect()
}

fn tool_output(events: &[Envelope], call: &str) -> String {
    events
        .iter()
        .find_map(|envelope| match &envelope.event {
            Event::ToolCompleted {
                tool_call_id,
                output,
                ..
            } if tool_call_id == call => Some(output.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no toolCompleted for {call}"))
}

/// A PreToolUse hook that exits 2 stops write_file: nothing is written, and the model's next
/// request carries the hook's stderr as the call's result.
#[tokio::test]
async fn a_blocking_pre_tool_use_hook_stops_a_write_and_the_model_reads_why() {
    let s =
        Scenario::start_with(Format::OpenAi, &user_hook("PreToolUse", "Write", "deny.sh")).await;
    script(
        &s,
        "deny.sh",
        "cat > /dev/null\necho 'writes are frozen until Friday' >&2\nexit 2\n",
    );
    s.mock.push(Reply::tool_call(
        "c1",
        "write_file",
        json!({"path": "a.txt", "content": "x"}),
    ));
    s.mock.push(Reply::text("understood"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "write a.txt").await;
    let events = client.events_until_run_finished().await;
    assert!(
        !s.workspace().join("a.txt").exists(),
        "the write was blocked"
    );
    assert!(tool_output(&events, "c1").contains("writes are frozen until Friday"));
    assert_eq!(hook_outcomes(&events, "PreToolUse"), ["blocked"]);
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1].body.contains("writes are frozen until Friday"),
        "{}",
        requests[1].body
    );
}

/// `updatedInput` replaces a call's arguments: the write lands where the hook said.
#[tokio::test]
async fn updated_input_rewrites_a_call() {
    let s = Scenario::start_with(
        Format::OpenAi,
        &user_hook("PreToolUse", "write_file", "rewrite.sh"),
    )
    .await;
    script(
        &s,
        "rewrite.sh",
        r#"cat > /dev/null
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"path":"rewritten.txt","content":"from the hook"}}}'
"#,
    );
    s.mock.push(Reply::tool_call(
        "c1",
        "write_file",
        json!({"path": "a.txt", "content": "x"}),
    ));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "write").await;
    let events = client.events_until_run_finished().await;
    assert!(!s.workspace().join("a.txt").exists());
    assert_eq!(
        std::fs::read_to_string(s.workspace().join("rewritten.txt")).unwrap(),
        "from the hook",
        "{events:#?}"
    );
}

/// UserPromptSubmit's plain stdout joins the prompt the model is sent, and SessionStart's
/// context joins the session's first prompt only.
#[tokio::test]
async fn user_prompt_submit_and_session_start_add_context() {
    let config = format!(
        "{}{}",
        user_hook("UserPromptSubmit", "", "prompt.sh"),
        user_hook("SessionStart", "startup", "start.sh")
    );
    let s = Scenario::start_with(Format::OpenAi, &config).await;
    script(
        &s,
        "prompt.sh",
        "prompt=$(jq -r .prompt)\necho \"the build is green (you said: $prompt)\"\n",
    );
    script(
        &s,
        "start.sh",
        "cat > /dev/null\necho 'branch: main, 3 commits ahead'\n",
    );
    s.mock.push(Reply::text("ok"));
    s.mock.push(Reply::text("ok again"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "hello").await;
    let first = client.events_until_run_finished().await;
    client.prompt(&session, "second").await;
    client.events_until_run_finished().await;
    let requests = s.mock.requests();
    assert!(
        requests[0]
            .body
            .contains("the build is green (you said: hello)"),
        "{}",
        requests[0].body
    );
    assert!(requests[0].body.contains("branch: main, 3 commits ahead"));
    assert!(
        requests[1]
            .body
            .contains("the build is green (you said: second)")
    );
    assert_eq!(
        requests[1]
            .body
            .matches("branch: main, 3 commits ahead")
            .count(),
        1,
        "SessionStart's context went into the first prompt only"
    );
    assert_eq!(hook_outcomes(&first, "UserPromptSubmit"), ["success"]);
}

/// A Stop hook that blocks keeps the run going with its reason as the next user message, once:
/// asked again with `stop_hook_active`, its block is not honoured a second time.
#[tokio::test]
async fn a_stop_hook_keeps_the_run_going_exactly_once() {
    let s = Scenario::start_with(Format::OpenAi, &user_hook("Stop", "", "stop.sh")).await;
    let seen = s.workspace().parent().unwrap().join("stop-seen");
    script(
        &s,
        "stop.sh",
        &format!(
            "jq -r .stop_hook_active >> '{}'\necho 'run the tests first' >&2\nexit 2\n",
            seen.display()
        ),
    );
    s.mock.push(Reply::text("done"));
    s.mock.push(Reply::text("tests pass, done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "fix it").await;
    let events = client.events_until_run_finished().await;
    assert!(matches!(
        events.last().unwrap().event,
        Event::RunFinished {
            status: RunStatus::Completed,
            ..
        }
    ));
    let requests = s.mock.requests();
    assert_eq!(requests.len(), 2, "one more model call, not more");
    assert!(requests[1].body.contains("run the tests first"));
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), "false\ntrue\n");
    assert_eq!(hook_outcomes(&events, "Stop"), ["blocked", "blocked"]);
}

/// A hook's allow never lifts a deny rule; a hook that crashes or prints junk is a warning and
/// the call goes on.
#[tokio::test]
async fn a_hooks_allow_does_not_lift_a_deny_rule_and_a_broken_hook_is_only_a_warning() {
    let config = format!(
        "{}{}[permissions]\ndefault_mode = \"bypass\"\ndeny = [\"Bash(rm:*)\"]\n",
        user_hook("PreToolUse", "Bash", "allow.sh"),
        user_hook("PreToolUse", "Write", "junk.sh")
    );
    let s = Scenario::start_with(Format::OpenAi, &config).await;
    script(
        &s,
        "allow.sh",
        "cat > /dev/null\necho '{\"hookSpecificOutput\":{\"permissionDecision\":\"allow\"}}'\n",
    );
    script(&s, "junk.sh", "cat > /dev/null\necho '{oops'\nexit 0\n");
    std::fs::write(s.workspace().join("keep.txt"), "keep").unwrap();
    s.mock.push(Reply::tool_calls(vec![
        (
            "c1",
            "run_shell",
            json!({"command": "rm keep.txt"}).to_string(),
        ),
        (
            "c2",
            "write_file",
            json!({"path": "b.txt", "content": "y"}).to_string(),
        ),
    ]));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "go").await;
    let events = client.events_until_run_finished().await;
    assert!(
        s.workspace().join("keep.txt").exists(),
        "the deny rule held"
    );
    assert!(tool_output(&events, "c1").contains("permission denied"));
    assert_eq!(
        std::fs::read_to_string(s.workspace().join("b.txt")).unwrap(),
        "y"
    );
    let warned = warnings(&events);
    assert!(
        warned
            .iter()
            .any(|w| w.contains("junk.sh") && w.contains("not a JSON object")),
        "{warned:?}"
    );
}

/// Claude Code's own example of a Bash validator (jq, exit 2), unchanged, in a trusted
/// project's `.claude/settings.json` with `$CLAUDE_PROJECT_DIR`.
const CLAUDE_CODE_VALIDATOR: &str = r#"#!/bin/bash
COMMAND=$(jq -r '.tool_input.command')
if echo "$COMMAND" | grep -q 'git push'; then
  echo "Blocked: pushing is not allowed from the agent" >&2
  exit 2
fi
exit 0
"#;

const PROJECT_SETTINGS: &str = r#"{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          { "type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/validate-bash.sh", "timeout": 30 }
        ]
      }
    ]
  }
}"#;

fn project_with_validator(workspace: &Path) -> PathBuf {
    let script = workspace.join(".claude/hooks/validate-bash.sh");
    write(&script, CLAUDE_CODE_VALIDATOR);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let settings = workspace.join(".claude/settings.json");
    write(&settings, PROJECT_SETTINGS);
    settings
}

async fn run_shell_line(s: &Scenario, call: &str, command: &str) -> Vec<Envelope> {
    s.mock.push(Reply::tool_call(
        call,
        "run_shell",
        json!({"command": command}),
    ));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "go").await;
    client.events_until_run_finished().await
}

#[tokio::test]
async fn an_unchanged_claude_code_hook_script_blocks_in_a_trusted_project() {
    let s = Scenario::start(Format::OpenAi).await;
    project_with_validator(&s.workspace());
    let trusted = s.daemon.env.run_agentctl(&["trust"]).await;
    assert!(trusted.status.success(), "{trusted:?}");
    let events = run_shell_line(&s, "c1", "echo git push origin main").await;
    let output = tool_output(&events, "c1");
    assert!(
        output.contains("Blocked: pushing is not allowed from the agent"),
        "{output}"
    );
    assert_eq!(hook_outcomes(&events, "PreToolUse"), ["blocked"]);
    let events = run_shell_line(&s, "c2", "echo fine").await;
    assert!(tool_output(&events, "c2").contains("fine"));
    assert_eq!(hook_outcomes(&events, "PreToolUse"), ["success"]);
}

/// A project's hooks are new code from the repository: untrusted, they do not run (a warning
/// says why); changed after the trust, they do not run until trusted again.
#[tokio::test]
async fn an_untrusted_or_changed_projects_hooks_do_not_run() {
    let s = Scenario::start(Format::OpenAi).await;
    let settings = project_with_validator(&s.workspace());
    let events = run_shell_line(&s, "c1", "echo git push").await;
    assert!(tool_output(&events, "c1").contains("git push"), "it ran");
    assert!(hook_outcomes(&events, "PreToolUse").is_empty());
    assert!(
        warnings(&events)
            .iter()
            .any(|w| w.contains("is not trusted") && w.contains("hook(s) do not run")),
        "{:?}",
        warnings(&events)
    );

    let trusted = s.daemon.env.run_agentctl(&["trust"]).await;
    assert!(trusted.status.success(), "{trusted:?}");
    let events = run_shell_line(&s, "c2", "echo git push").await;
    assert!(tool_output(&events, "c2").contains("Blocked"));

    // Changed behind the user's back: it waits for a review and a new trust.
    write(
        &settings,
        &PROJECT_SETTINGS.replace("\"timeout\": 30", "\"timeout\": 31"),
    );
    let events = run_shell_line(&s, "c3", "echo git push").await;
    assert!(!tool_output(&events, "c3").contains("Blocked"));
    assert!(hook_outcomes(&events, "PreToolUse").is_empty());
    assert!(
        warnings(&events)
            .iter()
            .any(|w| w.contains("changed since you trusted")),
        "{:?}",
        warnings(&events)
    );
}

/// A subagent definition of the user's brings hooks active while that subagent runs (its
/// PreToolUse blocks the child's write, and the child's next request reads why); the same
/// definition in the project brings them only while trust pins its content. The parent's
/// SubagentStart hook is recorded in the parent's log, and its context reaches the child.
#[tokio::test]
async fn a_subagent_definition_brings_its_hooks_a_projects_only_while_trusted() {
    const WRITER: &str = "---\nname: writer\ndescription: Writes files\ntools: write_file\nhooks: '{\"PreToolUse\": [{\"matcher\": \"write_file\", \"hooks\": [{\"type\": \"command\", \"command\": \"cat > /dev/null; echo the writer may not write >&2; exit 2\"}]}]}'\n---\nYou write files.";
    let s = Scenario::start_with(
        Format::OpenAi,
        &user_hook("SubagentStart", "writer", "subagent.sh"),
    )
    .await;
    script(
        &s,
        "subagent.sh",
        "cat > /dev/null\necho '{\"hookSpecificOutput\":{\"hookEventName\":\"SubagentStart\",\"additionalContext\":\"the child hears this\"}}'\n",
    );
    let run_writer = |call: &str| {
        s.mock.push(Reply::tool_call(
            format!("task_{call}"),
            "task",
            json!({"prompt": "write it", "agentType": "writer"}),
        ));
        s.mock.push(Reply::tool_call(
            call,
            "write_file",
            json!({"path": format!("{call}.txt"), "content": "x"}),
        ));
        s.mock.push(Reply::text("the child is done"));
        s.mock.push(Reply::text("the parent is done"));
    };

    write(
        &s.daemon.env.path("config").join("agentd/agents/writer.md"),
        WRITER,
    );
    run_writer("c1");
    let (mut client, session) = s.session().await;
    client.prompt(&session, "delegate").await;
    let events = client.events_until_run_finished().await;
    assert!(
        !s.workspace().join("c1.txt").exists(),
        "the child's hook blocked it"
    );
    let requests = s.mock.requests();
    assert!(
        requests[2].body.contains("the writer may not write"),
        "{}",
        requests[2].body
    );
    assert_eq!(hook_outcomes(&events, "SubagentStart"), ["success"]);
    assert!(
        requests[1].body.contains("the child hears this"),
        "SubagentStart's context reaches the child: {}",
        requests[1].body
    );

    // The same definition from the project: its hooks do not run.
    std::fs::remove_file(s.daemon.env.path("config").join("agentd/agents/writer.md")).unwrap();
    write(&s.workspace().join(".agents/agents/writer.md"), WRITER);
    run_writer("c2");
    client.prompt(&session, "delegate again").await;
    client.events_until_run_finished().await;
    assert!(
        s.workspace().join("c2.txt").exists(),
        "an untrusted project definition's hooks do not run"
    );

    // Trusted, the project's definition brings its hooks while its content is the one trusted.
    client
        .request(
            "project/trust",
            json!({"path": s.workspace().display().to_string()}),
        )
        .await
        .unwrap();
    run_writer("c3");
    client.prompt(&session, "delegate, trusted").await;
    client.events_until_run_finished().await;
    assert!(
        !s.workspace().join("c3.txt").exists(),
        "a trusted project definition's hook blocked it"
    );
    write(
        &s.workspace().join(".agents/agents/writer.md"),
        &format!(
            "{WRITER}
Changed after trust."
        ),
    );
    run_writer("c4");
    client.prompt(&session, "delegate, changed").await;
    client.events_until_run_finished().await;
    assert!(
        s.workspace().join("c4.txt").exists(),
        "a definition changed since trust brings no hooks"
    );
}

/// SessionEnd hooks run when a session is deleted and, for the loaded sessions, when the daemon
/// stops; each is told why (`reason`).
#[tokio::test]
async fn session_end_hooks_run_at_delete_and_at_shutdown() {
    let mut s = Scenario::start_with(Format::OpenAi, &user_hook("SessionEnd", "", "end.sh")).await;
    let ends = s.workspace().parent().unwrap().join("ends");
    script(
        &s,
        "end.sh",
        &format!(
            "jq -r '.reason + \" \" + .session_id' >> '{}'\n",
            ends.display()
        ),
    );
    let (mut client, deleted) = s.session().await;
    let (_, kept) = s.session().await;
    client
        .request("session/delete", json!({"sessionId": deleted}))
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(&ends).unwrap(),
        format!("delete {deleted}\n")
    );
    client.request("daemon/shutdown", json!({})).await.unwrap();
    s.daemon.wait_exit().await;
    assert_eq!(
        std::fs::read_to_string(&ends).unwrap(),
        format!("delete {deleted}\nshutdown {kept}\n")
    );
}

/// A PermissionRequest hook answers an approval the rules would ask (allow: no prompt), and a
/// Notification hook hears of the approval that does go out, while it waits.
#[tokio::test]
async fn permission_request_hooks_answer_prompts_and_notification_hooks_hear_of_the_rest() {
    use crate::approvals::{ASK, respond, shell, until_approval};
    let config = format!(
        "{}{}{ASK}",
        user_hook("PermissionRequest", "Bash", "permission.sh"),
        user_hook("Notification", "", "notify.sh")
    );
    let s = Scenario::start_with(Format::OpenAi, &config).await;
    let notified = s.workspace().parent().unwrap().join("notified");
    script(
        &s,
        "permission.sh",
        r#"case "$(jq -r .tool_input.command)" in
  *allowed*) echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}' ;;
esac
"#,
    );
    script(
        &s,
        "notify.sh",
        &format!("jq -r .message >> '{}'\n", notified.display()),
    );
    s.mock.push(shell("c1", "touch allowed.txt"));
    s.mock.push(shell("c2", "touch asked.txt"));
    s.mock.push(Reply::text("done"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "go").await;
    let (mut events, approval) = until_approval(&mut client).await;
    assert_eq!(
        approval.tool_call_id, "c2",
        "the hook allowed c1 without a prompt"
    );
    assert!(s.workspace().join("allowed.txt").exists());
    events.extend(
        client
            .persisted_events_until(|event| {
                matches!(event, Event::HookCompleted { event, .. } if event == "Notification")
            })
            .await,
    );
    assert_eq!(
        std::fs::read_to_string(&notified).unwrap(),
        "agentd needs your permission to use run_shell\n"
    );
    respond(&mut client, &approval.approval_id, "deny", None)
        .await
        .unwrap();
    events.extend(client.events_until_run_finished().await);
    assert!(!s.workspace().join("asked.txt").exists());
    assert_eq!(
        hook_outcomes(&events, "PermissionRequest"),
        ["success", "success"]
    );
}

/// A UserPromptSubmit hook that takes its time holds only its run: the session's actor goes on
/// answering (`session/update` goes through it) while the hook runs, and the prompt reaches the
/// model once the hook is done, with the hook's context.
#[tokio::test]
async fn a_slow_prompt_hook_does_not_hold_the_session() {
    let s = Scenario::start_with(
        Format::OpenAi,
        &user_hook("UserPromptSubmit", "", "slow.sh"),
    )
    .await;
    let release = s.workspace().parent().unwrap().join("release");
    // The hook waits for the test's word (a file), then adds its context.
    script(
        &s,
        "slow.sh",
        "cat > /dev/null\nwhile [ ! -e \"$CLAUDE_PROJECT_DIR/../release\" ]; do sleep 0.02; done\necho 'released by the test'\n",
    );
    s.mock.push(Reply::text("ok"));
    let (mut client, session) = s.session().await;
    client.prompt(&session, "hello").await;
    let updated = client
        .request(
            "session/update",
            json!({"sessionId": session, "title": "while the hook runs"}),
        )
        .await
        .expect("the actor answers while the prompt's hook runs");
    assert_eq!(
        updated["session"]["title"], "while the hook runs",
        "{updated}"
    );
    assert!(!release.exists());
    assert_eq!(
        s.mock.requests().len(),
        0,
        "the prompt went out before its hook ended"
    );
    std::fs::write(&release, "").unwrap();
    let events = client.events_until_run_finished().await;
    assert_eq!(run_status(&events), RunStatus::Completed);
    let requests = s.mock.requests();
    assert!(
        requests[0].body.contains("released by the test"),
        "{}",
        requests[0].body
    );
}
