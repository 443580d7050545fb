//! rmcp's errors (and a server process's exit) in words for `mcp/list`, statuses and tool
//! results: what failed (the URL or the command), how (refused, HTTP status, a timeout), and
//! what to check; never the Rust type names rmcp's own messages carry (`Transport [rmcp::transport::worker::WorkerTransport<…`).

use rmcp::ServiceError;
use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

/// Why `initialize` failed, for the server at `place` (its URL, or "the server").
pub(super) fn initialize_failed(error: &ClientInitializeError, place: &str) -> String {
    match error {
        ClientInitializeError::TransportError { error, .. } => transport(error, place),
        ClientInitializeError::ConnectionClosed(_) => {
            format!("{place} closed the connection during initialize (see its log)")
        }
        ClientInitializeError::JsonRpcError(error) => {
            format!("{place} refused initialize: {}", error.message)
        }
        ClientInitializeError::NoCompatibleProtocolVersion {
            server_supported, ..
        } => format!(
            "{place} speaks no MCP protocol version agentd does (it offers {}); update the server or agentd",
            server_supported
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => format!(
            "{place} answered initialize with something agentd cannot use ({}); check that it is an MCP server",
            without_type_names(&other.to_string())
        ),
    }
}

/// Why a request to the server at `place` failed.
pub(super) fn service_failed(error: &ServiceError, place: &str) -> String {
    match error {
        ServiceError::McpError(error) => format!("{place} refused it: {}", error.message),
        ServiceError::TransportSend(error) => transport(error, place),
        ServiceError::TransportClosed => format!("{place} closed the connection"),
        ServiceError::Timeout { timeout } => {
            format!("{place} did not answer within {} s", timeout.as_secs_f64())
        }
        other => without_type_names(&other.to_string()),
    }
}

/// The bytes of an HTTP response over the limit, when that is why a request failed.
pub(super) fn too_large(error: &ServiceError) -> Option<usize> {
    let ServiceError::TransportSend(error) = error else {
        return None;
    };
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = cause {
        if let Some(StreamableHttpError::<reqwest::Error>::ResponseBodyTooLarge { max_size }) =
            current.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            return Some(*max_size);
        }
        cause = current.source();
    }
    None
}

/// A transport failure in words: the HTTP client's own cause when there is one.
fn transport(error: &(dyn std::error::Error + 'static), place: &str) -> String {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = cause {
        if let Some(http) = current.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            return http_failed(http, place);
        }
        if let Some(io) = current.downcast_ref::<std::io::Error>() {
            return format!("cannot talk to {place}: {io}");
        }
        cause = current.source();
    }
    format!(
        "cannot talk to {place}: {}",
        without_type_names(&innermost(error))
    )
}

fn http_failed(error: &StreamableHttpError<reqwest::Error>, url: &str) -> String {
    match error {
        StreamableHttpError::Client(error) if error.is_connect() => format!(
            "cannot connect to {url}: {}; check that the server runs and that the URL is right",
            innermost(error)
        ),
        StreamableHttpError::Client(error) if error.is_timeout() => {
            format!("{url} did not answer in time; check that the server runs")
        }
        StreamableHttpError::Client(error) => match error.status() {
            Some(status) => format!("{url} answered HTTP {status}; check the URL"),
            None => format!(
                "the request to {url} failed: {}; check that the server runs",
                innermost(error)
            ),
        },
        StreamableHttpError::HttpStatus(status) => format!(
            "{url} answered HTTP {}; the server is failing or overloaded, it is retried",
            status.status
        ),
        StreamableHttpError::AuthRequired(_) | StreamableHttpError::InsufficientScope(_) => {
            format!(
                "{url} asks for authorization (HTTP 401/403); set an Authorization header under the server's headers"
            )
        }
        StreamableHttpError::UnexpectedServerResponse(what) => format!(
            "{url} answered {}; check that the URL is the server's MCP endpoint",
            without_type_names(what)
        ),
        StreamableHttpError::UnexpectedContentType(kind) => format!(
            "{url} answered with content type {}, not JSON or an event stream; check that the URL is the server's MCP endpoint",
            kind.as_deref().unwrap_or("none")
        ),
        StreamableHttpError::ResponseBodyTooLarge { max_size } => {
            format!("{url} sent a response over the limit of {max_size} bytes")
        }
        StreamableHttpError::SessionExpired => {
            format!("{url} no longer knows the session (HTTP 404); it is reconnected")
        }
        other => format!(
            "the request to {url} failed: {}",
            without_type_names(&other.to_string())
        ),
    }
}

/// The innermost cause of `error` ("Connection refused (os error 111)").
pub(super) fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

/// `text` without Rust paths (`a::b::C<…>`): what rmcp's messages say of its types.
pub(super) fn without_type_names(text: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    let mut depth = 0usize;
    for word in text.split(' ') {
        let opens = word.matches('<').count();
        let closes = word.matches('>').count();
        let in_type = depth > 0 || word.contains("::");
        depth = (depth + opens).saturating_sub(closes);
        if !in_type {
            kept.push(word);
        }
    }
    kept.join(" ").replace("[]", "").replace("  ", " ")
}

/// "exited with status 1", "was killed by signal 9".
pub(super) fn describe_exit(status: std::process::ExitStatus) -> String {
    match (status.code(), agentd_core::platform::exit_signal(&status)) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => format!("ended ({status})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_are_left_out() {
        assert_eq!(
            without_type_names(
                "Send message error Transport [rmcp::transport::worker::WorkerTransport<rmcp::x::Y<reqwest::Client, A>>] error: connection refused"
            ),
            "Send message error Transport error: connection refused"
        );
        assert_eq!(without_type_names("plain words"), "plain words");
    }
}
