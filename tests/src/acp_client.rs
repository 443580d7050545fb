//! An ACP client for the tests: `tests/acp/client.mjs` (the official TypeScript SDK) running
//! `agentctl acp` in a test environment, driven line by line: requests, notifications and
//! permission answers go in; updates, permission requests and answers come out, read with
//! waits bounded by `WAIT` (never sleeps).

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::harness::{TestEnv, WAIT, binary};
use crate::mcp_servers::{install_dir, node, require};

/// The SDK client with `agentctl acp` under it.
pub struct AcpClient {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
    /// Messages read but not yet taken by `next_message`, in order.
    backlog: VecDeque<Value>,
    /// Answers by request id (`response` or `error` messages), also kept in the stream.
    answers: HashMap<u64, Value>,
}

impl AcpClient {
    /// Start `agentctl acp` in `env` (its daemon socket, its XDG dirs) under the SDK client.
    pub async fn start(env: &TestEnv) -> AcpClient {
        let modules = install_dir().join("node_modules");
        require(
            &modules.join("@agentclientprotocol/sdk/package.json"),
            "@agentclientprotocol/sdk",
        );
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("acp/client.mjs");
        let mut command = tokio::process::Command::new(node());
        env.apply(&mut command);
        command
            .arg(script)
            .arg(binary("agentctl"))
            .arg("acp")
            .env("ACP_NODE_MODULES", modules)
            .current_dir(env.workspace())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("start node with the ACP client");
        let stdin = child.stdin.take().expect("client stdin");
        let stdout = child.stdout.take().expect("client stdout");
        AcpClient {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            next_id: 1,
            backlog: VecDeque::new(),
            answers: HashMap::new(),
        }
    }

    async fn send(&mut self, command: Value) {
        let mut line = command.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .await
            .expect("write to the ACP client");
        self.stdin.flush().await.expect("flush the ACP client");
    }

    /// Send request `method` to the agent; its answer comes with `answer(id)`.
    pub async fn send_request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"op": "request", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// Request `method` and wait for its answer: the result, or the error object.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.send_request(method, params).await;
        self.answer(id).await
    }

    /// Abort request `id`: the SDK sends `$/cancel_request` for it.
    pub async fn abort(&mut self, id: u64) {
        self.send(json!({"op": "abort", "id": id})).await;
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"op": "notify", "method": method, "params": params}))
            .await;
    }

    /// Answer the permission request `key` with the option `option_id`.
    pub async fn choose(&mut self, key: u64, option_id: &str) {
        self.send(json!({"op": "permission", "key": key, "optionId": option_id}))
            .await;
    }

    /// Answer the `elicitation/create` request `key` with `answer` (`{action, content?}`).
    pub async fn answer_elicitation(&mut self, key: u64, answer: Value) {
        self.send(json!({"op": "elicitation", "key": key, "answer": answer}))
            .await;
    }

    /// Answer the permission request `key` with an error, as an editor that cannot ask.
    pub async fn fail_permission(&mut self, key: u64) {
        self.send(json!({"op": "permissionFail", "key": key})).await;
    }

    /// The answer to request `id`, reading on (and keeping the rest) until it comes.
    pub async fn answer(&mut self, id: u64) -> Result<Value, Value> {
        loop {
            if let Some(answer) = self.answers.remove(&id) {
                return match answer["type"].as_str() {
                    Some("response") => Ok(answer["result"].clone()),
                    _ => Err(answer["error"].clone()),
                };
            }
            let message = self.read().await;
            self.backlog.push_back(message);
        }
    }

    /// The next message of the client (updates, permission requests, answers, exit).
    pub async fn next_message(&mut self) -> Value {
        match self.backlog.pop_front() {
            Some(message) => message,
            None => self.read().await,
        }
    }

    /// Messages up to and including the first that `matches`.
    pub async fn until(&mut self, mut matches: impl FnMut(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let message = self.next_message().await;
            let done = matches(&message);
            seen.push(message);
            if done {
                return seen;
            }
        }
    }

    /// Messages up to and including the next permission request; returns them and its key.
    pub async fn until_permission(&mut self) -> (Vec<Value>, u64, Value) {
        let seen = self.until(|m| m["type"] == "permission").await;
        let last = seen.last().expect("a permission message").clone();
        let key = last["key"].as_u64().expect("permission key");
        (seen, key, last["params"].clone())
    }

    /// Close the agent's stdin (the editor going away) and return its exit report.
    pub async fn close(mut self) -> Value {
        self.send(json!({"op": "close"})).await;
        let exit = self.until(|m| m["type"] == "exit").await;
        let _ = tokio::time::timeout(WAIT, self.child.wait()).await;
        exit.last().expect("exit report").clone()
    }

    async fn read(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("the ACP client said nothing in time")
            .expect("read from the ACP client")
            .expect("the ACP client ended");
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|err| panic!("the ACP client wrote {line:?}: {err}"));
        if matches!(message["type"].as_str(), Some("response" | "error"))
            && let Some(id) = message["id"].as_u64()
        {
            self.answers.insert(id, message.clone());
        }
        message
    }
}

/// The `session/update` payloads among `messages` (`params.update`).
pub fn updates(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m["type"] == "update")
        .map(|m| m["params"]["update"].clone())
        .collect()
}

/// `initialize` as an editor sends it.
pub async fn initialize(client: &mut AcpClient) -> Value {
    client
        .request(
            "initialize",
            json!({
                "protocolVersion": 1,
                "clientCapabilities": {},
                "clientInfo": {"name": "acp-test-client", "version": "1.0.0"},
            }),
        )
        .await
        .expect("initialize")
}
