//! run_shell: a command through `sh -c` in the workspace, in its own process group (through
//! [`agentd_policy::process`]), confined by the sandbox ([`agentd_policy::process::sandbox`]), with a scrubbed
//! environment, a timeout, bounded output capture and throttled progress. Timeout and
//! cancellation kill the whole group and what escaped it; the call never outlives its timeout
//! by more than the kill and a bounded drain of the pipes. What the command created or changed
//! of the project's configuration ([`agentd_policy::process::protected`]) is said in its result.

use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::{ProgressSink, ToolContext, ToolOutput, TypedTool, one_line, str_field};
use agentd_core::truncate::HeadTailBuffer;
use agentd_policy::process::protected::Snapshot;
use agentd_policy::process::{ChildProcess, ProcessSpec};

/// Runs a shell command.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RunShell;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RunShellParams {
    /// The command line.
    command: String,
    /// Timeout in ms (default 120000, at most 600000).
    timeout_ms: Option<u64>,
    /// Run as a background task: its id returns at once.
    run_in_background: Option<bool>,
}

impl TypedTool for RunShell {
    type Params = RunShellParams;
    const NAME: &'static str = "run_shell";
    const DESCRIPTION: &'static str = "Run a command with `sh -c` in the workspace root. stdin is empty (pass \
         `--yes`-like flags); the environment is basic (no keys or tokens). With the \
         sandbox on, only the workspace and temp dir are writable and the project's \
         config (.agents/, .claude/, skills/, .mcp.json, .git/hooks, .git/config, \
         AGENTS.md, CLAUDE.md) is read-only. Returns stdout, stderr and the exit code; \
         long output keeps start and end. It and all it started are killed at `timeoutMs` \
         or when it exits. Servers and long jobs: `runInBackground`. For files prefer \
         read_file, grep, glob, edit_file.";
    const READ_ONLY: bool = false;

    fn summary(&self, input: &serde_json::Value) -> String {
        one_line(str_field(input, "command"), 120)
    }

    fn run<'a>(
        &'a self,
        params: RunShellParams,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, String>> {
        Box::pin(run_shell(params, ctx))
    }
}

/// How the command's run ended.
enum Ending {
    Exited(std::io::Result<std::process::ExitStatus>),
    TimedOut,
    Cancelled,
}

async fn run_shell(params: RunShellParams, ctx: &ToolContext) -> Result<ToolOutput, String> {
    if params.command.trim().is_empty() {
        return Err("command is empty".to_owned());
    }
    if params.run_in_background == Some(true) {
        return run_in_background(params.command, ctx).await;
    }
    let limits = &ctx.limits;
    let timeout = params
        .timeout_ms
        .map_or(limits.shell_default_timeout, Duration::from_millis)
        .min(limits.shell_max_timeout);

    let spec = ProcessSpec::shell(&params.command, ctx.workspace.clone());
    let spec = ctx.sandbox.apply(spec).await.map_err(|error| {
        format!(
            "cannot sandbox the command: {error}; fix the path, or set [sandbox] enabled = \
             false in the daemon's config.toml to run commands unconfined"
        )
    })?;
    let snapshot = Snapshot::take_async(&ctx.workspace).await;
    let mut child = ChildProcess::spawn(spec)
        .await
        .map_err(|error| format!("cannot start sh: {error}"))?;
    let (Some(mut stdout), Some(mut stderr)) = (child.take_stdout(), child.take_stderr()) else {
        return Err("cannot capture the command's output".to_owned());
    };

    let mut out = HeadTailBuffer::new(limits.shell_capture_max_bytes);
    let mut err = HeadTailBuffer::new(limits.shell_capture_max_bytes);
    let progress = Progress::new(ctx.progress.clone(), limits.shell_progress_interval);
    // Fired once the command and everything it started were killed or exited: the pipes get
    // `shell_drain_after_exit` more to reach their end, then reading stops, so a process that
    // escaped every kill and holds a pipe cannot hold the call.
    let ended = tokio_util::sync::CancellationToken::new();
    let drain = limits.shell_drain_after_exit;
    let waiter = async {
        let ending = tokio::select! {
            status = child.wait() => Ending::Exited(status),
            () = tokio::time::sleep(timeout) => Ending::TimedOut,
            () = ctx.cancel.cancelled() => Ending::Cancelled,
        };
        if !matches!(ending, Ending::Exited(_)) {
            let _ = child.kill().await;
        }
        ended.cancel();
        ending
    };
    let (ending, out_complete, err_complete) = tokio::join!(
        waiter,
        read_until_drained(&mut stdout, &mut out, &progress, &ended, drain),
        read_until_drained(&mut stderr, &mut err, &progress, &ended, drain),
    );
    let escaped = child.escaped_killed();

    let mut text = String::new();
    if !out.is_empty() {
        text.push_str(&out.to_text());
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    if !err.is_empty() {
        text.push_str("[stderr]\n");
        text.push_str(&err.to_text());
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    let (footer, is_error) = match ending {
        Ending::Exited(Ok(status)) => {
            match (status.code(), agentd_core::platform::exit_signal(&status)) {
                (Some(0), _) => ("[exit code 0]".to_owned(), false),
                (Some(code), _) => (format!("[exit code {code}]"), true),
                (None, Some(signal)) => (format!("[killed by signal {signal}]"), true),
                (None, None) => ("[exited]".to_owned(), true),
            }
        }
        Ending::Exited(Err(error)) => (format!("[could not wait for the command: {error}]"), true),
        Ending::TimedOut => (
            format!(
                "[timed out after {} and was killed with everything it started; give a larger \
                 timeoutMs (at most {} ms) or a faster command]",
                humantime::format_duration(timeout),
                limits.shell_max_timeout.as_millis()
            ),
            true,
        ),
        Ending::Cancelled => ("cancelled".to_owned(), true),
    };
    if escaped > 0 {
        text.push_str(&format!(
            "[{escaped} background process(es) it started outside its process group were \
             killed when it ended]\n"
        ));
    }
    if !(out_complete && err_complete) {
        text.push_str(
            "[output may be incomplete: a process it started kept the output open after it \
             ended; it was not found to kill]\n",
        );
    }
    if let Some(report) = Snapshot::report_async(snapshot).await {
        tracing::warn!(command = %one_line(&params.command, 200), "{report}");
        text.push_str(&report);
        text.push('\n');
    }
    text.push_str(&footer);
    Ok(ToolOutput {
        content: text,
        is_error,
        images: Vec::new(),
    })
}

/// Starts the command as a background shell task; the result names the task and how to
/// read its output. Its permission was decided like a foreground call's, before this.
async fn run_in_background(command: String, ctx: &ToolContext) -> Result<ToolOutput, String> {
    let Some(background) = &ctx.background else {
        return Err(
            "background commands are not available here; run the command in the foreground \
             (with a timeoutMs if it takes long)"
                .to_owned(),
        );
    };
    let task_id = background
        .shells
        .start(
            command,
            ctx.workspace.clone(),
            &background.session_id,
            &ctx.sandbox,
        )
        .await?;
    Ok(ToolOutput::ok(format!(
        "started background task {id}: the command runs on its own (no timeout) and is \
         killed with everything it started when stopped or when this session is deleted. \
         Read its output with task_output {{\"taskId\": \"{id}\"}}; see whether it ended \
         (and its exit code) with task_get; stop it with task_stop.",
        id = task_id
    )))
}

/// Reads `reader` into `buffer` until its end, or until `drain` after `ended` fired; false
/// when the end was not reached.
async fn read_until_drained(
    reader: &mut (impl AsyncRead + Unpin),
    buffer: &mut HeadTailBuffer,
    progress: &Progress,
    ended: &tokio_util::sync::CancellationToken,
    drain: Duration,
) -> bool {
    let deadline = async {
        ended.cancelled().await;
        tokio::time::sleep(drain).await;
    };
    tokio::select! {
        () = read_into(reader, buffer, progress) => true,
        () = deadline => false,
    }
}

/// Reads `reader` to its end into `buffer`, reporting progress. Cancel-safe between chunks.
async fn read_into(
    reader: &mut (impl AsyncRead + Unpin),
    buffer: &mut HeadTailBuffer,
    progress: &Progress,
) {
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(read) => {
                buffer.push(&chunk[..read]);
                progress.maybe_report(&chunk[..read]);
            }
        }
    }
}

/// Throttled progress reports over stdout and stderr together: "N lines, M bytes of output:
/// <last line>".
struct Progress {
    sink: ProgressSink,
    interval: Duration,
    /// Counts and the time of the last report.
    state: std::sync::Mutex<ProgressState>,
}

#[derive(Default)]
struct ProgressState {
    lines: u64,
    bytes: u64,
    last_report: Option<Instant>,
}

impl Progress {
    fn new(sink: ProgressSink, interval: Duration) -> Self {
        Self {
            sink,
            interval,
            state: std::sync::Mutex::new(ProgressState::default()),
        }
    }

    fn maybe_report(&self, chunk: &[u8]) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.bytes += chunk.len() as u64;
        state.lines += chunk.iter().filter(|&&byte| byte == b'\n').count() as u64;
        let now = Instant::now();
        if state
            .last_report
            .is_some_and(|at| now.duration_since(at) < self.interval)
        {
            return;
        }
        state.last_report = Some(now);
        let mut message = format!("{} lines, {} bytes of output", state.lines, state.bytes);
        drop(state);
        let text = String::from_utf8_lossy(chunk);
        let last_line = text.lines().rev().find(|line| !line.trim().is_empty());
        if let Some(line) = last_line {
            message.push_str(": ");
            message.push_str(&one_line(line, 200));
        }
        self.sink.report(message);
    }
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;
