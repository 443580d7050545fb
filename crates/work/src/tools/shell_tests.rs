//! Tests of run_shell: output, exit codes, timeout, cancel, scrubbed environment.

use std::sync::{Arc, Mutex};

use serde_json::json;

use super::*;
use crate::tools::test_support::{call, workspace};
use agentd_policy::process::test_support::wait_until_dead;

#[tokio::test]
async fn runs_in_the_workspace_and_reports_the_exit_code() {
    let (_dir, ctx) = workspace();
    let output = call(&RunShell, json!({"command": "pwd; echo oops >&2"}), &ctx).await;
    assert_eq!(
        output,
        ToolOutput::ok(format!(
            "{}\n[stderr]\noops\n[exit code 0]",
            ctx.workspace.display()
        ))
    );
    let output = call(&RunShell, json!({"command": "exit 3"}), &ctx).await;
    assert_eq!(output, ToolOutput::error("[exit code 3]"));
}

#[tokio::test]
async fn environment_is_scrubbed() {
    let (_dir, ctx) = workspace();
    let output = call(
        &RunShell,
        json!({"command": "env | cut -d= -f1 | sort"}),
        &ctx,
    )
    .await;
    assert!(!output.is_error, "{}", output.content);
    for name in output.content.lines().filter(|line| !line.starts_with('[')) {
        assert!(
            agentd_policy::process::KEPT_ENV_VARS.contains(&name)
                || name.starts_with("LC_")
                || ["PWD", "SHLVL", "_", "OLDPWD"].contains(&name)
                || name == agentd_policy::process::supervisor::MARKER_VAR,
            "unexpected variable {name}"
        );
    }
}

#[tokio::test]
async fn stdin_is_null() {
    let (_dir, ctx) = workspace();
    let output = call(&RunShell, json!({"command": "cat; echo done"}), &ctx).await;
    assert_eq!(output, ToolOutput::ok("done\n[exit code 0]"));
}

#[tokio::test]
async fn timeout_kills_the_group_and_keeps_partial_output() {
    let (_dir, ctx) = workspace();
    let output = call(
        &RunShell,
        json!({"command": "echo before; sleep 30 & echo $! > pid; wait", "timeoutMs": 1000}),
        &ctx,
    )
    .await;
    assert!(output.is_error);
    assert!(
        output.content.starts_with("before\n[timed out after 1s"),
        "{}",
        output.content
    );
    let pid = std::fs::read_to_string(ctx.workspace.join("pid")).unwrap();
    wait_until_dead(pid.trim().parse().unwrap()).await;
}

#[tokio::test]
async fn cancel_kills_grandchildren() {
    let (_dir, ctx) = workspace();
    let pidfile = ctx.workspace.join("pid");
    let cancel = ctx.cancel.clone();
    // The command reports (as progress) once the grandchild's pid is written; then we cancel.
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let started_tx = Mutex::new(Some(started_tx));
    let ctx = ToolContext {
        progress: ProgressSink::new(move |_| {
            if let Some(tx) = started_tx.lock().unwrap().take() {
                let _ = tx.send(());
            }
        }),
        ..ctx
    };
    let run = call(
        &RunShell,
        json!({"command": "sleep 30 & echo $! > pid; echo started; wait"}),
        &ctx,
    );
    let canceller = async {
        started_rx.await.unwrap();
        cancel.cancel();
    };
    let (output, ()) = tokio::join!(run, canceller);
    assert!(output.is_error);
    assert!(output.content.ends_with("cancelled"), "{}", output.content);
    let pid: i32 = std::fs::read_to_string(pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_until_dead(pid).await;
}

#[tokio::test]
async fn background_leftovers_do_not_hold_the_call() {
    let (_dir, ctx) = workspace();
    let output = call(&RunShell, json!({"command": "sleep 30 & echo quick"}), &ctx).await;
    assert_eq!(output, ToolOutput::ok("quick\n[exit code 0]"));
}

#[tokio::test]
async fn large_output_is_bounded_in_memory() {
    let (_dir, mut ctx) = workspace();
    ctx.limits.shell_capture_max_bytes = 100;
    let output = call(&RunShell, json!({"command": "seq 1 10000"}), &ctx).await;
    assert!(output.content.starts_with("1\n2\n"), "{}", output.content);
    assert!(
        output.content.contains("bytes omitted …]"),
        "{}",
        output.content
    );
    assert!(
        output.content.ends_with("9999\n10000\n[exit code 0]"),
        "{}",
        output.content
    );
    assert!(output.content.len() < 200);
}

#[tokio::test]
async fn progress_reports_lines_and_bytes() {
    let (_dir, ctx) = workspace();
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink_reports = Arc::clone(&reports);
    let ctx = ToolContext {
        progress: ProgressSink::new(move |message| sink_reports.lock().unwrap().push(message)),
        ..ctx
    };
    let output = call(&RunShell, json!({"command": "echo hello"}), &ctx).await;
    assert!(!output.is_error);
    assert_eq!(
        *reports.lock().unwrap(),
        ["1 lines, 6 bytes of output: hello"]
    );
}

#[tokio::test]
async fn background_without_tasks_and_bad_input_are_errors() {
    let (_dir, ctx) = workspace();
    let output = call(
        &RunShell,
        json!({"command": "true", "runInBackground": true}),
        &ctx,
    )
    .await;
    assert!(
        output.is_error
            && output
                .content
                .starts_with("background commands are not available here"),
        "{output:?}"
    );
    let output = call(&RunShell, json!({"command": "  "}), &ctx).await;
    assert_eq!(output, ToolOutput::error("command is empty"));
    let output = call(&RunShell, json!({"command": 3}), &ctx).await;
    assert!(
        output
            .content
            .starts_with("invalid arguments for run_shell: invalid type")
    );
}

#[tokio::test]
async fn a_setsid_child_is_killed_when_the_command_ends() {
    let (_dir, ctx) = workspace();
    let output = call(
        &RunShell,
        json!({"command": "setsid sh -c 'echo $$ > pid; exec sleep 30' & \
                         while [ ! -s pid ]; do sleep 0.01; done; echo quick"}),
        &ctx,
    )
    .await;
    assert_eq!(
        output,
        ToolOutput::ok(
            "quick\n[1 background process(es) it started outside its process group were killed \
             when it ended]\n[exit code 0]"
        )
    );
    let pid = std::fs::read_to_string(ctx.workspace.join("pid")).unwrap();
    wait_until_dead(pid.trim().parse().unwrap()).await;
}

#[tokio::test]
async fn an_escapee_holding_the_output_cannot_hold_the_call_past_its_timeout() {
    let (_dir, mut ctx) = workspace();
    ctx.limits.shell_drain_after_exit = Duration::from_millis(200);
    // Without the marker and outside the group, nothing finds it: the drain is cut short.
    let started = Instant::now();
    let output = call(
        &RunShell,
        json!({
            "command": "env -i setsid sleep 30 & echo $! > pid; sleep 30",
            "timeoutMs": 500,
        }),
        &ctx,
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(5), "{output:?}");
    assert!(output.is_error);
    assert!(
        output.content.contains("[output may be incomplete"),
        "{}",
        output.content
    );
    assert!(output.content.contains("timed out"), "{}", output.content);
    let pid: i32 = std::fs::read_to_string(ctx.workspace.join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    agentd_policy::process::test_support::kill_for_test(pid);
}
