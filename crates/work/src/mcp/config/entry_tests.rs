//! Tests of one MCP server entry: `${VAR}` expansion, the transport, bounds, names.

use std::collections::HashMap;

use super::*;

fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

/// `entry` (the `.mcp.json` shape) named `srv`, resolved as a session's with no environment.
fn resolved(entry: serde_json::Value) -> Result<McpServerConfig, String> {
    let entry: McpServerEntry = serde_json::from_value(entry).map_err(|why| why.to_string())?;
    resolve(
        "srv",
        &entry,
        McpSource::Session,
        RelativeTo::Dir(Path::new("/")),
        Expansion::Full,
        &|_| None,
    )
}

#[test]
fn variables_expand_with_defaults_and_an_unset_one_is_an_error_naming_it() {
    let env = env_of(&[("A", "alpha"), ("B", "beta"), ("EMPTY", "")]);
    // (text, expected expansion or a part of the error)
    let cases: &[(&str, Result<&str, &str>)] = &[
        ("plain", Ok("plain")),
        ("${A}", Ok("alpha")),
        ("x-${A}-${B}-y", Ok("x-alpha-beta-y")),
        ("${A:-default}", Ok("alpha")),
        ("${UNSET:-default}", Ok("default")),
        ("${UNSET:-}", Ok("")),
        ("${EMPTY:-default}", Ok("default")),
        ("${EMPTY}", Ok("")),
        ("$A and $", Ok("$A and $")),
        ("${UNSET}", Err("environment variable UNSET is not set")),
        ("${A}${UNSET}", Err("UNSET")),
        ("${1X}", Err("does not name an environment variable")),
        ("${A", Err("without its closing }")),
    ];
    for (text, expected) in cases {
        match (expand(text, &env), expected) {
            (Ok(got), Ok(want)) => assert_eq!(&got, want, "{text}"),
            (Err(got), Err(want)) => assert!(got.contains(want), "{text}: {got}"),
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn transports_are_chosen_by_type_or_by_command_and_url() {
    // (entry, expected "stdio", "http" or a part of the problem)
    let cases: &[(serde_json::Value, &str)] = &[
        (serde_json::json!({"command": "srv"}), "stdio"),
        (
            serde_json::json!({"type": "stdio", "command": "srv"}),
            "stdio",
        ),
        (
            serde_json::json!({"url": "http://127.0.0.1:3001/mcp"}),
            "http",
        ),
        (
            serde_json::json!({"type": "http", "url": "https://h/mcp"}),
            "http",
        ),
        (
            serde_json::json!({"type": "streamable-http", "url": "https://h/mcp"}),
            "http",
        ),
        (
            serde_json::json!({"type": "streamableHttp", "url": "https://h/mcp"}),
            "http",
        ),
        (
            serde_json::json!({"type": "sse", "url": "https://h/sse"}),
            "sse transport is not supported",
        ),
        (
            serde_json::json!({"type": "ws", "url": "wss://h"}),
            "unknown type \"ws\"",
        ),
        (
            serde_json::json!({"type": "http", "url": "ftp://h/mcp"}),
            "is not http or https",
        ),
        (
            serde_json::json!({"type": "http", "url": "not a url"}),
            "is not a url",
        ),
        (serde_json::json!({"type": "http"}), "needs a url"),
        (serde_json::json!({"type": "stdio"}), "needs a command"),
        (
            serde_json::json!({"command": "c", "url": "https://h"}),
            "both a command and a url",
        ),
        (serde_json::json!({}), "neither a command"),
        (serde_json::json!({"command": "  "}), "the command is empty"),
        (
            serde_json::json!({"url": "https://h", "headers": {"bad name": "v"}}),
            "not a valid header name",
        ),
        (
            serde_json::json!({"command": "c", "env": {"A=B": "v"}}),
            "is not a variable name",
        ),
        (
            serde_json::json!({"command": "c", "startupTimeoutSecs": 0}),
            "startup_timeout_secs must be at least 1",
        ),
        (
            serde_json::json!({"command": "c", "tool_timeout_secs": 100_000_000}),
            "tool_timeout_secs = 100000000 is too large",
        ),
        (
            serde_json::json!({"command": "c", "enabled_tools": [""]}),
            "enabled_tools has an empty tool name",
        ),
        (
            serde_json::json!({"command": "c", "args": 5}),
            "invalid type",
        ),
    ];
    for (entry, expected) in cases {
        let got = match resolved(entry.clone()) {
            Ok(config) => match config.transport {
                McpTransport::Stdio { .. } => "stdio".to_owned(),
                McpTransport::Http { .. } => "http".to_owned(),
            },
            Err(reason) => reason,
        };
        assert!(got.contains(expected), "{entry}: {got}");
    }
}

#[test]
fn per_server_settings_are_applied() {
    let config = resolved(serde_json::json!({
        "command": "c",
        "startupTimeoutSecs": 7,
        "tool_timeout_secs": 9,
        "enabledTools": ["echo", "add"],
        "disabled_tools": ["add"],
    }))
    .unwrap();
    assert_eq!(config.startup_timeout, Duration::from_secs(7));
    assert_eq!(config.tool_timeout, Duration::from_secs(9));
    assert_eq!(
        config.enabled_tools,
        Some(vec!["echo".to_owned(), "add".to_owned()])
    );
    assert_eq!(config.disabled_tools, vec!["add".to_owned()]);
    let defaults = resolved(serde_json::json!({"command": "c"})).unwrap();
    assert!(defaults.enabled);
    assert_eq!(
        defaults.startup_timeout,
        crate::mcp::DEFAULT_STARTUP_TIMEOUT
    );
    assert_eq!(defaults.tool_timeout, crate::mcp::DEFAULT_TOOL_TIMEOUT);
    assert_eq!(defaults.enabled_tools, None);
}

#[test]
fn server_names_are_letters_digits_underscore_and_dash() {
    let long = "a".repeat(MAX_SERVER_NAME_CHARS + 1);
    for (name, ok) in [
        ("github", true),
        ("my_server-2", true),
        ("", false),
        ("my server", false),
        ("a.b", false),
        ("ünï", false),
        ("a/b", false),
        (long.as_str(), false),
    ] {
        assert_eq!(check_name(name).is_ok(), ok, "{name:?}");
    }
}

#[test]
fn an_http_entrys_oauth_table_gives_the_client_and_scopes_and_a_stdio_one_is_refused() {
    let config = resolved(serde_json::json!({
        "url": "https://example.com/mcp",
        "oauth": {"clientId": "agentd-app", "scopes": ["read", "write"]},
    }))
    .unwrap();
    let McpTransport::Http { oauth, .. } = config.transport else {
        panic!("http expected");
    };
    assert_eq!(
        oauth,
        McpOAuth {
            client_id: Some("agentd-app".into()),
            scopes: vec!["read".into(), "write".into()],
        }
    );
    let plain = resolved(serde_json::json!({"url": "https://example.com/mcp"})).unwrap();
    assert!(
        matches!(plain.transport, McpTransport::Http { oauth, .. } if oauth == McpOAuth::default())
    );
    let stdio = resolved(serde_json::json!({"command": "srv", "oauth": {"client_id": "x"}}));
    assert!(stdio.unwrap_err().contains("oauth is for http servers"));
}
