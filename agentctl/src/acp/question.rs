//! An MCP server's question (`elicitationRequested`) asked of the editor as ACP's
//! `elicitation/create` (form mode, scoped to the session and the tool call), its answer sent
//! with `elicitation/respond`. Withdrawn when another client answers first; a request the
//! editor fails (it does not know the method, or the schema does not convert) declines.

use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::CreateElicitationRequest;
use protocol::Method;
use protocol::elicitation::ElicitationRequest;
use protocol::methods::ElicitationRespond;
use serde_json::{Value, json};

use super::link::Link;
use crate::client::Connection;

/// Ask the editor `request`, and answer the daemon with what it says.
pub(super) fn ask(
    link: &Arc<Link>,
    editor: &ConnectionTo<Client>,
    daemon: &Arc<Connection>,
    request: ElicitationRequest,
) {
    let id = request.elicitation_id.clone();
    let daemon = daemon.clone();
    let asked = json!({
        "mode": "form",
        "sessionId": link.session_id,
        "toolCallId": request.tool_call_id,
        "message": format!("MCP server {} asks: {}", request.server, request.message),
        "requestedSchema": request.requested_schema,
    });
    let Ok(asked) = serde_json::from_value::<CreateElicitationRequest>(asked) else {
        // A schema ACP cannot carry: the server hears that it was declined.
        let spawned = editor.spawn(async move {
            respond(&daemon, &id, json!("decline"), None).await;
            Ok(())
        });
        let _ = spawned;
        return;
    };
    let sent = editor.send_request(asked);
    link.open_request(&id, sent.cancellation_handle());
    let link = link.clone();
    let spawned = editor.spawn(async move {
        let answer = sent.block_task().await;
        if !link.take_request(&id) {
            return Ok(());
        }
        let answer = answer
            .ok()
            .and_then(|answer| serde_json::to_value(answer).ok())
            .unwrap_or_else(|| json!({"action": "decline"}));
        let action = match answer["action"].as_str() {
            Some(action @ ("accept" | "decline" | "cancel")) => action.to_owned(),
            _ => "decline".to_owned(),
        };
        let content = (action == "accept").then(|| answer["content"].clone());
        respond(&daemon, &id, Value::String(action), content).await;
        Ok(())
    });
    let _ = spawned;
}

/// `elicitation/respond`; an error means it was answered elsewhere, the answers did not fit
/// (the question stays open for another client) or the daemon is gone: nothing to do here.
async fn respond(daemon: &Connection, id: &str, action: Value, content: Option<Value>) {
    let mut params = json!({"elicitationId": id, "action": action});
    if let Some(content) = content.filter(Value::is_object) {
        params["content"] = content;
    }
    let _ = daemon.request_raw(ElicitationRespond::NAME, params).await;
}
