//! Tests of `manager`: server keys and log file names.

use super::*;
use crate::mcp::McpSource;

fn stdio(name: &str, command: &str) -> McpServerConfig {
    McpServerConfig {
        name: name.into(),
        transport: McpTransport::Stdio {
            command: command.into(),
            args: vec!["--flag".into()],
            env: BTreeMap::from([("K".to_owned(), "v".to_owned())]),
            cwd: None,
        },
        enabled: true,
        startup_timeout: Duration::from_secs(1),
        tool_timeout: Duration::from_secs(1),
        enabled_tools: None,
        disabled_tools: Vec::new(),
        sampling: false,
        source: McpSource::Session,
    }
}

#[test]
fn the_key_is_the_name_the_root_and_the_resolved_settings() {
    let root = Path::new("/p");
    let key = server_key(&stdio("a", "srv"), root);
    assert_eq!(key, server_key(&stdio("a", "srv"), root));
    assert_eq!(key.config_digest.len(), 16);
    assert_ne!(key, server_key(&stdio("b", "srv"), root));
    assert_ne!(key, server_key(&stdio("a", "other"), root));
    assert_ne!(key, server_key(&stdio("a", "srv"), Path::new("/q")));
    // The resolved settings are part of it: a changed filter or timeout is another
    // server; where the entry came from is not.
    let mut filtered = stdio("a", "srv");
    filtered.disabled_tools = vec!["x".into()];
    assert_ne!(key, server_key(&filtered, root));
    let mut slower = stdio("a", "srv");
    slower.tool_timeout = Duration::from_secs(2);
    assert_ne!(key, server_key(&slower, root));
    let mut from_user = stdio("a", "srv");
    from_user.source = McpSource::User {
        file: "/home/u/.config/agentd/config.toml".into(),
    };
    assert_eq!(key, server_key(&from_user, root));
}

#[test]
fn log_file_names_keep_only_safe_characters() {
    assert_eq!(file_safe("my server/../x"), "my_server____x");
    assert_eq!(file_safe(&"n".repeat(100)).len(), 64);
}
