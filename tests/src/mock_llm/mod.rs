//! The scripted mock LLM server: real HTTP/1.1 + SSE speaking the OpenAI chat completions and
//! Anthropic messages formats, replying from a script and recording every request.
//!
//! Endpoints: `POST /v1/chat/completions` and `POST /chat/completions` (OpenAI), `POST
//! /v1/messages` (Anthropic); control endpoints `POST /mock/replies` (push a JSON array of
//! `Reply`), `POST /mock/release` (held replies go on) and `GET /mock/requests` (the recorded
//! requests) for out-of-process use.

mod render;
mod reply;

use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::{Notify, oneshot, watch};
use tokio::task::JoinSet;

pub use self::render::Format;
pub use self::reply::{MockError, MockToolCall, MockUsage, Reply};

/// A handle on a running mock server. Clones share the server; it stops when the last handle
/// drops or `shutdown` is called.
#[derive(Clone)]
pub struct MockLlm {
    handle: Arc<Handle>,
}

/// One request as the mock received it.
#[derive(Clone, Debug, Serialize)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names lowercased; repeated headers joined with ", ".
    pub headers: BTreeMap<String, String>,
    /// The exact body bytes (lossy UTF-8).
    pub body: String,
    /// The body parsed as JSON (`null` when it is not JSON).
    pub json: serde_json::Value,
    /// When its body had arrived whole (for timings: the moment the request reached the
    /// model endpoint, not when a test got round to looking).
    #[serde(skip)]
    pub received_at: std::time::Instant,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(&name.to_lowercase()).map(String::as_str)
    }
}

/// How long `wait_for_requests` waits before failing the test.
const WAIT_FOR_REQUESTS_TIMEOUT: Duration = Duration::from_secs(30);

struct Handle {
    state: Arc<State>,
    addr: SocketAddr,
    /// Dropping (or sending on) it stops the accept loop and aborts open connections.
    shutdown: Mutex<Option<oneshot::Sender<()>>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        if let Some(sender) = lock(&self.shutdown).take() {
            let _ = sender.send(());
        }
    }
}

struct State {
    script: Mutex<VecDeque<Reply>>,
    /// Replies for requests whose body contains a marker (`push_for`), taken before `script`.
    routed: Mutex<Vec<(String, Reply)>>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// Woken on every recorded request.
    recorded: Notify,
    /// Script exhausted: echo the user's text instead of answering 500.
    echo: bool,
    /// How many times the test released held replies: a held stream goes on once this is
    /// above what it was when its request came.
    releases: watch::Sender<u64>,
}

impl MockLlm {
    /// Strict mode on 127.0.0.1 and a free port: an exhausted script answers HTTP 500.
    pub async fn start() -> MockLlm {
        Self::bind_or_panic(false).await
    }

    /// Echo mode: an exhausted script answers "You said: <last user text>".
    pub async fn start_echo() -> MockLlm {
        Self::bind_or_panic(true).await
    }

    async fn bind_or_panic(echo: bool) -> MockLlm {
        match Self::bind(0, echo).await {
            Ok(mock) => mock,
            Err(error) => panic!("mock-llm: cannot listen on 127.0.0.1: {error}"),
        }
    }

    /// Listens on 127.0.0.1:`port` (0: any free port).
    pub async fn bind(port: u16, echo: bool) -> std::io::Result<MockLlm> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            script: Mutex::new(VecDeque::new()),
            routed: Mutex::new(Vec::new()),
            requests: Mutex::new(Vec::new()),
            recorded: Notify::new(),
            echo,
            releases: watch::Sender::new(0),
        });
        let (shutdown_sender, shutdown_receiver) = oneshot::channel();
        tokio::spawn(accept_loop(listener, state.clone(), shutdown_receiver));
        Ok(MockLlm {
            handle: Arc::new(Handle {
                state,
                addr,
                shutdown: Mutex::new(Some(shutdown_sender)),
            }),
        })
    }

    /// `http://127.0.0.1:PORT`: the Anthropic base URL.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.handle.addr)
    }

    /// `http://127.0.0.1:PORT/v1`: the OpenAI base URL.
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }

    /// Queues a reply for the first request whose body contains `marker` (e.g. a subagent's
    /// prompt), whenever it comes; such replies are taken before the ordered ones.
    pub fn push_for(&self, marker: impl Into<String>, reply: Reply) {
        lock(&self.handle.state.routed).push((marker.into(), reply));
    }

    /// Queues a reply; replies are consumed in order, one per model request, whatever endpoint.
    pub fn push(&self, reply: Reply) {
        lock(&self.handle.state.script).push_back(reply);
    }

    /// Lets every held reply (`Reply::held`) streaming now go on with its held text.
    pub fn release(&self) {
        self.handle.state.releases.send_modify(|count| *count += 1);
    }

    /// Replies not consumed yet.
    pub fn remaining(&self) -> usize {
        lock(&self.handle.state.script).len()
    }

    /// Every model request so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.handle.state.requests).clone()
    }

    /// The requests recorded after the first `seen` (only those are copied).
    pub fn requests_after(&self, seen: usize) -> Vec<RecordedRequest> {
        lock(&self.handle.state.requests)
            .get(seen..)
            .map(<[RecordedRequest]>::to_vec)
            .unwrap_or_default()
    }

    /// Waits until more than `seen` requests were recorded and returns those after the first
    /// `seen`; panics after 30 s.
    pub async fn wait_for_requests_after(&self, seen: usize) -> Vec<RecordedRequest> {
        let deadline = tokio::time::Instant::now() + WAIT_FOR_REQUESTS_TIMEOUT;
        loop {
            let notified = self.handle.state.recorded.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let new = self.requests_after(seen);
            if !new.is_empty() {
                return new;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                panic!(
                    "mock-llm: waited {WAIT_FOR_REQUESTS_TIMEOUT:?} for request {}",
                    seen + 1
                );
            }
        }
    }

    /// Waits until at least `n` requests were recorded; panics after 30 s.
    pub async fn wait_for_requests(&self, n: usize) -> Vec<RecordedRequest> {
        let deadline = tokio::time::Instant::now() + WAIT_FOR_REQUESTS_TIMEOUT;
        loop {
            let notified = self.handle.state.recorded.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let requests = self.requests();
            if requests.len() >= n {
                return requests;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                panic!(
                    "mock-llm: waited {WAIT_FOR_REQUESTS_TIMEOUT:?} for {n} requests, got {}",
                    self.requests().len()
                );
            }
        }
    }

    /// Stops the server now (open connections are aborted).
    pub fn shutdown(&self) {
        if let Some(sender) = lock(&self.handle.shutdown).take() {
            let _ = sender.send(());
        }
    }
}

/// A poisoned lock only means a test thread panicked; the data is still usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

async fn accept_loop(
    listener: TcpListener,
    state: Arc<State>,
    mut shutdown: oneshot::Receiver<()>,
) {
    // Owned here: when the loop ends, dropping the set aborts every connection.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let state = state.clone();
                connections.spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(handle(state, request).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        }
    }
}

type Body = UnsyncBoxBody<Bytes, std::io::Error>;

async fn handle(state: Arc<State>, request: Request<Incoming>) -> Response<Body> {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let headers = request.headers().iter().fold(
        BTreeMap::new(),
        |mut map: BTreeMap<String, String>, (name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            map.entry(name.as_str().to_lowercase())
                .and_modify(|existing| {
                    existing.push_str(", ");
                    existing.push_str(&value);
                })
                .or_insert(value);
            map
        },
    );
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return plain(StatusCode::BAD_REQUEST, "mock-llm: cannot read the body"),
    };
    let received_at = std::time::Instant::now();
    let format = match (&method, path.as_str()) {
        (&Method::POST, "/v1/chat/completions" | "/chat/completions") => Format::OpenAi,
        (&Method::POST, "/v1/messages") => Format::Anthropic,
        (&Method::POST, "/mock/replies") => return push_replies(&state, &body),
        (&Method::POST, "/mock/release") => {
            state.releases.send_modify(|count| *count += 1);
            return json_response(StatusCode::OK, r#"{"released":true}"#);
        }
        (&Method::GET, "/mock/requests") => {
            let requests = lock(&state.requests).clone();
            return json_response(StatusCode::OK, &serde_json::json!(requests).to_string());
        }
        _ => {
            return plain(
                StatusCode::NOT_FOUND,
                &format!("mock-llm: no endpoint {method} {path}"),
            );
        }
    };
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    lock(&state.requests).push(RecordedRequest {
        method: method.to_string(),
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        json: json.clone(),
        received_at,
    });
    state.recorded.notify_waiters();

    let body_text = String::from_utf8_lossy(&body);
    let routed = {
        let mut routed = lock(&state.routed);
        routed
            .iter()
            .position(|(marker, _)| body_text.contains(marker.as_str()))
            .map(|index| routed.remove(index).1)
    };
    let reply = routed.or_else(|| lock(&state.script).pop_front());
    if let Some(count) = reply.as_ref().and_then(|reply| reply.after_requests)
        && !wait_for_count(&state, count).await
    {
        return json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!(r#"{{"error":{{"message":"mock-llm: {count} requests never arrived"}}}}"#),
        );
    }
    let reply = match reply {
        Some(reply) if reply.stall_before_headers => {
            // The client's timeout ends the connection, which drops this future.
            return futures::future::pending().await;
        }
        Some(reply) => reply,
        None if state.echo => Reply::text(format!("You said: {}", render::last_user_text(&json))),
        None => {
            return json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                r#"{"error":{"message":"mock-llm: no scripted reply left"}}"#,
            );
        }
    };
    respond(
        format,
        &reply,
        json["model"].as_str().unwrap_or("mock-model"),
        state.releases.subscribe(),
    )
}

/// One step of a streamed reply: an event to send, or a hold until the test releases it.
enum Step {
    Send(render::SseEvent),
    Hold,
}

fn respond(
    format: Format,
    reply: &Reply,
    model: &str,
    mut releases: watch::Receiver<u64>,
) -> Response<Body> {
    if let Some(error) = &reply.error {
        let status =
            StatusCode::from_u16(error.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = json_response(
            status,
            &render::error_body(format, error.status, &error.message),
        );
        if let Some(secs) = reply.retry_after_secs {
            response
                .headers_mut()
                .insert(hyper::header::RETRY_AFTER, secs.into());
        }
        add_headers(&mut response, reply);
        return response;
    }
    let body: Body = if reply.stall {
        StreamBody::new(futures::stream::pending::<
            Result<Frame<Bytes>, std::io::Error>,
        >())
        .boxed_unsync()
    } else {
        let mut events: Vec<Step> = render::events(format, reply, model)
            .into_iter()
            .map(|event| {
                if event.hold {
                    Step::Hold
                } else {
                    Step::Send(event)
                }
            })
            .collect();
        // Released after the request came, not before: a release is for streams held now.
        let released_before = *releases.borrow_and_update();
        let cut = reply.cut_after_events.is_some_and(|n| n < events.len());
        if let Some(n) = reply.cut_after_events {
            events.truncate(n);
        }
        let stall = reply.stall_after_events.is_some_and(|n| n < events.len());
        if let Some(n) = reply.stall_after_events {
            events.truncate(n);
        }
        let delay = Duration::from_millis(reply.delay_ms);
        let stream = futures::stream::unfold(
            (events.into_iter(), cut, releases),
            move |(mut events, cut, mut releases)| async move {
                let mut next = events.next();
                while let Some(Step::Hold) = next {
                    // The mock going away drops the sender: go on rather than hang.
                    let _ = releases.wait_for(|count| *count > released_before).await;
                    next = events.next();
                }
                match next {
                    Some(Step::Send(event)) => {
                        if !delay.is_zero() {
                            tokio::time::sleep(delay).await;
                        }
                        Some((Ok(Frame::data(event.to_bytes())), (events, cut, releases)))
                    }
                    // An error frame makes hyper abort the connection without the final chunk.
                    // Yield first: hyper flushes what it buffered when the body is pending, so
                    // the client gets the events before the connection drops.
                    None if cut => {
                        tokio::task::yield_now().await;
                        Some((
                            Err(std::io::Error::other("mock-llm: cut as scripted")),
                            (events, false, releases),
                        ))
                    }
                    None if stall => futures::future::pending().await,
                    Some(Step::Hold) | None => None,
                }
            },
        );
        StreamBody::new(stream).boxed_unsync()
    };
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-cache"),
    );
    add_headers(&mut response, reply);
    response
}

/// The reply's extra headers; a name or value HTTP cannot carry is a script error.
fn add_headers(response: &mut Response<Body>, reply: &Reply) {
    for (name, value) in &reply.headers {
        let (Ok(name), Ok(value)) = (
            hyper::header::HeaderName::from_bytes(name.as_bytes()),
            hyper::header::HeaderValue::from_str(value),
        ) else {
            panic!("mock-llm: cannot send the header {name}: {value}");
        };
        response.headers_mut().append(name, value);
    }
}

/// Waits until `count` requests were recorded (a reply's `after_requests` gate); false after
/// [`WAIT_FOR_REQUESTS_TIMEOUT`].
async fn wait_for_count(state: &State, count: usize) -> bool {
    let deadline = tokio::time::Instant::now() + WAIT_FOR_REQUESTS_TIMEOUT;
    loop {
        let recorded = state.recorded.notified();
        if lock(&state.requests).len() >= count {
            return true;
        }
        if tokio::time::timeout_at(deadline, recorded).await.is_err() {
            return false;
        }
    }
}

fn push_replies(state: &State, body: &[u8]) -> Response<Body> {
    match serde_json::from_slice::<Vec<Reply>>(body) {
        Ok(replies) => {
            let count = replies.len();
            lock(&state.script).extend(replies);
            json_response(
                StatusCode::OK,
                &serde_json::json!({"queued": count}).to_string(),
            )
        }
        Err(error) => plain(
            StatusCode::BAD_REQUEST,
            &format!("mock-llm: expected a JSON array of replies: {error}"),
        ),
    }
}

fn full(text: &str) -> Body {
    Full::new(Bytes::from(text.to_owned()))
        .map_err(|never| match never {})
        .boxed_unsync()
}

fn json_response(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

fn plain(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    response
}
