//! Extensions for tests: the example extension (`examples/extension.py`, run with python3 as
//! a child against a test daemon), and `FakeExtension`, an extension in-process whose answers
//! the test scripts (late, never, junk), which records every request the daemon sends it.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::mpsc;

use crate::harness::WAIT;

/// `examples/extension.py` of this repository.
pub fn example_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/extension.py")
        .canonicalize()
        .expect("examples/extension.py")
}

/// The example extension, running; killed (its connection dropped) when this drops.
pub struct ExampleExtension {
    child: tokio::process::Child,
    /// The id `extension/register` answered.
    pub extension_id: String,
}

impl ExampleExtension {
    /// Starts it against the daemon on `socket` (extra `args`, e.g. `--scope DIR`) and waits
    /// until it printed that it is registered.
    pub async fn start(socket: &Path, args: &[&str]) -> ExampleExtension {
        let mut child = tokio::process::Command::new("python3")
            .arg(example_path())
            .args(args)
            .env("AGENTD_SOCKET", socket)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 examples/extension.py");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .expect("the example extension did not register in time")
            .expect("read the example's stdout")
            .expect("the example extension exited before it registered");
        let extension_id = line
            .strip_prefix("registered ")
            .unwrap_or_else(|| panic!("unexpected line from the example: {line}"))
            .to_owned();
        ExampleExtension {
            child,
            extension_id,
        }
    }

    /// Kills it and waits until it is gone (its connection is closed then).
    pub async fn kill(mut self) {
        self.child.kill().await.expect("kill the example extension");
    }
}

/// An extension the test scripts: `answer` says what each daemon request gets (None: no
/// answer ever). Every request is also handed to the test (`next_request`).
pub struct FakeExtension {
    task: tokio::task::JoinHandle<()>,
    requests: mpsc::UnboundedReceiver<Value>,
    /// What `extension/register` answered (its `result`, or its `error`).
    pub registered: Value,
}

/// Says what a daemon request gets: `Some(result)`, or None to leave it unanswered.
pub type Answer = Box<dyn Fn(&Value) -> Option<Value> + Send + Sync>;

impl FakeExtension {
    /// Connects to `socket`, initialises with `capabilities.extensions`, registers
    /// `registration`, then answers the daemon's requests with `answer`.
    pub async fn start(socket: &Path, registration: Value, answer: Answer) -> FakeExtension {
        let stream = UnixStream::connect(socket).await.expect("connect");
        let (read, mut write) = stream.into_split();
        let mut lines = BufReader::new(read).lines();
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "clientInfo": {"name": "fake-extension", "version": "0"},
            "protocolVersion": protocol::PROTOCOL_VERSION,
            "capabilities": {"extensions": true},
        }});
        let register = json!({"jsonrpc": "2.0", "id": 2, "method": "extension/register",
            "params": registration});
        for message in [initialize, register] {
            write
                .write_all(format!("{message}\n").as_bytes())
                .await
                .expect("write");
        }
        let mut registered = Value::Null;
        while registered.is_null() {
            let line = tokio::time::timeout(WAIT, lines.next_line())
                .await
                .expect("no answer to extension/register in time")
                .expect("read")
                .expect("the daemon closed the connection");
            let message: Value = serde_json::from_str(&line).expect("JSON from agentd");
            if message["id"] == 2 {
                registered = match message.get("error") {
                    Some(error) => json!({"error": error}),
                    None => message["result"].clone(),
                };
            }
        }
        let (seen, requests) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(message) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if message.get("method").is_none() || message.get("id").is_none() {
                    continue;
                }
                let _ = seen.send(message.clone());
                if let Some(result) = answer(&message) {
                    let reply = json!({"jsonrpc": "2.0", "id": message["id"], "result": result});
                    if write
                        .write_all(format!("{reply}\n").as_bytes())
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            }
        });
        FakeExtension {
            task,
            requests,
            registered,
        }
    }

    /// The next request the daemon sent it, with the wait limit.
    pub async fn next_request(&mut self) -> Value {
        tokio::time::timeout(WAIT, self.requests.recv())
            .await
            .expect("no request from the daemon in time")
            .expect("the fake extension stopped")
    }

    /// The requests received so far and not yet taken.
    pub fn received(&mut self) -> Vec<Value> {
        let mut all = Vec::new();
        while let Ok(request) = self.requests.try_recv() {
            all.push(request);
        }
        all
    }
}

impl Drop for FakeExtension {
    fn drop(&mut self) {
        self.task.abort();
    }
}
