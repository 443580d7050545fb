//! Parsing one incoming JSON-RPC message into a call the dispatcher can run (owned, so it can
//! move into a task), or into the error answer the message gets. Request ids are any JSON
//! string or number: those jsonrpsee's `Id` cannot carry (negative, fractional, past `u64`)
//! travel beside the call as a `VerbatimId` and are put back into its answer.

use jsonrpsee::MethodResponse;
use jsonrpsee::types::{ErrorObjectOwned, Id};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use protocol::error::{self as codes, echo, echo_message};

/// A request parsed off the wire, owned so it can move into a task.
pub struct IncomingCall {
    /// The id as jsonrpsee carries it (`Id::Null` when `verbatim_id` holds the real one).
    pub id: Id<'static>,
    /// The id as the client wrote it, when `Id` cannot carry it; its answer gets it back.
    pub verbatim_id: VerbatimId,
    pub method: String,
    pub params: Option<Box<RawValue>>,
}

/// A request id that jsonrpsee's `Id` (null, `u64` or string) cannot carry: a negative,
/// fractional or too large number, kept as the client wrote it. Empty for every other id.
#[derive(Clone, Debug, Default)]
pub struct VerbatimId(Option<Box<RawValue>>);

/// An error answer to a message, with the id it goes back with.
pub struct Refusal {
    pub response: MethodResponse,
    pub verbatim_id: VerbatimId,
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
pub fn parse_call(text: &str) -> Result<Option<IncomingCall>, Refusal> {
    let verbatim_id = VerbatimId::default();
    if text.trim_start().starts_with('[') {
        // Only the outer message may be a batch; an array is never one request either.
        return Err(Refusal {
            response: error_response(
                Id::Null,
                codes::INVALID_REQUEST,
                "invalid request: a batch inside a batch is not allowed; put its requests in the outer batch"
                    .to_owned(),
            ),
            verbatim_id,
        });
    }
    let refuse =
        |id: Option<Id<'static>>, verbatim_id: &VerbatimId, code, message: String| Refusal {
            response: error_response(id.unwrap_or(Id::Null), code, message),
            verbatim_id: verbatim_id.clone(),
        };
    let raw: RawRequest = match serde_json::from_str(text) {
        Ok(raw) => raw,
        Err(err) if err.is_syntax() || err.is_eof() => {
            return Err(refuse(
                None,
                &verbatim_id,
                codes::PARSE_ERROR,
                format!("invalid JSON: {}", echo_message(&err.to_string())),
            ));
        }
        Err(err) => {
            return Err(refuse(
                None,
                &verbatim_id,
                codes::INVALID_REQUEST,
                format!("invalid request: {}", echo_message(&err.to_string())),
            ));
        }
    };
    let (id, verbatim_id) = match raw.id {
        None => (None, verbatim_id),
        Some(raw_id) => match serde_json::from_str::<Id>(raw_id.get()) {
            Ok(id) => (Some(id.into_owned()), verbatim_id),
            Err(_) if serde_json::from_str::<serde_json::Number>(raw_id.get()).is_ok() => {
                (Some(Id::Null), VerbatimId(Some(raw_id.to_owned())))
            }
            Err(_) => {
                return Err(refuse(
                    None,
                    &verbatim_id,
                    codes::INVALID_REQUEST,
                    "invalid request: `id` must be a string, a number or null".to_owned(),
                ));
            }
        },
    };
    if raw.jsonrpc != Some("2.0") {
        return Err(refuse(
            id,
            &verbatim_id,
            codes::INVALID_REQUEST,
            "invalid request: `jsonrpc` must be \"2.0\"".to_owned(),
        ));
    }
    let Some(method) = raw.method else {
        // A response to a server request, or garbage with an id; nothing to answer for the
        // former, an error for the latter.
        return match id {
            Some(_) if text.contains("\"result\"") || text.contains("\"error\"") => Ok(None),
            id => Err(refuse(
                id,
                &verbatim_id,
                codes::INVALID_REQUEST,
                "invalid request: missing `method`".to_owned(),
            )),
        };
    };
    if let Some(params) = &raw.params {
        let first = params.get().as_bytes().first();
        if !matches!(first, Some(b'{') | Some(b'[')) {
            return Err(refuse(
                id,
                &verbatim_id,
                codes::INVALID_REQUEST,
                "invalid request: `params` must be an object or an array".to_owned(),
            ));
        }
    }
    let Some(id) = id else {
        // A notification from the client: JSON-RPC forbids answering it.
        tracing::debug!(method = %echo(&method), "ignoring client notification");
        return Ok(None);
    };
    Ok(Some(IncomingCall {
        id,
        verbatim_id,
        method,
        params: raw.params,
    }))
}

pub(super) fn error_response(id: Id<'static>, code: i32, message: String) -> MethodResponse {
    MethodResponse::error(id, ErrorObjectOwned::owned(code, message, None::<()>))
}

impl VerbatimId {
    /// Whether the answer needs its id put back.
    pub fn is_some(&self) -> bool {
        self.0.is_some()
    }

    /// `answer` (one JSON-RPC response) with this id in place of the one it carries; the
    /// answer unchanged when there is no verbatim id (or it is not a response).
    pub fn restore(&self, answer: Box<RawValue>) -> Box<RawValue> {
        let Some(id) = &self.0 else {
            return answer;
        };
        let Ok(parsed) = serde_json::from_str::<AnswerParts>(answer.get()) else {
            return answer;
        };
        // An `Option<&RawValue>` reads a `null` result as absent.
        let result = match (parsed.result, &parsed.error) {
            (None, None) => Some(RawValue::NULL),
            (result, _) => result,
        };
        let restored = RestoredAnswer {
            jsonrpc: "2.0",
            id,
            result,
            error: parsed.error,
        };
        serde_json::value::to_raw_value(&restored).unwrap_or(answer)
    }
}

/// What an answer holds besides its id.
#[derive(Deserialize)]
struct AnswerParts<'a> {
    #[serde(default, borrow)]
    result: Option<&'a RawValue>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Serialize)]
struct RestoredAnswer<'a> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a RawValue>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(text: &str) -> IncomingCall {
        match parse_call(text) {
            Ok(Some(call)) => call,
            _ => panic!("not a call: {text}"),
        }
    }

    #[test]
    fn ids_jsonrpsee_cannot_carry_come_back_as_written() {
        for id in ["-1", "1.5", "1e3", "18446744073709551616"] {
            let call = call(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m"}}"#));
            assert!(call.verbatim_id.is_some(), "{id}");
            for answer in [
                r#"{"jsonrpc":"2.0","id":null,"result":{"a":1}}"#,
                r#"{"jsonrpc":"2.0","id":null,"result":null}"#,
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"x"}}"#,
            ] {
                let raw = RawValue::from_string(answer.to_owned()).unwrap();
                let restored = call.verbatim_id.restore(raw);
                let expected = answer.replace("\"id\":null", &format!("\"id\":{id}"));
                assert_eq!(restored.get(), expected);
            }
        }
        for id in ["7", "\"x\""] {
            let call = call(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m"}}"#));
            assert!(!call.verbatim_id.is_some(), "{id}");
        }
    }

    #[test]
    fn an_array_is_not_a_request() {
        for text in [
            r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#,
            r#"["2.0",1,"m"]"#,
        ] {
            let Err(refusal) = parse_call(text) else {
                panic!("accepted {text}");
            };
            assert_eq!(
                refusal.response.as_error_code(),
                Some(codes::INVALID_REQUEST)
            );
        }
    }
}
