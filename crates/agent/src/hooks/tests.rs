//! The hook decision table (exit codes, JSON answers, plain output, junk), matchers, the
//! config shape's problems, and real runs of `sh` (stdin, timeout killing the group, floods).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::json;

use super::decision::decide;
use super::runner::{Ending, Ran};
use super::*;
use crate::intercept::Permission;
use crate::sink::RunLog;
use agentd_core::conversation::{ContextChange, Message, ToolCall};

fn hook(event: HookEvent, matcher: &str, command: &str) -> HookDef {
    let value = json!({ event.name(): [{"matcher": matcher, "hooks": [{"type": "command", "command": command, "timeout": 5}]}] });
    let source = Arc::new(HookSource::Config(PathBuf::from("/config.toml")));
    let (mut hooks, problems) = parse_section(&value, &source);
    assert_eq!(problems, []);
    hooks.remove(0)
}

fn ran(code: i32, stdout: &str, stderr: &str) -> Ran {
    Ran {
        ending: Ending::Exited(Some(code)),
        stdout: stdout.to_owned(),
        stderr: stderr.to_owned(),
        stdout_cut: false,
        stderr_cut: false,
    }
}

/// What one hook's ending says at `event`: (status, block, permission, context, warnings).
fn check(event: HookEvent, ending: Ran) -> (String, Outcome) {
    let decided = decide(event, &hook(event, "", "check.sh"), &ending);
    (decided.status.to_owned(), decided.outcome)
}

#[test]
fn exit_codes_block_warn_or_pass() {
    use HookEvent::*;
    let (status, outcome) = check(PreToolUse, ran(2, "", "no writes here\n"));
    assert_eq!(status, "blocked");
    assert_eq!(outcome.block.as_deref(), Some("no writes here"));

    let (status, outcome) = check(PreToolUse, ran(1, "", "oops"));
    assert_eq!(status, "error");
    assert_eq!(outcome.block, None);
    assert!(
        outcome.warnings[0].contains("exit code 1: oops"),
        "{outcome:?}"
    );

    let (status, outcome) = check(PreToolUse, ran(0, "", ""));
    assert_eq!(
        (status.as_str(), outcome.block, outcome.permission),
        ("success", None, None)
    );

    // Exit 2 where nothing can be blocked is a warning, not a block.
    let (status, outcome) = check(Notification, ran(2, "", "ignored"));
    assert_eq!((status.as_str(), outcome.block), ("error", None));
    assert!(outcome.warnings[0].contains("ignored"));

    // Exit 2 with nothing on stderr still blocks, naming the hook.
    let (_, outcome) = check(Stop, ran(2, "", ""));
    assert!(outcome.block.unwrap().contains("check.sh"));

    let timed_out = Ran {
        ending: Ending::TimedOut,
        ..ran(0, "", "")
    };
    let (status, outcome) = check(PreToolUse, timed_out);
    assert_eq!(status, "timeout");
    assert_eq!(outcome.block, None);
    assert!(outcome.warnings[0].contains("timed out"));

    let killed = Ran {
        ending: Ending::Exited(None),
        ..ran(0, "", "")
    };
    assert_eq!(check(PreToolUse, killed).0, "error");
}

#[test]
fn json_answers_are_read_as_claude_code_writes_them() {
    use HookEvent::*;
    let deny = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"not in src"}}"#;
    let (status, outcome) = check(PreToolUse, ran(0, deny, ""));
    assert_eq!(status, "blocked");
    assert_eq!(
        outcome.permission,
        Some(Permission::Deny("not in src".into()))
    );

    let ask =
        r#"{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"check"}}"#;
    assert_eq!(
        check(PreToolUse, ran(0, ask, "")).1.permission,
        Some(Permission::Ask("check".into()))
    );
    let allow =
        r#"{"hookSpecificOutput":{"permissionDecision":"allow"},"updatedInput":{"path":"b"}}"#;
    let (_, outcome) = check(PreToolUse, ran(0, allow, ""));
    assert_eq!(outcome.permission, Some(Permission::Allow));
    assert_eq!(outcome.updated_input, Some(json!({"path": "b"})));
    let nested =
        r#"{"hookSpecificOutput":{"updatedInput":{"path":"c"},"additionalContext":"ctx"}}"#;
    let (_, outcome) = check(PreToolUse, ran(0, nested, ""));
    assert_eq!(outcome.updated_input, Some(json!({"path": "c"})));
    assert_eq!(outcome.context, ["ctx"]);

    let block = r#"{"decision":"block","reason":"tests fail"}"#;
    let (status, outcome) = check(Stop, ran(0, block, ""));
    assert_eq!(
        (status.as_str(), outcome.block.as_deref()),
        ("blocked", Some("tests fail"))
    );

    let halt = r#"{"continue":false,"stopReason":"enough","systemMessage":"hello user","suppressOutput":true}"#;
    let (_, outcome) = check(PostToolUse, ran(0, halt, ""));
    assert_eq!(outcome.halt.as_deref(), Some("enough"));
    assert_eq!(outcome.warnings, ["hello user"]);

    let request = r#"{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"never"}}}"#;
    assert_eq!(
        check(PermissionRequest, ran(0, request, "")).1.permission,
        Some(Permission::Deny("never".into()))
    );
    let context = r#"{"additionalContext":"top"}"#;
    assert_eq!(
        check(UserPromptSubmit, ran(0, context, "")).1.context,
        ["top"]
    );
}

#[test]
fn plain_stdout_is_context_only_where_claude_code_reads_it_and_junk_is_a_warning() {
    use HookEvent::*;
    assert_eq!(
        check(UserPromptSubmit, ran(0, "branch: main\n", ""))
            .1
            .context,
        ["branch: main"]
    );
    assert_eq!(
        check(SessionStart, ran(0, "hello", "")).1.context,
        ["hello"]
    );
    assert!(
        check(PreToolUse, ran(0, "chatter", ""))
            .1
            .context
            .is_empty()
    );
    let (status, outcome) = check(PreToolUse, ran(0, "{not json", ""));
    assert_eq!(status, "error");
    assert!(
        outcome.warnings[0].contains("not a JSON object"),
        "{outcome:?}"
    );
    assert_eq!((outcome.block, outcome.permission), (None, None));
    let flooded = Ran {
        stdout_cut: true,
        ..ran(0, "", "")
    };
    assert!(check(PreToolUse, flooded).1.warnings[0].contains("dropped"));
}

#[test]
fn matchers_match_whole_names_ours_or_claude_codes_and_bad_ones_are_skipped() {
    let write = |matcher: &str, tool: &str| {
        let call = ToolCall {
            id: "c".into(),
            name: tool.into(),
            arguments: "{}".into(),
        };
        hook(HookEvent::PreToolUse, matcher, "x").matches(&Point::ToolCall { call: &call })
    };
    assert!(write("", "write_file"));
    assert!(write("*", "mcp__github__create_issue"));
    assert!(write("write_file", "write_file"));
    assert!(write("Write|Edit", "write_file"));
    assert!(write("mcp__github__.*", "mcp__github__create_issue"));
    assert!(!write("write", "write_file"));
    assert!(!write("Bash", "write_file"));
    let start = hook(HookEvent::SessionStart, "resume", "x");
    assert!(!start.matches(&Point::SessionStart { source: "startup" }));
    assert!(start.matches(&Point::SessionStart { source: "resume" }));

    let source = Arc::new(HookSource::Config(PathBuf::from("/c")));
    let value = json!({"PreToolUse": [{"matcher": "(", "hooks": [{"command": "x"}]}],
                       "Nope": [], "Stop": [{"hooks": [{"type": "prompt", "command": "x"}, {"command": "ok", "timeout": 9999}]}]});
    let (hooks, problems) = parse_section(&value, &source);
    assert_eq!(hooks.len(), 1, "only the Stop command hook is used");
    assert_eq!(hooks[0].timeout, MAX_HOOK_TIMEOUT);
    let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert!(
        text.iter().any(|p| p.contains("not a valid regex")),
        "{text:?}"
    );
    assert!(text.iter().any(|p| p.contains("unknown event")), "{text:?}");
    assert!(
        text.iter()
            .any(|p| p.contains("\"prompt\" hooks are not supported")),
        "{text:?}"
    );
}

/// A log that keeps what hooks record.
#[derive(Default)]
struct Recorded(Mutex<Vec<protocol::event::Event>>);

impl RunLog for Recorded {
    fn append(&self, event: protocol::event::Event) -> BoxFuture<'_, anyhow::Result<u64>> {
        let mut events = self.0.lock().unwrap();
        events.push(event);
        let seq = events.len() as u64;
        async move { Ok(seq) }.boxed()
    }
    fn append_message<'a>(&'a self, _: &'a Message) -> BoxFuture<'a, anyhow::Result<()>> {
        async { Ok(()) }.boxed()
    }
    fn append_message_then<'a>(
        &'a self,
        _: &'a Message,
        _: Vec<protocol::event::Event>,
    ) -> BoxFuture<'a, anyhow::Result<u64>> {
        async { Ok(0) }.boxed()
    }
    fn append_context<'a>(&'a self, _: &'a ContextChange) -> BoxFuture<'a, anyhow::Result<()>> {
        async { Ok(()) }.boxed()
    }
    fn publish_transient(&self, _: protocol::event::Event) {}
    fn has_answerers(&self) -> bool {
        false
    }
    fn answerers_left(&self) -> BoxFuture<'_, ()> {
        async {}.boxed()
    }
}

fn env(dir: &std::path::Path) -> HookEnv {
    HookEnv {
        session_id: "ses_1".into(),
        transcript_path: dir.join("ses_1.jsonl"),
        cwd: dir.to_path_buf(),
        project_dir: dir.to_path_buf(),
        permission_mode: "default".into(),
        sandbox: Arc::new(agentd_policy::process::sandbox::ShellSandbox::none("tests")),
    }
}

fn with_timeout(mut hook: HookDef, timeout: Duration) -> HookDef {
    hook.timeout = timeout;
    hook
}

#[tokio::test]
async fn a_hook_reads_its_event_on_stdin_and_its_answer_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let script = "input=$(cat); case \"$input\" in *'\"tool_name\":\"write_file\"'*) echo \"denied in $CLAUDE_PROJECT_DIR\" >&2; exit 2;; esac; exit 0";
    let hooks = Hooks::new(
        vec![hook(HookEvent::PreToolUse, "write_file", script)],
        env(dir.path()),
        PendingStart::default(),
    );
    let log = Recorded::default();
    let at = At {
        run_id: Some("run_1"),
        log: &log,
    };
    let call = ToolCall {
        id: "c1".into(),
        name: "write_file".into(),
        arguments: r#"{"path":"a.txt","content":"x"}"#.into(),
    };
    let outcome = hooks.ask(at, &Point::ToolCall { call: &call }).await;
    let expected = format!("denied in {}", dir.path().display());
    assert_eq!(outcome.block.as_deref(), Some(expected.as_str()));
    let events: Vec<protocol::event::Event> = log.0.lock().unwrap().clone();
    assert!(
        matches!(&events[0], protocol::event::Event::HookStarted { event, .. } if event == "PreToolUse")
    );
    assert!(
        matches!(&events[1], protocol::event::Event::HookCompleted { outcome, .. } if outcome == "blocked")
    );
    // Another tool does not match: nothing runs.
    let other = ToolCall {
        name: "read_file".into(),
        ..call.clone()
    };
    let outcome = hooks.ask(at, &Point::ToolCall { call: &other }).await;
    assert_eq!(outcome.block, None);
    assert_eq!(log.0.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_hook_past_its_timeout_is_killed_with_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    // A background child in the hook's group, and a hook that never reads stdin nor ends.
    let script = format!("sleep 300 & echo $! > {}; sleep 300", pid_file.display());
    let hook = with_timeout(
        hook(HookEvent::Stop, "", &script),
        Duration::from_millis(300),
    );
    let big_input: Arc<[u8]> = vec![b' '; 1024 * 1024].into();
    let ran = runner::run(&hook, big_input, &env(dir.path())).await;
    assert_eq!(ran.ending, Ending::TimedOut);
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    agentd_policy::process::test_support::wait_until_dead(pid).await;
}

#[tokio::test]
async fn a_flooding_hook_is_cut_and_one_that_ignores_stdin_does_not_hang() {
    let dir = tempfile::tempdir().unwrap();
    let flood = hook(
        HookEvent::Stop,
        "",
        "head -c 3000000 /dev/zero | tr '\\0' x; exit 0",
    );
    let big_input: Arc<[u8]> = vec![b' '; 2 * 1024 * 1024].into();
    let ran = runner::run(&flood, big_input, &env(dir.path())).await;
    assert_eq!(ran.ending, Ending::Exited(Some(0)));
    assert!(ran.stdout_cut);
    assert_eq!(ran.stdout.len(), MAX_HOOK_OUTPUT_BYTES);
}

#[tokio::test]
async fn dropping_a_running_hook_kills_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let script = format!("echo $$ > {}; sleep 300", pid_file.display());
    let hook = hook(HookEvent::Stop, "", &script);
    let environment = env(dir.path());
    let running = runner::run(&hook, Arc::from(&b"{}"[..]), &environment);
    let wait_for_pid = async {
        agentd_policy::process::test_support::wait_until(|| {
            std::fs::read_to_string(&pid_file).is_ok_and(|text| text.ends_with('\n'))
        })
        .await;
    };
    tokio::select! {
        _ = running => panic!("the hook ended on its own"),
        () = wait_for_pid => {}
    }
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    agentd_policy::process::test_support::wait_until_dead(pid).await;
}

#[test]
fn describe_lists_the_users_hooks_and_an_untrusted_projects_with_why_they_do_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let settings = workspace.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "make test"}]}]}}"#,
    )
    .unwrap();
    let user = [hook(HookEvent::PreToolUse, "Bash", "check.sh")];
    let trust = ProjectTrust::untrusted(&workspace);
    let listed = describe(&user, &workspace, &trust);
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(
        (
            listed[0].source.as_str(),
            listed[0].trusted,
            listed[0].matcher.as_str()
        ),
        ("config", true, "Bash")
    );
    assert_eq!(listed[1].source, settings.display().to_string());
    assert_eq!((listed[1].event, listed[1].trusted), ("Stop", false));
    assert!(
        listed[1]
            .note
            .as_deref()
            .unwrap()
            .contains("is not trusted")
    );
    let (applied, warnings) = load(&user, &workspace, &trust, None);
    assert_eq!(applied.len(), 1, "only the user's hook applies");
    assert!(warnings[0].contains("hook(s) do not run"), "{warnings:?}");
}
