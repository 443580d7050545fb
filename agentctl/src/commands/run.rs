//! `agentctl run`: create (or reuse) a session, subscribe, prompt, and stream the run.

use protocol::methods::{SessionCreate, SessionGet, SessionPrompt};
use protocol::session::{SessionCreateParams, SessionGetParams, SessionPromptParams};

use crate::Context;
use crate::approval_desk::ApprovalDesk;
use crate::approve_policy::choose_handling;
use crate::cli::RunArgs;
use crate::commands::{message_text, render_options};
use crate::follow::{self, OnInterrupt};
use crate::output::{CommandError, EXIT_OK, print_json};
use crate::render::{Mode, Output, Renderer};

/// `agentctl run`: the exit code is the run's outcome (see `cli::Command::Run`).
pub async fn run(
    ctx: &Context,
    args: RunArgs,
    emit: &mut dyn FnMut(Vec<Output>),
) -> Result<u8, CommandError> {
    if args.session.is_some() && args.mode.is_some() {
        return Err(CommandError::usage(
            "--mode applies to a new session; it cannot be combined with --session yet",
        ));
    }
    let text = message_text(&args.prompt, "prompt")?;
    let cwd = match &args.cwd {
        Some(dir) => std::path::absolute(dir)
            .map_err(|err| CommandError::usage(format!("bad --cwd {}: {err}", dir.display())))?,
        None => std::env::current_dir().map_err(|err| {
            CommandError::failed(format!("cannot read the current directory: {err}"))
        })?,
    };
    if args.session.is_none() && !cwd.is_dir() {
        return Err(CommandError::usage(format!(
            "--cwd {} is not a directory",
            cwd.display()
        )));
    }

    // A run it follows has its approvals answered here (the prompt, or the `--approve` policy:
    // `never` without a terminal, `wait` for another client's answer), so the daemon waits
    // for them; a background run is not followed.
    let connection = if args.background {
        ctx.connect().await?
    } else {
        ctx.connect_answering_approvals().await?
    };
    // The seq to subscribe after: only this run's events are wanted.
    let (session_id, last_seq) = match args.session {
        Some(session_id) => {
            let params = SessionGetParams {
                session_id,
                include_history: false,
            };
            let found = connection.request::<SessionGet>(&params).await?;
            (found.session.session_id, found.session.last_seq)
        }
        None => {
            let params = SessionCreateParams {
                cwd: cwd.to_string_lossy().into_owned(),
                model: args.model,
                title: args.title,
                permission_mode: args.mode,
                permission_rules: None,
                mcp_servers: None,
                agent_type: args.agent,
                append_system_prompt: None,
            };
            let created = connection.request::<SessionCreate>(&params).await?;
            (created.session_id, created.session.last_seq)
        }
    };
    let prompt = SessionPromptParams {
        session_id: session_id.clone(),
        text,
        // A fresh id per invocation: a retried request never starts a second run.
        client_request_id: Some(format!("cli_{}", uuid::Uuid::new_v4().simple())),
        queue_if_busy: false,
        max_steps: None,
    };

    if args.background {
        let started = connection.request::<SessionPrompt>(&prompt).await?;
        if ctx.json {
            print_json(&serde_json::json!({ "sessionId": session_id, "runId": started.run_id }));
        } else {
            println!("session {session_id}");
            println!("run {}", started.run_id);
        }
        return Ok(EXIT_OK);
    }

    // Subscribe before prompting so no event of the run can be missed.
    let subscription = follow::subscribe(&connection, &session_id, last_seq).await?;
    let started = connection.request::<SessionPrompt>(&prompt).await?;
    let options = render_options(ctx.json);
    let renderer = Renderer::new(
        Mode::Run {
            run_id: started.run_id.clone(),
        },
        options,
        last_seq,
    );
    let animate = options.stderr_is_tty && !options.json;
    // --json output is for programs: it never prompts.
    let interactive = ctx.interactive && !ctx.json;
    let desk = ApprovalDesk::new(started.run_id, choose_handling(args.approve, interactive));
    follow::follow(
        &connection,
        &session_id,
        subscription,
        renderer,
        OnInterrupt::CancelRun,
        animate,
        Some(desk),
        emit,
    )
    .await
}
