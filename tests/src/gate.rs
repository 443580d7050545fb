//! A tiny HTTP server whose answers the test releases: a deterministic gate for tools that
//! fetch (`fetch_url`), e.g. to hold two parallel calls open at once and pick which one ends
//! first. Every request for `/<name>` waits until the test calls [`HttpGate::open`] for `name`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The gates by name: `None` until opened, then the body every request for it gets.
type Gates = Arc<Mutex<HashMap<String, watch::Sender<Option<String>>>>>;

pub struct HttpGate {
    addr: SocketAddr,
    gates: Gates,
    server: JoinHandle<()>,
}

impl HttpGate {
    pub async fn start() -> HttpGate {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the gate");
        let addr = listener.local_addr().expect("gate address");
        let gates = Gates::default();
        let server = tokio::spawn(serve(listener, gates.clone()));
        HttpGate {
            addr,
            gates,
            server,
        }
    }

    /// The URL of gate `name`.
    pub fn url(&self, name: &str) -> String {
        format!("http://{}/{name}", self.addr)
    }

    /// Lets every request for `name` (waiting or to come) through with `body` as text.
    pub fn open(&self, name: &str, body: &str) {
        gate(&self.gates, name).send_replace(Some(body.to_owned()));
    }
}

impl Drop for HttpGate {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn gate(gates: &Gates, name: &str) -> watch::Sender<Option<String>> {
    let mut gates = gates
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    gates
        .entry(name.to_owned())
        .or_insert_with(|| watch::channel(None).0)
        .clone()
}

async fn serve(listener: TcpListener, gates: Gates) {
    let mut connections = tokio::task::JoinSet::new();
    while let Ok((stream, _)) = listener.accept().await {
        connections.spawn(answer(stream, gates.clone()));
    }
}

/// Reads one request head, waits for its gate, answers and closes.
async fn answer(mut stream: TcpStream, gates: Gates) {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(read) => head.extend_from_slice(&buf[..read]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let name = head
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .trim_start_matches('/')
        .to_owned();
    let mut opened = gate(&gates, &name).subscribe();
    let Ok(body) = opened
        .wait_for(Option::is_some)
        .await
        .map(|body| body.clone())
    else {
        return;
    };
    let body = body.unwrap_or_default();
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: \
         close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}
