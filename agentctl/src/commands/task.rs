//! `agentctl task list|show|output|steer|followup|stop|start`: the daemon's background tasks
//! (subagents, background shell commands), from any terminal.

use std::fmt::Write as _;
use std::path::PathBuf;

use protocol::methods::{
    DaemonSubscribe, TaskFollowUp, TaskGet, TaskList, TaskOutput, TaskStart, TaskSteer, TaskStop,
};
use protocol::task::{
    TaskInfo, TaskKind, TaskListParams, TaskMessageParams, TaskOutputParams, TaskOutputResult,
    TaskRef, TaskStartParams, TaskStatus,
};

use crate::Context;
use crate::cli::TaskAction;
use crate::client::{Connection, EventStream};
use crate::commands::approvals::short_time;
use crate::commands::message_text;
use crate::output::{CommandError, print_json};
use crate::render::{one_line, truncate};

/// Longest description cell in the `task list` table.
const DESCRIPTION_MAX_CHARS: usize = 60;

/// Run one `agentctl task` subcommand.
pub async fn run(ctx: &Context, action: TaskAction) -> Result<(), CommandError> {
    match action {
        TaskAction::List { all } => list(ctx, all).await,
        TaskAction::Show { task } => show(ctx, task).await,
        TaskAction::Output { task, follow } => output(ctx, task, follow).await,
        TaskAction::Steer { task, text } => steer(ctx, task, &text).await,
        TaskAction::FollowUp { task, text } => follow_up(ctx, task, &text).await,
        TaskAction::Stop { task } => stop(ctx, task).await,
        TaskAction::Start { agent, cwd, prompt } => start(ctx, agent, cwd, &prompt).await,
    }
}

/// Tasks asked for per `task/list` request; every page is read.
const LIST_PAGE: u32 = 500;

async fn list(ctx: &Context, all: bool) -> Result<(), CommandError> {
    let connection = ctx.connect().await?;
    let mut result = protocol::task::TaskListResult::default();
    let mut cursor = None;
    loop {
        let params = TaskListParams {
            all,
            cursor,
            limit: Some(LIST_PAGE),
            ..TaskListParams::default()
        };
        let page = connection.request::<TaskList>(&params).await?;
        result.tasks.extend(page.tasks);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    if ctx.json {
        print_json(&result);
    } else if result.tasks.is_empty() {
        if all {
            crate::say!("no tasks");
        } else {
            crate::say!(
                "no pending or running tasks (`agentctl task list --all` shows finished ones)"
            );
        }
    } else {
        crate::say_raw!("{}", format_table(&result.tasks));
    }
    Ok(())
}

async fn show(ctx: &Context, task_id: String) -> Result<(), CommandError> {
    let connection = ctx.connect().await?;
    let task_id = crate::ids::task(&connection, &task_id).await?;
    let result = connection.request::<TaskGet>(&TaskRef { task_id }).await?;
    if ctx.json {
        print_json(&result);
        return Ok(());
    }
    crate::say_raw!("{}", format_task(&result.task));
    if let Some(hint) = &result.hint {
        crate::say!("hint: {hint}");
    }
    Ok(())
}

async fn output(ctx: &Context, task_id: String, follow: bool) -> Result<(), CommandError> {
    let connection = ctx.connect().await?;
    let task_id = crate::ids::task(&connection, &task_id).await?;
    // Listen before the first read: a change after it is never missed.
    let mut changes = if follow {
        Some(subscribe_daemon(&connection).await?)
    } else {
        None
    };
    let mut offset = 0;
    loop {
        let last = print_output(ctx, &connection, &task_id, &mut offset).await?;
        let Some(stream) = changes.as_mut() else {
            return Ok(());
        };
        if last.status.is_finished() {
            return match last.status {
                TaskStatus::Completed => Ok(()),
                status => Err(CommandError::failed(format!(
                    "task {task_id} ended {}",
                    status.as_str()
                ))),
            };
        }
        // Wait for the next change in the daemon (a task event), then read on. A shell's
        // output grows without events: it is read again after `OUTPUT_POLL` at the latest.
        let next = tokio::time::timeout(OUTPUT_POLL, stream.next()).await;
        let Ok(next) = next else {
            continue;
        };
        match next {
            Some(Ok(_)) => {}
            Some(Err(err)) => return Err(err.into()),
            // Fell behind: listen again, then read on (nothing is lost, reads go by offset).
            None if matches!(
                stream.close_reason(),
                Some(jsonrpsee::core::client::SubscriptionCloseReason::Lagged)
            ) =>
            {
                *stream = subscribe_daemon(&connection).await?;
            }
            None => {
                return Err(CommandError::connection_lost(
                    "the daemon ended the event stream before the task finished",
                ));
            }
        }
    }
}

/// How long `task output -f` waits for a task event before reading the output again: a
/// running command writes its output file without any event.
const OUTPUT_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// Listens to the daemon stream (task events among them).
async fn subscribe_daemon(connection: &Connection) -> Result<EventStream, CommandError> {
    Ok(connection
        .subscribe(
            <DaemonSubscribe as protocol::Method>::NAME,
            &serde_json::json!({}),
            protocol::event::DAEMON_EVENT,
            protocol::methods::DAEMON_UNSUBSCRIBE,
        )
        .await?)
}

/// Prints the output from `offset` to its current end; the last answer.
async fn print_output(
    ctx: &Context,
    connection: &Connection,
    task_id: &str,
    offset: &mut u64,
) -> Result<TaskOutputResult, CommandError> {
    loop {
        let params = TaskOutputParams {
            task_id: task_id.to_owned(),
            after_offset: *offset,
        };
        let result = connection.request::<TaskOutput>(&params).await?;
        *offset = result.next_offset;
        if ctx.json {
            print_json(&result);
        } else {
            crate::safe_text::print_stdout(&result.text);
        }
        if !result.truncated || result.text.is_empty() {
            return Ok(result);
        }
    }
}

async fn steer(ctx: &Context, task_id: String, text: &str) -> Result<(), CommandError> {
    let text = message_text(text, "steering message")?;
    let connection = ctx.connect().await?;
    let task_id = crate::ids::task(&connection, &task_id).await?;
    let result = connection
        .request::<TaskSteer>(&TaskMessageParams {
            task_id: task_id.clone(),
            text,
        })
        .await?;
    if ctx.json {
        print_json(&result);
    } else {
        crate::say!(
            "steer queued for task {task_id}; it reaches the subagent before its next model call"
        );
    }
    Ok(())
}

async fn follow_up(ctx: &Context, task_id: String, text: &str) -> Result<(), CommandError> {
    let text = message_text(text, "follow-up message")?;
    let connection = ctx.connect().await?;
    let task_id = crate::ids::task(&connection, &task_id).await?;
    let result = connection
        .request::<TaskFollowUp>(&TaskMessageParams {
            task_id: task_id.clone(),
            text,
        })
        .await?;
    if ctx.json {
        print_json(&result);
    } else if result.queued {
        crate::say!("follow-up queued for task {task_id}; it is delivered when its run would end");
    } else {
        crate::say!(
            "follow-up started run {} of task {task_id} (watch it with `agentctl attach {}`)",
            result.run_id,
            result.child_session_id
        );
    }
    Ok(())
}

async fn stop(ctx: &Context, task_id: String) -> Result<(), CommandError> {
    let connection = ctx.connect().await?;
    let task_id = crate::ids::task(&connection, &task_id).await?;
    let result = connection
        .request::<TaskStop>(&TaskRef {
            task_id: task_id.clone(),
        })
        .await?;
    if ctx.json {
        print_json(&result);
    } else {
        crate::say!("stopping task {task_id}; it ends cancelled");
    }
    Ok(())
}

async fn start(
    ctx: &Context,
    agent: Option<String>,
    cwd: Option<PathBuf>,
    prompt: &str,
) -> Result<(), CommandError> {
    let prompt = message_text(prompt, "prompt")?;
    let here = std::env::current_dir()
        .map_err(|err| CommandError::failed(format!("cannot read the current directory: {err}")))?;
    let cwd = match cwd {
        Some(dir) => here.join(dir),
        None => here,
    };
    let connection = ctx.connect().await?;
    let params = TaskStartParams {
        cwd: cwd.display().to_string(),
        prompt,
        agent_type: agent,
        permission_mode: None,
        description: None,
    };
    let result = connection.request::<TaskStart>(&params).await?;
    if ctx.json {
        print_json(&result);
    } else {
        crate::say!("{}", result.task_id);
    }
    Ok(())
}

/// The wire name of a status.
fn kind_name(task: &TaskInfo) -> String {
    match (task.kind, &task.agent_type) {
        (TaskKind::Shell, _) => "shell".to_owned(),
        (TaskKind::Subagent, Some(agent)) => agent.clone(),
        (TaskKind::Subagent, None) => "subagent".to_owned(),
    }
}

/// The `task list` table: id, status, kind (agent type), created, description.
pub fn format_table(tasks: &[TaskInfo]) -> String {
    let header = ["ID", "STATUS", "KIND", "CREATED", "DESCRIPTION"];
    let rows: Vec<[String; 5]> = tasks
        .iter()
        .map(|task| {
            [
                crate::ids::short(&task.task_id).to_owned(),
                status_text(task),
                kind_name(task),
                short_time(&task.created_at),
                truncate(&one_line(&task.description), DESCRIPTION_MAX_CHARS),
            ]
        })
        .collect();
    crate::table::format(header, &rows)
}

/// A task's status as the table shows it: `running (stalled)` for a running task that made
/// no progress for a while, `completed (not saved)` for an end the daemon could not record.
pub fn status_text(task: &TaskInfo) -> String {
    let status = task.status.as_str();
    match (task.stalled, task.not_persisted) {
        (true, _) => format!("{status} (stalled)"),
        (false, true) => format!("{status} (not saved)"),
        (false, false) => status.to_owned(),
    }
}

/// `task show`: one `field: value` line each, then the result.
pub fn format_task(task: &TaskInfo) -> String {
    let mut text = format!(
        "task:        {}\nstatus:      {}\nkind:        {}\ndescription: {}\ncwd:         {}\ncreated:     {}\n",
        task.task_id,
        status_text(task),
        kind_name(task),
        task.description,
        task.cwd,
        task.created_at
    );
    let optional = [
        ("parent:     ", task.parent_session_id.as_ref()),
        ("session:    ", task.child_session_id.as_ref()),
        ("started:    ", task.started_at.as_ref()),
        ("finished:   ", task.finished_at.as_ref()),
        ("error:      ", task.error.as_ref()),
    ];
    for (label, value) in optional {
        if let Some(value) = value {
            let _ = writeln!(text, "{label} {value}");
        }
    }
    if let Some(code) = task.exit_code {
        let _ = writeln!(text, "exit code:   {code}");
    }
    if let Some(result) = &task.result {
        let _ = writeln!(text, "result:\n{result}");
    }
    text
}
