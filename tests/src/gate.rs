//! A tiny HTTP server whose answers the test releases: a deterministic gate for tools that
//! fetch (`fetch_url`), e.g. to hold two parallel calls open at once and pick which one ends
//! first. Every request for `/<name>` waits until the test calls [`HttpGate::open`] (or
//! [`HttpGate::redirect`]) for `name`. The gate counts the requests it got, so a test can show a
//! refused fetch never reached it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The gates by name: `None` until opened, then the answer every request for it gets.
type Gates = Arc<Mutex<HashMap<String, watch::Sender<Option<Answer>>>>>;

/// What an opened gate answers.
#[derive(Clone, Debug)]
enum Answer {
    /// 200 with this text.
    Text(String),
    /// 302 to this location.
    Redirect(String),
}

pub struct HttpGate {
    addr: SocketAddr,
    gates: Gates,
    /// Request heads read so far, whatever their gate.
    requests: Arc<AtomicUsize>,
    server: JoinHandle<()>,
}

impl HttpGate {
    pub async fn start() -> HttpGate {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the gate");
        let addr = listener.local_addr().expect("gate address");
        let gates = Gates::default();
        let requests = Arc::new(AtomicUsize::new(0));
        let server = tokio::spawn(serve(listener, gates.clone(), requests.clone()));
        HttpGate {
            addr,
            gates,
            requests,
            server,
        }
    }

    /// The gate's port (to spell its URL other ways: `localhost`, `127.1`, `[::1]`).
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The URL of gate `name`.
    pub fn url(&self, name: &str) -> String {
        format!("http://{}/{name}", self.addr)
    }

    /// Lets every request for `name` (waiting or to come) through with `body` as text.
    pub fn open(&self, name: &str, body: &str) {
        gate(&self.gates, name).send_replace(Some(Answer::Text(body.to_owned())));
    }

    /// Answers every request for `name` (waiting or to come) with a 302 to `location`.
    pub fn redirect(&self, name: &str, location: &str) {
        gate(&self.gates, name).send_replace(Some(Answer::Redirect(location.to_owned())));
    }

    /// How many requests reached the gate so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for HttpGate {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn gate(gates: &Gates, name: &str) -> watch::Sender<Option<Answer>> {
    let mut gates = gates
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    gates
        .entry(name.to_owned())
        .or_insert_with(|| watch::channel(None).0)
        .clone()
}

async fn serve(listener: TcpListener, gates: Gates, requests: Arc<AtomicUsize>) {
    let mut connections = tokio::task::JoinSet::new();
    while let Ok((stream, _)) = listener.accept().await {
        connections.spawn(answer(stream, gates.clone(), requests.clone()));
    }
}

/// Reads one request head, waits for its gate, answers and closes.
async fn answer(mut stream: TcpStream, gates: Gates, requests: Arc<AtomicUsize>) {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(read) => head.extend_from_slice(&buf[..read]),
        }
    }
    requests.fetch_add(1, Ordering::SeqCst);
    let head = String::from_utf8_lossy(&head);
    let name = head
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .trim_start_matches('/')
        .to_owned();
    let mut opened = gate(&gates, &name).subscribe();
    let Ok(Some(answer)) = opened
        .wait_for(Option::is_some)
        .await
        .map(|answer| answer.clone())
    else {
        return;
    };
    let response = match answer {
        Answer::Text(body) => format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: \
             close\r\n\r\n{body}",
            body.len()
        ),
        Answer::Redirect(location) => format!(
            "HTTP/1.1 302 Found\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: \
             close\r\n\r\n"
        ),
    };
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}
