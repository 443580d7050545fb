//! The checked-in schema describes what really crosses the socket: the params a client sends,
//! the answers and notifications of a live daemon through a run with an approval, validated
//! against `docs/schema/` by the `jsonschema` package of the test venv (draft 2020-12).

use std::path::{Path, PathBuf};

use agentd_tests::harness::Client;
use agentd_tests::mcp_servers::install_dir;
use agentd_tests::mock_llm::{Format, Reply};
use agentd_tests::scenario::*;
use serde_json::{Value, json};

use crate::approvals::{ASK, shell};

/// Validates `[[schema path, instance], …]` (read from stdin) against the schemas under the
/// directory named by argv[1]; prints one line per failure and exits 1 when there is any.
const VALIDATE: &str = r#"
import json, sys
from jsonschema import Draft202012Validator
failures = 0
for path, instance in json.load(sys.stdin):
    schema = json.load(open(f"{sys.argv[1]}/{path}"))
    for error in Draft202012Validator(schema).iter_errors(instance):
        failures += 1
        where = "/".join(map(str, error.absolute_path))
        print(f"{path} at /{where}: {error.message}\n  {json.dumps(instance)[:300]}")
sys.exit(1 if failures else 0)
"#;

/// What a test saw on the wire, each with the schema document that must describe it.
#[derive(Default)]
struct Traffic {
    checked: Vec<(String, Value)>,
}

impl Traffic {
    /// Calls `method` with `params`, recording both sides.
    async fn call(&mut self, client: &mut Client, method: &str, params: Value) -> Value {
        let stem = method.replace('/', ".");
        let result = client
            .request(method, params.clone())
            .await
            .unwrap_or_else(|err| panic!("{method}: {err:?}"));
        self.checked
            .push((format!("methods/{stem}.params.json"), params));
        self.checked
            .push((format!("methods/{stem}.result.json"), result.clone()));
        result
    }

    /// Reads notifications up to and including the first event of type `until`, recording each
    /// against its notification's schema and its event type's.
    async fn events_until(&mut self, client: &mut Client, until: &str) {
        loop {
            let message = client.next_notification().await;
            let method = message["method"].as_str().unwrap().to_owned();
            let params = message["params"].clone();
            let kind = params["event"]["type"].as_str().unwrap().to_owned();
            self.checked.push((
                format!("notifications/{}.json", method.replace('/', ".")),
                params.clone(),
            ));
            self.checked
                .push((format!("events/{kind}.json"), params["event"].clone()));
            self.checked
                .push(("events/event.json".to_owned(), params["event"].clone()));
            if kind == until {
                return;
            }
        }
    }
}

fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/schema")
}

#[tokio::test]
async fn what_a_live_daemon_sends_and_reads_matches_the_checked_in_schema() {
    let python = install_dir().join("venv/bin/python");
    assert!(
        python.exists(),
        "the test venv is missing: run tests/mcp-servers/install.sh"
    );
    let s = Scenario::start_with(Format::OpenAi, ASK).await;
    let cwd = s.workspace().display().to_string();
    let mut traffic = Traffic::default();
    let mut client = Client::connect_raw(s.daemon.socket()).await.unwrap();
    let hello = json!({"clientInfo": {"name": "schema", "version": "1"},
        "protocolVersion": protocol::PROTOCOL_VERSION, "capabilities": {"approvals": true}});
    traffic.call(&mut client, "initialize", hello).await;
    traffic.call(&mut client, "daemon/status", json!({})).await;
    let daemon_sub = traffic
        .call(&mut client, "daemon/subscribe", json!({}))
        .await;

    let created = traffic
        .call(
            &mut client,
            "session/create",
            json!({"cwd": cwd, "title": "schema", "permissionMode": "default",
                   "permissionRules": {"deny": ["Read(./secret/**)"]}}),
        )
        .await;
    let session_id = created["sessionId"].as_str().unwrap().to_owned();
    traffic.events_until(&mut client, "sessionCreated").await;
    let sub = traffic
        .call(
            &mut client,
            "session/subscribe",
            json!({"sessionId": session_id, "afterSeq": 0}),
        )
        .await;
    traffic.events_until(&mut client, "sessionCreated").await;

    s.mock.push(shell("call_1", "echo schema"));
    s.mock.push(Reply::text("done").usage(10, 5, 2));
    traffic
        .call(
            &mut client,
            "session/prompt",
            json!({"sessionId": session_id, "text": "go", "clientRequestId": "r1"}),
        )
        .await;
    traffic.events_until(&mut client, "approvalRequested").await;
    let pending = traffic
        .call(
            &mut client,
            "approval/list",
            json!({"sessionId": session_id}),
        )
        .await;
    let approval_id = pending["approvals"][0]["approvalId"].clone();
    traffic
        .call(
            &mut client,
            "approval/respond",
            json!({"approvalId": approval_id, "decision": "allowOnce"}),
        )
        .await;
    traffic.events_until(&mut client, "runFinished").await;

    let session = json!({"sessionId": session_id});
    traffic
        .call(
            &mut client,
            "session/get",
            json!({"sessionId": session_id, "includeHistory": true}),
        )
        .await;
    traffic
        .call(&mut client, "session/list", json!({"limit": 10}))
        .await;
    traffic
        .call(&mut client, "task/list", json!({"all": true}))
        .await;
    for method in ["skills/list", "agents/list", "memory/get", "mcp/list"] {
        traffic.call(&mut client, method, json!({"cwd": cwd})).await;
    }
    traffic.call(&mut client, "project/list", json!({})).await;
    traffic
        .call(&mut client, "session/cancel", session.clone())
        .await;
    traffic
        .call(&mut client, "session/unsubscribe", sub.clone())
        .await;
    traffic
        .call(&mut client, "daemon/unsubscribe", daemon_sub.clone())
        .await;

    let input = serde_json::to_vec(&traffic.checked).unwrap();
    let mut child = tokio::process::Command::new(&python)
        .args(["-c", VALIDATE])
        .arg(schema_dir())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    use tokio::io::AsyncWriteExt;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&input).await.unwrap();
    drop(stdin);
    let output = child.wait_with_output().await.unwrap();
    assert!(
        output.status.success(),
        "the daemon's traffic does not match docs/schema/ ({} instances checked):\n{}{}",
        traffic.checked.len(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let kinds: Vec<&str> = traffic
        .checked
        .iter()
        .filter_map(|(path, _)| path.strip_prefix("events/"))
        .collect();
    for kind in [
        "sessionCreated.json",
        "approvalRequested.json",
        "approvalResolved.json",
        "toolCompleted.json",
        "runFinished.json",
    ] {
        assert!(kinds.contains(&kind), "{kind} not seen: {kinds:?}");
    }
}
