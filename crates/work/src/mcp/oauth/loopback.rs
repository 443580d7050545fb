//! The loopback redirect of a login (RFC 8252 §7.3): a listener on 127.0.0.1 at a port the
//! system picks, serving `/callback` until a request with the login's `state` comes (a
//! request with another state is answered and ignored), answered with a small page telling
//! the user to go back to the terminal.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The path the redirect comes to.
const CALLBACK_PATH: &str = "/callback";
/// The most bytes of a request read: the request line and headers of a browser's GET.
const MAX_REQUEST_BYTES: usize = 16 * 1024;
/// How long one connection may take to send its request (a browser's preconnect that sends
/// nothing must not hold the listener).
const REQUEST_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A bound listener waiting for the redirect.
pub(crate) struct Loopback {
    listener: TcpListener,
    port: u16,
}

/// What the redirect brought.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Redirect {
    Code(String),
    /// The authorization server's `error` (and `error_description`).
    Refused(String),
}

impl Loopback {
    pub(crate) async fn bind() -> Result<Self, String> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.map_err(|error| {
            format!("cannot listen on 127.0.0.1 for the login's redirect: {error}")
        })?;
        let port = listener
            .local_addr()
            .map_err(|error| format!("cannot read the redirect listener's port: {error}"))?
            .port();
        Ok(Self { listener, port })
    }

    pub(crate) fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    /// Serves until the redirect with `state` comes; runs until dropped otherwise.
    pub(crate) async fn wait(self, state: &str) -> Redirect {
        loop {
            let Ok((stream, _)) = self.listener.accept().await else {
                continue;
            };
            if let Some(redirect) = serve(stream, state).await {
                return redirect;
            }
        }
    }
}

/// Answers one connection; the redirect when it was the login's.
async fn serve(mut stream: TcpStream, state: &str) -> Option<Redirect> {
    let target = tokio::time::timeout(REQUEST_READ_TIMEOUT, read_target(&mut stream))
        .await
        .ok()
        .flatten()?;
    let url = reqwest::Url::parse(&format!("http://127.0.0.1{target}")).ok()?;
    if url.path() != CALLBACK_PATH {
        respond(&mut stream, "404 Not Found", "Not found.").await;
        return None;
    }
    let query = |name: &str| {
        url.query_pairs()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    };
    if query("state").as_deref() != Some(state) {
        respond(
            &mut stream,
            "400 Bad Request",
            "This is not the login agentd is waiting for (its state does not match). Start the login again from where you began it.",
        )
        .await;
        return None;
    }
    let redirect = match (query("code"), query("error")) {
        (Some(code), None) => Redirect::Code(code),
        (_, Some(error)) => Redirect::Refused(match query("error_description") {
            Some(description) => format!("{error} ({description})"),
            None => error,
        }),
        (None, None) => Redirect::Refused("the redirect carried no code".to_owned()),
    };
    let page = match &redirect {
        Redirect::Code(_) => "Login received. You can close this page and return to the terminal.",
        Redirect::Refused(_) => "The login was refused. Return to the terminal to see why.",
    };
    respond(&mut stream, "200 OK", page).await;
    Some(redirect)
}

/// The request target of a `GET` (None: not a complete GET within the bound).
async fn read_target(stream: &mut TcpStream) -> Option<String> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buffer.windows(4).any(|window| window == b"\r\n\r\n") {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 || buffer.len() + read > MAX_REQUEST_BYTES {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    let head = String::from_utf8_lossy(&buffer);
    let mut parts = head.lines().next()?.split(' ');
    (parts.next()? == "GET").then_some(())?;
    let target = parts.next()?;
    target.starts_with('/').then(|| target.to_owned())
}

async fn respond(stream: &mut TcpStream, status: &str, text: &str) {
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>agentd</title></head>\
         <body style=\"font-family: sans-serif; margin: 3em\"><p>{text}</p></body></html>"
    );
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}
