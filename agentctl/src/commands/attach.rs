//! `agentctl attach`: replay a session's transcript, then follow it live.

use protocol::methods::SessionGet;
use protocol::session::{SessionGetParams, SessionStatus};

use crate::Context;
use crate::commands::render_options;
use crate::follow::{self, OnInterrupt};
use crate::output::CommandError;
use crate::render::{AttachUntil, Mode, Output, Renderer};

/// `agentctl attach SESSION [--follow]`.
pub async fn attach(
    ctx: &Context,
    session_id: String,
    follow: bool,
    emit: &mut dyn FnMut(Vec<Output>),
) -> Result<u8, CommandError> {
    let connection = ctx.connect().await?;
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
        emit(vec![Output::Stderr(format!(
            "session {} · {} · {title}\n",
            info.session_id, info.model
        ))]);
    }
    // Everything from the start: deltas are not replayed, completed messages are.
    let subscription = follow::subscribe(&connection, &info.session_id, 0).await?;
    let options = render_options(ctx.json);
    let renderer = Renderer::new(Mode::Attach { until }, options, 0);
    let animate = options.stderr_is_tty && !options.json;
    follow::follow(
        &connection,
        &info.session_id,
        subscription,
        renderer,
        OnInterrupt::Detach,
        animate,
        None,
        emit,
    )
    .await
}
