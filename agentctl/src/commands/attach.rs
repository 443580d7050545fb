//! `agentctl attach`: replay a session's transcript, then follow it live.

use protocol::methods::SessionGet;
use protocol::session::{SessionGetParams, SessionStatus};

use crate::Context;
use crate::approval_desk::ApprovalDesk;
use crate::approve_policy::Handling;
use crate::commands::render_options;
use crate::follow::{self, FollowOptions, OnInterrupt};
use crate::output::CommandError;
use crate::render::{AttachUntil, Mode, Output, Renderer};

/// `agentctl attach SESSION [--follow]`.
pub async fn attach(
    ctx: &Context,
    session_id: String,
    follow: bool,
    emit: &mut dyn FnMut(Vec<Output>),
) -> Result<u8, CommandError> {
    // On a terminal, attach answers the session's approvals inline like `run` (so runs wait
    // for it); otherwise it only watches and never makes a run wait.
    let answers = ctx.interactive && !ctx.json;
    let mut connection = if answers {
        ctx.connect_answering_approvals().await?
    } else {
        ctx.connect().await?
    };
    let session_id = crate::ids::session(&connection, &session_id).await?;
    let params = SessionGetParams {
        session_id,
        include_history: false,
    };
    let info = connection.request::<SessionGet>(&params).await?.session;
    let until = if follow {
        AttachUntil::Never
    } else {
        match (info.status, &info.run_id) {
            (SessionStatus::Running, Some(run_id)) => AttachUntil::RunFinished(run_id.clone()),
            _ => AttachUntil::Seq(info.last_seq),
        }
    };
    if !ctx.json {
        let title = info.title.as_deref().unwrap_or(&info.cwd);
        let header = format!(
            "session {} · {} · {title}\n",
            crate::ids::short(&info.session_id),
            info.model
        );
        emit(vec![Output::Stderr(
            crate::safe_text::neutralise(&header).into_owned(),
        )]);
    }
    // Everything from the start: deltas are not replayed, completed messages are.
    let subscription = follow::subscribe(&connection, &info.session_id, 0).await?;
    let options = render_options(ctx);
    let mut renderer = Renderer::new(Mode::Attach { until }, options, 0);
    renderer.set_thinking(ctx.thinking);
    let animate = options.stderr_is_tty && !options.json;
    let desk = answers.then(|| ApprovalDesk::for_session(Handling::Prompt, info.last_seq));
    let options = FollowOptions {
        on_interrupt: OnInterrupt::Detach,
        animate_spinner: animate,
        reconnect_wait: ctx.reconnect_wait,
    };
    follow::follow(
        &mut connection,
        &info.session_id,
        subscription,
        renderer,
        options,
        desk,
        emit,
    )
    .await
}
