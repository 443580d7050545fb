//! `agentctl run`: create (or reuse, or continue) a session, subscribe, prompt, and stream the
//! run; scripts get a result object (`--json`) or only the final message (`--output final`).
//! A prompt that is a slash command (`/name args`, see `commands::slash`) goes to
//! `session/command`: a built-in's answer is printed, a command that starts a run is followed
//! like a prompt.

use protocol::approval::PermissionRules;
use protocol::methods::{SessionCreate, SessionGet, SessionPrompt, SessionUpdate};
use protocol::session::{
    SessionCreateParams, SessionGetParams, SessionPromptParams, SessionUpdateParams,
};

use crate::Context;
use crate::approval_desk::ApprovalDesk;
use crate::approve_policy::{ApprovePolicy, choose_handling};
use crate::cli::{RunArgs, RunOutput};
use crate::client::{ClientError, Connection};
use crate::commands::{render_options, run_input, run_result};
use crate::follow::{self, FollowOptions, OnInterrupt};
use crate::output::{CommandError, EXIT_OK, print_json};
use crate::render::{Mode, Output, Renderer};

/// `agentctl run`: the exit code is the run's outcome (see `cli::Command::Run`).
pub async fn run(
    ctx: &Context,
    args: RunArgs,
    emit: &mut dyn FnMut(Vec<Output>),
) -> Result<u8, CommandError> {
    let continuing = args.session.is_some() || args.continue_session;
    if continuing {
        refuse_creation_flags(&args)?;
    }
    // A background run is not followed: only `wait` (answered later) makes sense for it.
    if args.background
        && let Some(policy @ (ApprovePolicy::Edits | ApprovePolicy::All)) = args.approve
    {
        let name = if policy == ApprovePolicy::Edits {
            "edits"
        } else {
            "all"
        };
        return Err(CommandError::usage(format!(
            "--approve {name} answers while agentctl follows the run; drop --background, or use \
             --background --approve wait and answer with `agentctl attach` or `agentctl approve`"
        )));
    }
    let hold_approvals = args.background && args.approve == Some(ApprovePolicy::Wait);
    // Piped into (the prompt with `-`, or attached to it): stdin is then used up.
    let piped = run_input::stdin_is_piped();
    // `@path` words of the prompt typed attach their files (relative to where agentctl runs);
    // never words of piped text, which may come from anywhere.
    let (typed, images) = attachments(&args).await?;
    let text = run_input::prompt_text(&typed).await?;
    // Keys for the approval prompt come from the terminal once stdin was a pipe.
    let interactive = if piped && !ctx.json && std::io::IsTerminal::is_terminal(&std::io::stderr())
    {
        run_input::reattach_terminal_to_stdin()
    } else {
        ctx.interactive
    };
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
    let mut connection = if args.background {
        ctx.connect().await?
    } else {
        ctx.connect_answering_approvals().await?
    };
    // The seq to subscribe after: only this run's events are wanted.
    let (session_id, last_seq) = if continuing {
        let session_id = match &args.session {
            Some(given) => crate::ids::session(&connection, given).await?,
            None => {
                run_input::newest_session_in(&connection, &cwd)
                    .await?
                    .session_id
            }
        };
        update_session(&connection, &session_id, &args).await?;
        let params = SessionGetParams {
            session_id,
            include_history: false,
        };
        let found = connection.request::<SessionGet>(&params).await?;
        (found.session.session_id, found.session.last_seq)
    } else {
        let params = SessionCreateParams {
            cwd: cwd.to_string_lossy().into_owned(),
            model: args.model.clone(),
            title: args.title.clone(),
            permission_mode: args.mode,
            permission_rules: session_rules(&args),
            mcp_servers: None,
            agent_type: args.agent.clone(),
            append_system_prompt: args.append_system_prompt.clone(),
        };
        let created = match connection.request::<SessionCreate>(&params).await {
            // No provider, and this shell has settings the daemon lacks: restarted with them
            // (asked on a terminal), the run goes on with the new daemon.
            Err(err)
                if crate::env_check::is_no_provider(&err)
                    && crate::env_check::offer_restart(ctx, &connection, interactive).await? =>
            {
                connection = if args.background {
                    ctx.connect().await?
                } else {
                    ctx.connect_answering_approvals().await?
                };
                connection.request::<SessionCreate>(&params).await?
            }
            created => created?,
        };
        (created.session_id, created.session.last_seq)
    };
    let slash = crate::commands::slash::parse(&text);
    if slash.is_some() && !images.is_empty() {
        return Err(CommandError::usage(
            "a slash command takes no images; drop --image (and @image words) or send a prompt",
        ));
    }
    let prompt = SessionPromptParams {
        session_id: session_id.clone(),
        text,
        // A fresh id per invocation: a retried request never starts a second run.
        client_request_id: Some(format!("cli_{}", uuid::Uuid::new_v4().simple())),
        queue_if_busy: false,
        hold_approvals,
        max_steps: args.max_steps,
        images,
    };

    if args.background {
        let Some(run_id) = start(ctx, &connection, &prompt, slash.as_ref()).await? else {
            return Ok(EXIT_OK);
        };
        let started = protocol::session::SessionPromptResult {
            run_id,
            queued: false,
        };
        if ctx.json {
            print_json(&serde_json::json!({ "sessionId": session_id, "runId": started.run_id }));
        } else {
            crate::say!("session {session_id}");
            crate::say!("run {}", started.run_id);
            if hold_approvals {
                crate::warn_line!(
                    "its approvals wait for an answer: `agentctl attach {session_id}` on a \
                     terminal, or `agentctl approvals list` and `agentctl approve`"
                );
            }
        }
        crate::env_check::warn_if_differs(&connection).await;
        return Ok(EXIT_OK);
    }

    // Subscribe before prompting so no event of the run can be missed.
    let subscription = follow::subscribe(&connection, &session_id, last_seq).await?;
    let Some(run_id) = start(ctx, &connection, &prompt, slash.as_ref()).await? else {
        return Ok(EXIT_OK);
    };
    let started = protocol::session::SessionPromptResult {
        run_id,
        queued: false,
    };
    let options = render_options(ctx);
    let mut renderer = Renderer::new(
        Mode::Run {
            run_id: started.run_id.clone(),
        },
        options,
        last_seq,
    );
    renderer.set_thinking(ctx.thinking);
    let animate = options.stderr_is_tty && !options.json;
    // --json output is for programs: it never prompts.
    let interactive = interactive && !ctx.json;
    let desk = ApprovalDesk::new(
        started.run_id.clone(),
        choose_handling(args.approve, interactive),
    );
    let only_final = args.output == RunOutput::Final && !ctx.json;
    // `--output final`: the streamed answer stays off stdout; notes still go to stderr.
    let mut keep_stderr = |outputs: Vec<Output>| {
        emit(
            outputs
                .into_iter()
                .filter(|output| matches!(output, Output::Stderr(_)))
                .collect(),
        );
    };
    let shown: &mut dyn FnMut(Vec<Output>) = if only_final { &mut keep_stderr } else { emit };
    let follow_options = FollowOptions {
        on_interrupt: OnInterrupt::CancelRun,
        animate_spinner: animate,
        reconnect_wait: ctx.reconnect_wait,
    };
    // The connection may be a new one after this (the daemon restarted mid-run).
    let code = follow::follow(
        &mut connection,
        &session_id,
        subscription,
        renderer,
        follow_options,
        Some(desk),
        shown,
    )
    .await?;
    // After the run, off its path: a warning to restart the daemon when it runs with other
    // settings than this shell (which may be why the run failed).
    crate::env_check::warn_if_differs(&connection).await;
    if ctx.json || only_final {
        // A connection of its own: the followed one still holds its event stream.
        let reader = ctx.connect().await?;
        let result = run_result::read_back(&reader, &session_id, &started.run_id, last_seq).await?;
        if ctx.json {
            print_json(&result);
        } else if !result.final_text.is_empty() {
            emit(vec![Output::Stdout(format!("{}\n", result.final_text))]);
        }
    }
    Ok(code)
}

/// The flags that only shape a new session, refused when continuing one.
fn refuse_creation_flags(args: &RunArgs) -> Result<(), CommandError> {
    let given = [
        ("--allow", !args.allow.is_empty()),
        ("--deny", !args.deny.is_empty()),
        (
            "--append-system-prompt",
            args.append_system_prompt.is_some(),
        ),
        ("--agent", args.agent.is_some()),
    ];
    match given.iter().find(|(_, set)| *set) {
        Some((flag, _)) => Err(CommandError::usage(format!(
            "{flag} applies to a new session; drop --session/-c to start one"
        ))),
        None => Ok(()),
    }
}

/// `--allow` / `--deny` as the new session's own rules.
fn session_rules(args: &RunArgs) -> Option<PermissionRules> {
    (!args.allow.is_empty() || !args.deny.is_empty()).then(|| PermissionRules {
        allow: args.allow.clone(),
        ask: Vec::new(),
        deny: args.deny.clone(),
    })
}

/// `--mode`, `--model` and `--title` on a session that exists: `session/update`, from this run
/// on.
async fn update_session(
    connection: &Connection,
    session_id: &str,
    args: &RunArgs,
) -> Result<(), CommandError> {
    if args.mode.is_none() && args.model.is_none() && args.title.is_none() {
        return Ok(());
    }
    let params = SessionUpdateParams {
        session_id: session_id.to_owned(),
        permission_mode: args.mode,
        model: args.model.clone(),
        title: args.title.clone(),
    };
    connection.request::<SessionUpdate>(&params).await?;
    Ok(())
}

/// Send the prompt, or the slash command it is: the run it started, or None when a command
/// answered without one (its answer printed: the text on stdout, `--json` the result).
async fn start(
    ctx: &Context,
    connection: &Connection,
    prompt: &SessionPromptParams,
    slash: Option<&crate::commands::slash::Slash>,
) -> Result<Option<String>, CommandError> {
    let Some(slash) = slash else {
        return Ok(Some(send_prompt(connection, prompt).await?.run_id));
    };
    let result = crate::commands::slash::send(
        connection,
        &prompt.session_id,
        slash,
        prompt.client_request_id.clone(),
    )
    .await
    .map_err(crate::commands::slash::error)?;
    for warning in &result.warnings {
        crate::warn_line!("{warning}");
    }
    if let Some(run_id) = result.run_id {
        return Ok(Some(run_id));
    }
    if ctx.json {
        print_json(&serde_json::json!({
            "sessionId": prompt.session_id,
            "command": slash.name,
            "output": result.output,
            "newSessionId": result.session_id,
        }));
        return Ok(None);
    }
    if let Some(output) = &result.output {
        crate::say!("{output}");
    }
    Ok(None)
}

/// `session/prompt`, a busy session's refusal worded as agentctl commands.
async fn send_prompt(
    connection: &Connection,
    prompt: &SessionPromptParams,
) -> Result<protocol::session::SessionPromptResult, CommandError> {
    match connection.request::<SessionPrompt>(prompt).await {
        Ok(started) => Ok(started),
        Err(ClientError::Rpc { code, message, .. })
            if code == protocol::error::CONFLICT && message.contains("already active") =>
        {
            let id = &prompt.session_id;
            Err(CommandError::failed(format!(
                "session {id} is busy with a run; steer it with `agentctl steer {id} TEXT`, queue a follow-up with `agentctl followup {id} TEXT`, or cancel it with `agentctl cancel {id}`"
            )))
        }
        Err(err) => Err(err.into()),
    }
}

/// The prompt typed with its `@path` files attached, and the images of `--image` and of its
/// `@image` words; an `--image` that cannot go is an error (it was asked for by name).
async fn attachments(
    args: &RunArgs,
) -> Result<(String, Vec<protocol::session::PromptImage>), CommandError> {
    let prompt = args.prompt.clone();
    let files = args.images.clone();
    let mention = args.prompt != "-" && args.prompt.contains('@');
    let here = std::env::current_dir().ok();
    let read = tokio::task::spawn_blocking(move || {
        let mut images = Vec::new();
        for file in &files {
            images.push(crate::mentions::read_image(file)?);
        }
        let expanded = match here {
            Some(here) if mention => crate::mentions::expand(&prompt, &here),
            _ => crate::mentions::Expanded {
                text: prompt,
                ..Default::default()
            },
        };
        images.extend(expanded.images);
        Ok::<_, String>((expanded.text, images, expanded.notes))
    })
    .await
    .map_err(|err| CommandError::failed(format!("cannot read the mentioned files: {err}")))?;
    let (text, images, notes) = read.map_err(CommandError::usage)?;
    for note in notes {
        crate::warn_line!("{note}");
    }
    if let Some(problem) = protocol::session::prompt_images_problem(&images) {
        return Err(CommandError::usage(problem));
    }
    Ok((text, images))
}
