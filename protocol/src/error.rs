//! Error codes: the JSON-RPC 2.0 ones and agentd's application codes (-32000 … -32099).

/// Invalid JSON was received (also: a line over the size limit).
pub const PARSE_ERROR: i32 = -32700;
/// The JSON is not a valid JSON-RPC 2.0 request object.
pub const INVALID_REQUEST: i32 = -32600;
/// No such method.
pub const METHOD_NOT_FOUND: i32 = -32601;
/// The params do not match the method's params type.
pub const INVALID_PARAMS: i32 = -32602;
/// The daemon failed to handle a valid request (a bug or an I/O failure); details in `message`.
pub const INTERNAL_ERROR: i32 = -32603;

/// The daemon is at a limit (connections, queues, concurrent runs); retry later.
pub const OVERLOADED: i32 = -32001;
/// A method other than `initialize` was called before `initialize` on this connection.
pub const NOT_INITIALIZED: i32 = -32002;
/// The client speaks an incompatible protocol version.
pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32003;
/// The daemon is shutting down and takes no new work.
pub const SHUTTING_DOWN: i32 = -32004;
/// A named resource (session, run, approval, task) does not exist.
pub const NOT_FOUND: i32 = -32005;
/// The request conflicts with the resource's state (e.g. a prompt while a run is active).
pub const CONFLICT: i32 = -32006;
/// The daemon's configuration is unusable for this request (e.g. no LLM provider configured).
pub const CONFIG_ERROR: i32 = -32007;
/// The request was already answered by someone else (e.g. an approval decided by another client).
pub const ALREADY_DECIDED: i32 = -32008;

/// The connection comes from another user; the daemon serves only its own user.
pub const FORBIDDEN: i32 = -32009;
/// The answer would be longer than the line limit (`maxLineBytes`); ask for less.
pub const RESPONSE_TOO_BIG: i32 = -32010;

/// Every code with its name, for documentation and for clients that print codes.
pub const ALL: &[(i32, &str)] = &[
    (PARSE_ERROR, "parse error"),
    (INVALID_REQUEST, "invalid request"),
    (METHOD_NOT_FOUND, "method not found"),
    (INVALID_PARAMS, "invalid params"),
    (INTERNAL_ERROR, "internal error"),
    (OVERLOADED, "overloaded"),
    (NOT_INITIALIZED, "not initialized"),
    (UNSUPPORTED_PROTOCOL_VERSION, "unsupported protocol version"),
    (SHUTTING_DOWN, "shutting down"),
    (NOT_FOUND, "not found"),
    (CONFLICT, "conflict"),
    (CONFIG_ERROR, "configuration error"),
    (ALREADY_DECIDED, "already decided"),
    (FORBIDDEN, "forbidden"),
    (RESPONSE_TOO_BIG, "response too big"),
];

/// `error.data` of an agentd error, when it has any: machine-readable help for the client.
/// Messages never name a client's commands (editors read them too); a client words `suggest`
/// in its own terms (agentctl prints its command for the method). Clients ignore fields they
/// do not know, and `data` may be absent.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct ErrorData {
    /// What the client can do next to recover.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggest: Option<Suggestion>,
}

/// A method whose result helps the user recover, e.g. `session/list` to see the session ids
/// that exist after `session not found`.
#[derive(
    Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct Suggestion {
    /// A method this daemon serves (one of `initialize`'s `capabilities.methods`).
    pub method: String,
}

impl ErrorData {
    /// Data suggesting the client call `method` (one of [`crate::methods::ALL`]).
    pub fn suggest_method(method: &str) -> ErrorData {
        ErrorData {
            suggest: Some(Suggestion {
                method: method.to_owned(),
            }),
        }
    }
}
