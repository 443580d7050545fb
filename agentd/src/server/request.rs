//! Parsing one incoming JSON-RPC message into a call the dispatcher can run (owned, so it can
//! move into a task), or into the error answer the message gets.

use jsonrpsee::MethodResponse;
use jsonrpsee::types::{ErrorObjectOwned, Id};
use serde::Deserialize;
use serde_json::value::RawValue;

use protocol::error as codes;

/// A request parsed off the wire, owned so it can move into a task.
pub struct IncomingCall {
    pub id: Id<'static>,
    pub method: String,
    pub params: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct RawRequest<'a> {
    jsonrpc: Option<&'a str>,
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    method: Option<String>,
    #[serde(default)]
    params: Option<Box<RawValue>>,
}

/// Parse one JSON-RPC message. `Ok(None)` for messages that need no answer (notifications
/// from the client, responses); `Err` holds the error response to send.
pub fn parse_call(text: &str) -> Result<Option<IncomingCall>, MethodResponse> {
    let raw: RawRequest = match serde_json::from_str(text) {
        Ok(raw) => raw,
        Err(err) if err.is_syntax() || err.is_eof() => {
            return Err(error_response(
                Id::Null,
                codes::PARSE_ERROR,
                format!("invalid JSON: {err}"),
            ));
        }
        Err(err) => {
            return Err(error_response(
                Id::Null,
                codes::INVALID_REQUEST,
                format!("invalid request: {err}"),
            ));
        }
    };
    let id = match raw.id.map(|id| serde_json::from_str::<Id>(id.get())) {
        None => None,
        Some(Ok(id)) => Some(id.into_owned()),
        Some(Err(_)) => {
            return Err(error_response(
                Id::Null,
                codes::INVALID_REQUEST,
                "invalid request: `id` must be a string, a number or null".to_owned(),
            ));
        }
    };
    if raw.jsonrpc != Some("2.0") {
        return Err(error_response(
            id.unwrap_or(Id::Null),
            codes::INVALID_REQUEST,
            "invalid request: `jsonrpc` must be \"2.0\"".to_owned(),
        ));
    }
    let Some(method) = raw.method else {
        // A response to a server request, or garbage with an id; nothing to answer for the
        // former, an error for the latter.
        return match id {
            Some(_) if text.contains("\"result\"") || text.contains("\"error\"") => Ok(None),
            id => Err(error_response(
                id.unwrap_or(Id::Null),
                codes::INVALID_REQUEST,
                "invalid request: missing `method`".to_owned(),
            )),
        };
    };
    if let Some(params) = &raw.params {
        let first = params.get().as_bytes().first();
        if !matches!(first, Some(b'{') | Some(b'[')) {
            return Err(error_response(
                id.unwrap_or(Id::Null),
                codes::INVALID_REQUEST,
                "invalid request: `params` must be an object or an array".to_owned(),
            ));
        }
    }
    let Some(id) = id else {
        // A notification from the client: JSON-RPC forbids answering it.
        tracing::debug!(%method, "ignoring client notification");
        return Ok(None);
    };
    Ok(Some(IncomingCall {
        id,
        method,
        params: raw.params,
    }))
}

pub(super) fn error_response(id: Id<'static>, code: i32, message: String) -> MethodResponse {
    MethodResponse::error(id, ErrorObjectOwned::owned(code, message, None::<()>))
}
