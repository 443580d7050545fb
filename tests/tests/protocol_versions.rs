//! `initialize` negotiates the protocol version: a connection speaks the lower of the client's
//! and the daemon's version of the same major; another major or a malformed version is refused
//! and the connection stays usable.

use agentd_tests::harness::{Client, Daemon};
use pretty_assertions::assert_eq;
use protocol::error as codes;
use serde_json::json;

fn initialize_params(version: &str) -> serde_json::Value {
    json!({"clientInfo": {"name": "versions", "version": "0"}, "protocolVersion": version})
}

#[tokio::test]
async fn an_older_client_gets_its_version_and_a_newer_one_gets_the_daemons() {
    let daemon = Daemon::start().await;
    assert_ne!(protocol::PROTOCOL_VERSION, "1.0", "1.0 is the oldest minor");
    for (sent, agreed) in [
        ("1.0", "1.0"),
        ("1", "1.0"),
        (protocol::PROTOCOL_VERSION, protocol::PROTOCOL_VERSION),
        ("1.999", protocol::PROTOCOL_VERSION),
    ] {
        let mut client = Client::connect_raw(daemon.socket()).await.unwrap();
        let result = client
            .request("initialize", initialize_params(sent))
            .await
            .unwrap();
        assert_eq!(result["protocolVersion"], agreed, "sent {sent}");
        // The daemon's own version stays visible in `daemon/status`.
        let status = client.request("daemon/status", json!({})).await.unwrap();
        assert_eq!(status["protocolVersion"], protocol::PROTOCOL_VERSION);
    }
}

#[tokio::test]
async fn a_malformed_version_is_refused_with_the_form_to_send_and_the_connection_survives() {
    let daemon = Daemon::start().await;
    let mut client = Client::connect_raw(daemon.socket()).await.unwrap();
    for bad in ["1.x", "", "1.0.3", "latest"] {
        let err = client
            .request("initialize", initialize_params(bad))
            .await
            .unwrap_err();
        assert_eq!(
            err.code,
            codes::UNSUPPORTED_PROTOCOL_VERSION as i64,
            "{bad:?}"
        );
        assert!(err.message.contains("MAJOR.MINOR"), "{}", err.message);
    }
    let err = client
        .request("initialize", initialize_params("2.0"))
        .await
        .unwrap_err();
    assert!(
        err.message.contains(&format!(
            "this daemon speaks {}",
            protocol::PROTOCOL_VERSION
        )),
        "{}",
        err.message
    );
    let result = client
        .request("initialize", initialize_params("1.0"))
        .await
        .unwrap();
    assert_eq!(result["protocolVersion"], "1.0");
}

#[tokio::test]
async fn the_first_initialize_of_a_connection_decides_its_version() {
    let daemon = Daemon::start().await;
    let mut client = Client::connect_raw(daemon.socket()).await.unwrap();
    let first = client
        .request("initialize", initialize_params("1.0"))
        .await
        .unwrap();
    assert_eq!(first["protocolVersion"], "1.0");
    let again = client
        .request("initialize", initialize_params(protocol::PROTOCOL_VERSION))
        .await
        .unwrap();
    assert_eq!(again["protocolVersion"], "1.0");
}

/// The version this crate speaks has its changelog entry, and every entry is a version.
#[test]
fn the_changelog_has_an_entry_for_the_current_version() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/protocol.md"),
    )
    .unwrap();
    let changelog = doc
        .split("\n## Changelog\n")
        .nth(1)
        .expect("a `## Changelog` section in docs/protocol.md");
    let changelog = changelog.split("\n## ").next().unwrap();
    let entries: Vec<&str> = changelog
        .lines()
        .filter_map(|line| line.strip_prefix("### "))
        .collect();
    assert_eq!(
        entries.first(),
        Some(&protocol::PROTOCOL_VERSION),
        "the newest changelog entry of docs/protocol.md is the current version"
    );
    for entry in entries {
        assert!(
            protocol::version::ProtocolVersion::parse(entry).is_some(),
            "{entry:?} is not a version"
        );
    }
}
