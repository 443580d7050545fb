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
    /// Names that exist and are closest to the one sent (e.g. the commands nearest an unknown
    /// `session/command` name), nearest first; the method lists them all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
}

impl ErrorData {
    /// Data suggesting the client call `method` (one of [`crate::methods::ALL`]).
    pub fn suggest_method(method: &str) -> ErrorData {
        ErrorData {
            suggest: Some(Suggestion {
                method: method.to_owned(),
                names: Vec::new(),
            }),
        }
    }

    /// Data suggesting `names` (nearest first), and `method` to list every one.
    pub fn suggest_names(method: &str, names: Vec<String>) -> ErrorData {
        ErrorData {
            suggest: Some(Suggestion {
                method: method.to_owned(),
                names,
            }),
        }
    }
}

/// The most characters of a client's value (an id, a name, a path, a method name) an error
/// message quotes: an invalid 15 MiB id echoed back whole, on many connections at once, once
/// took the daemon to 2 GB. Past it the value is cut, and says how long it was.
pub const MAX_ECHOED_CHARS: usize = 200;

/// `value` as an error message may quote it: whole up to [`MAX_ECHOED_CHARS`] characters,
/// else its first ones (cut on a character boundary), an ellipsis and its length.
pub fn echo(value: &str) -> std::borrow::Cow<'_, str> {
    match value.char_indices().nth(MAX_ECHOED_CHARS) {
        None => std::borrow::Cow::Borrowed(value),
        Some((cut, _)) => std::borrow::Cow::Owned(format!(
            "{}… ({} characters)",
            &value[..cut],
            value.chars().count()
        )),
    }
}

/// A message that may quote client values (a parser's reason, such as serde's
/// `invalid type: string "…", expected …` or ``unknown variant `…` ``): each part between
/// quotes or backticks is cut as [`echo`] cuts a value, so the kind of error and what was
/// expected stay whole. Should that still leave more than [`MAX_MESSAGE_CHARS`] characters,
/// its first and last [`MAX_ECHOED_CHARS`] halves are kept around what was left out.
pub fn echo_message(message: &str) -> std::borrow::Cow<'_, str> {
    if message.len() <= MAX_ECHOED_CHARS {
        return std::borrow::Cow::Borrowed(message);
    }
    let mut out = String::new();
    let mut rest = message;
    while let Some(open) = rest.find(['"', '`']) {
        let quote = &rest[open..=open];
        out.push_str(&rest[..=open]);
        rest = &rest[open + 1..];
        let close = closing(rest, quote.as_bytes()[0]);
        out.push_str(&echo(&rest[..close]));
        rest = &rest[close..];
        if let Some(after) = rest.strip_prefix(quote) {
            out.push_str(quote);
            rest = after;
        }
    }
    out.push_str(rest);
    let total = out.chars().count();
    if total <= MAX_MESSAGE_CHARS {
        return std::borrow::Cow::Owned(out);
    }
    let half = MAX_ECHOED_CHARS / 2;
    let at = |nth: usize| out.char_indices().nth(nth).map_or(out.len(), |(at, _)| at);
    let (head_end, tail_start) = (at(half), at(total - half));
    std::borrow::Cow::Owned(format!(
        "{}… ({} characters left out) …{}",
        &out[..head_end],
        total - 2 * half,
        &out[tail_start..]
    ))
}

/// Where the quoted part at the start of `text` ends: the first `quote` not escaped by a
/// backslash (Rust's `{:?}`, which serde uses, escapes quotes inside), or the end of `text`.
fn closing(text: &str, quote: u8) -> usize {
    let mut escaped = false;
    for (at, byte) in text.bytes().enumerate() {
        match byte {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            _ if byte == quote => return at,
            _ => {}
        }
    }
    text.len()
}

/// The most characters [`echo_message`] leaves in a message.
pub const MAX_MESSAGE_CHARS: usize = 1000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_quoted_whole() {
        assert_eq!(echo("ses_1"), "ses_1");
        let exact = "é".repeat(MAX_ECHOED_CHARS);
        assert_eq!(echo(&exact), exact);
        assert_eq!(echo_message("invalid type"), "invalid type");
    }

    #[test]
    fn long_values_are_cut_on_a_character_boundary_with_their_length() {
        let long = "é".repeat(MAX_ECHOED_CHARS + 1);
        let echoed = echo(&long);
        assert_eq!(
            echoed,
            format!(
                "{}… ({} characters)",
                "é".repeat(MAX_ECHOED_CHARS),
                MAX_ECHOED_CHARS + 1
            )
        );
    }

    #[test]
    fn long_messages_keep_their_start_and_end() {
        let message = format!(
            "invalid type: string \"{}\", expected u32 at line 1 column 9",
            "x".repeat(10_000)
        );
        let echoed = echo_message(&message);
        let value = format!("{}… (10000 characters)", "x".repeat(MAX_ECHOED_CHARS));
        assert_eq!(
            echoed,
            format!("invalid type: string \"{value}\", expected u32 at line 1 column 9")
        );
        let variant = format!(
            "unknown variant `{}`, expected one of `allow`, `deny`",
            "y".repeat(5000)
        );
        let echoed = echo_message(&variant);
        assert!(echoed.starts_with("unknown variant `yyy"), "{echoed}");
        assert!(
            echoed.ends_with("… (5000 characters)`, expected one of `allow`, `deny`"),
            "{echoed}"
        );
        let escaped = format!(
            "invalid type: string {:?}, expected u32",
            format!("a\"{}", "q".repeat(500))
        );
        let echoed = echo_message(&escaped);
        assert!(
            echoed.ends_with("… (503 characters)\", expected u32"),
            "{echoed}"
        );
        // Our own words stay whole, however long.
        let ours = format!("expected one of {}", "`mode`, ".repeat(40));
        assert_eq!(echo_message(&ours), ours);
    }

    #[test]
    fn a_message_long_without_quotes_keeps_its_start_and_end() {
        let message = format!("bad {} end", "z".repeat(5000));
        let echoed = echo_message(&message);
        assert!(echoed.starts_with("bad zz"), "{echoed}");
        assert!(echoed.ends_with("zz end"), "{echoed}");
        assert!(echoed.contains("characters left out"), "{echoed}");
        assert!(echoed.chars().count() < MAX_ECHOED_CHARS + 50, "{echoed}");
    }
}
