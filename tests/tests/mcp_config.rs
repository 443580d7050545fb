//! MCP server configuration seen from outside: `session/create {mcpServers}` (the `.mcp.json`
//! object shape and ACP's array shape) is accepted, kept in the session's header, shown by
//! `session/get` as names, and survives a daemon restart; a shape that is neither is refused.

use agentd_tests::mock_llm::Format;
use agentd_tests::scenario::*;
use pretty_assertions::assert_eq;
use protocol::error as codes;
use serde_json::{Value, json};

/// The header line of `session`'s file.
fn header_on_disk(s: &Scenario, session: &str) -> Value {
    let path = s
        .daemon
        .env
        .path("state")
        .join("agentd/sessions")
        .join(format!("{session}.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

async fn create_with(
    client: &mut agentd_tests::harness::Client,
    s: &Scenario,
    servers: Value,
) -> String {
    let created = client
        .request(
            "session/create",
            json!({"cwd": s.workspace().display().to_string(), "mcpServers": servers}),
        )
        .await
        .unwrap();
    created["sessionId"].as_str().unwrap().to_owned()
}

async fn server_names(client: &mut agentd_tests::harness::Client, session: &str) -> Value {
    let got = client
        .request("session/get", json!({"sessionId": session}))
        .await
        .unwrap();
    got["mcpServers"].clone()
}

#[tokio::test]
async fn session_mcp_servers_are_stored_and_survive_a_restart() {
    let mut s = Scenario::start(Format::OpenAi).await;
    let mut client = s.client().await;
    let object_shape = json!({
        "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
        "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "${KEY:-k}"}},
    });
    let acp_shape = json!([
        {"name": "everything", "command": "npx", "args": ["@modelcontextprotocol/server-everything"], "env": [{"name": "A", "value": "1"}]},
        {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp", "headers": []},
    ]);
    let from_object = create_with(&mut client, &s, object_shape.clone()).await;
    let from_array = create_with(&mut client, &s, acp_shape.clone()).await;
    let without = create_session(&mut client, &s.workspace()).await;

    let expected = [
        (&from_object, json!(["remote", "time"])),
        (&from_array, json!(["everything", "web"])),
        (&without, json!([])),
    ];
    for (session, names) in &expected {
        assert_eq!(
            &server_names(&mut client, session).await,
            names,
            "{session}"
        );
    }
    // Kept in the header as given, so a reloaded session resolves the same entries.
    assert_eq!(header_on_disk(&s, &from_object)["mcpServers"], object_shape);
    assert_eq!(header_on_disk(&s, &from_array)["mcpServers"], acp_shape);
    assert_eq!(header_on_disk(&s, &without).get("mcpServers"), None);
    drop(client);

    s.daemon.signal(libc::SIGTERM);
    let status = s.daemon.wait_exit().await;
    assert!(status.success(), "{status}");
    s.daemon.restart().await;

    let mut client = s.client().await;
    for (session, names) in &expected {
        assert_eq!(
            &server_names(&mut client, session).await,
            names,
            "{session}"
        );
    }
}

#[tokio::test]
async fn a_session_mcp_servers_param_of_the_wrong_shape_is_refused() {
    let s = Scenario::start(Format::OpenAi).await;
    let mut client = s.client().await;
    let too_many: serde_json::Map<String, Value> = (0..=100)
        .map(|n| (format!("s{n}"), json!({"command": "c"})))
        .collect();
    for (servers, expected) in [
        (json!("npx server"), "mcpServers must be an object"),
        (json!(5), "mcpServers must be an object"),
        (Value::Object(too_many), "at most 100"),
    ] {
        let err = client
            .request(
                "session/create",
                json!({"cwd": s.workspace().display().to_string(), "mcpServers": servers}),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code, codes::INVALID_PARAMS as i64, "{err:?}");
        assert!(err.message.contains(expected), "{err:?}");
    }
    // An entry that cannot be used is the session's problem to report, not a refusal.
    let session = create_with(
        &mut client,
        &s,
        json!({"bad name": {"command": "c"}, "ok": {"url": "ftp://nowhere"}}),
    )
    .await;
    assert_eq!(server_names(&mut client, &session).await, json!(["ok"]));
}

#[tokio::test]
async fn a_bad_mcp_server_entry_in_config_toml_does_not_make_the_config_unusable() {
    let s = Scenario::start_with(
        Format::OpenAi,
        "[mcp]\nidle_stop_secs = 60\nstartup_grace_secs = 1\n\
         [mcp_servers.broken]\ncommand = 5\n\
         [mcp_servers.\"bad name\"]\ncommand = \"x\"\n\
         [mcp_servers.typo]\ncomand = \"x\"\n",
    )
    .await;
    let mut client = s.client().await;
    create_session(&mut client, &s.workspace()).await;

    // A bad [mcp] value is a config error like any other bound, naming the key.
    let s = Scenario::start_with(Format::OpenAi, "[mcp]\nstartup_grace_secs = 100000\n").await;
    let mut client = s.client().await;
    let err = client
        .request(
            "session/create",
            json!({"cwd": s.workspace().display().to_string()}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, codes::CONFIG_ERROR as i64, "{err:?}");
    assert!(err.message.contains("mcp.startup_grace_secs"), "{err:?}");
}
