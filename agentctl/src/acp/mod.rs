//! `agentctl acp`: an Agent Client Protocol agent on stdio (JSON-RPC 2.0, one message per
//! line) that projects ACP onto the daemon. The one place that knows ACP: its crate stays
//! out of the daemon and the rest of agentctl.
//!
//! Every request is answered from a task of the editor connection, so a long prompt turn
//! never holds the others (cancel, permission answers). The editor closing stdin ends the
//! bridge; the daemon's sessions and runs go on.

mod bridge;
mod commands;
mod link;
mod model;
mod permission;
mod prompt;
mod question;
mod stdio;
mod translate;

use std::sync::Arc;

use agent_client_protocol::Agent;
use agent_client_protocol::v1::schema::{
    CancelNotification, CloseSessionRequest, InitializeRequest, ListSessionsRequest,
    LoadSessionRequest, NewSessionRequest, PromptRequest, ResumeSessionRequest,
    SetSessionConfigOptionRequest, SetSessionModeRequest,
};

use crate::Context;
use crate::output::CommandError;
use bridge::Bridge;

/// Serve ACP on stdin/stdout until the editor closes stdin.
pub async fn serve(ctx: &Context) -> Result<(), CommandError> {
    let window = Arc::new(stdio::UpdateWindow::default());
    let bridge = Arc::new(Bridge::new(
        ctx.socket.clone(),
        !ctx.no_start,
        window.clone(),
    ));
    let (b1, b2, b3, b4, b5, b6, b7, b8, b9, b10) = (
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
        bridge,
    );
    Agent
        .v1()
        .name("agentd")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _editor| {
                responder.respond(b1.initialize(request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, editor| {
                let bridge = b2.clone();
                let answering = editor.clone();
                editor.spawn(async move {
                    let created = bridge.new_session(&answering, request).await;
                    let session_id = created.as_ref().ok().map(|r| r.session_id.0.to_string());
                    let _ = responder.respond_with_result(created);
                    // After the answer: the editor knows the session by then.
                    if let Some(session_id) = session_id {
                        bridge.announce_commands(&answering, &session_id).await;
                    }
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, editor| {
                let bridge = b3.clone();
                let answering = editor.clone();
                editor.spawn(async move {
                    let session_id = request.session_id.0.to_string();
                    match bridge.load_session(&answering, request).await {
                        Ok((response, answered)) => {
                            let _ = responder.respond(response);
                            let _ = answered.send(());
                            bridge.announce_commands(&answering, &session_id).await;
                        }
                        Err(err) => {
                            let _ = responder.respond_with_error(err);
                        }
                    }
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ResumeSessionRequest, responder, editor| {
                let bridge = b4.clone();
                let answering = editor.clone();
                editor.spawn(async move {
                    let session_id = request.session_id.0.to_string();
                    let resumed = bridge.resume_session(&answering, request).await;
                    let ok = resumed.is_ok();
                    let _ = responder.respond_with_result(resumed);
                    if ok {
                        bridge.announce_commands(&answering, &session_id).await;
                    }
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, editor| {
                let bridge = b5.clone();
                editor.spawn(async move {
                    let _ = responder.respond_with_result(bridge.list_sessions(request).await);
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CloseSessionRequest, responder, editor| {
                let bridge = b6.clone();
                editor.spawn(async move {
                    let _ = responder.respond_with_result(bridge.close_session(request).await);
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, editor| {
                let bridge = b7.clone();
                let answering = editor.clone();
                let cancellation = responder.cancellation();
                editor.spawn(async move {
                    // `$/cancel_request` for the turn cancels its run; the turn still ends
                    // with the run (`cancelled`), as after `session/cancel`.
                    let session_id = request.session_id.0.to_string();
                    let cancel_on_request = async {
                        cancellation.cancelled().await;
                        let _ = bridge.cancel_run(&session_id).await;
                        std::future::pending::<()>().await
                    };
                    let answer = tokio::select! {
                        answer = bridge.prompt(&answering, request) => answer,
                        () = cancel_on_request => return Ok(()),
                    };
                    let _ = responder.respond_with_result(answer);
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, editor| {
                let bridge = b8.clone();
                let answering = editor.clone();
                editor.spawn(async move {
                    let _ =
                        responder.respond_with_result(bridge.set_mode(&answering, request).await);
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder, editor| {
                let bridge = b10.clone();
                editor.spawn(async move {
                    let _ = responder.respond_with_result(bridge.set_config_option(request).await);
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, editor| {
                let bridge = b9.clone();
                editor.spawn(async move {
                    // A notification has no answer: a failed cancel shows as the run going on.
                    let _ = bridge.cancel(notification).await;
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(stdio::transport(window))
        .await
        .map_err(|err| CommandError::failed(format!("the ACP connection failed: {err}")))
}
