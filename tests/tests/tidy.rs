//! Tidy checks: rules of ARCHITECTURE.md that a reader relies on, checked on the source so
//! they cannot drift.

use std::path::{Path, PathBuf};

use agentd_tests::scenario::rust_files;

/// Lines of the non-test sources under `agentd/src/<under>` (a dir or a file) that name
/// module `module` (`crate::<module>`, or inside a one-line `crate::{…}` import).
fn lines_naming(under: &str, module: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../agentd/src")
        .join(under);
    let files = if root.is_dir() {
        rust_files(&root)
    } else {
        vec![root.clone()]
    };
    assert!(
        files.iter().all(|file| file.is_file()),
        "no source at {}",
        root.display()
    );
    let path = format!("crate::{module}");
    let mut found = Vec::new();
    for file in files {
        let is_test = file
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| name.ends_with("_tests.rs") || name == "tests.rs");
        if is_test {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in text.lines().enumerate() {
            let names = line.contains(&path)
                || line.contains(&format!("super::super::{module}"))
                || (line.contains("crate::{") && line.contains(module));
            if names {
                found.push(format!(
                    "{}:{}: {}",
                    file.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    found
}

/// The module graph has no cycles where there were some: `state` is data and never names
/// `rpc` (the rpc layer refuses work when stopping), `permission` never names `config`
/// (positions in text live in `text_position`), and the next test covers `agent` → `session`.
#[test]
fn state_and_permission_do_not_name_their_users() {
    for (under, module) in [("state.rs", "rpc"), ("permission", "config")] {
        let found = lines_naming(under, module);
        assert!(
            found.is_empty(),
            "{under} must not depend on {module} (it depends on {under}):\n{}",
            found.join("\n")
        );
    }
}

/// `agent` never imports `session`: the run writes through `agent::sink` (`RunLog`,
/// `SessionShared`), which the session implements and uses.
#[test]
fn agent_never_names_session() {
    let agent_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../agentd/src/agent");
    let files = rust_files(&agent_dir);
    assert!(!files.is_empty(), "no source under {}", agent_dir.display());
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in text.lines().enumerate() {
            let names_session = line.contains("crate::session")
                || line.contains("super::super::session")
                || (line.contains("crate::{") && line.contains("session"));
            if names_session {
                found.push(format!(
                    "{}:{}: {}",
                    file.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "agent must not depend on session (write through agent::sink instead):\n{}",
        found.join("\n")
    );
}

/// The root of the workspace (the test crate's parent).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every method the daemon serves, each named in a `###` heading of `docs/protocol.md`, and
/// every method such a heading names is one the daemon serves; every field a client may
/// declare in `initialize`'s capabilities has its row in the table there.
#[test]
fn the_protocol_doc_names_every_method_and_capability() {
    let doc = std::fs::read_to_string(repo_root().join("docs/protocol.md")).unwrap();
    let served: Vec<&str> = protocol::methods::ALL.to_vec();
    let notifications = [
        protocol::event::SESSION_EVENT,
        protocol::event::DAEMON_EVENT,
    ];
    let headings: Vec<&str> = doc
        .lines()
        .filter(|line| line.starts_with("### "))
        .collect();
    let mut named = Vec::new();
    for heading in &headings {
        for (index, part) in heading.split('`').enumerate() {
            // Odd parts are inside backticks; a method name is `word/word` or `initialize`.
            let looks_like_method = part == "initialize"
                || (part.contains('/') && !part.contains(' ') && !part.contains('.'));
            if index % 2 == 1 && looks_like_method {
                named.push(part);
            }
        }
    }
    let undocumented: Vec<&&str> = served.iter().filter(|m| !named.contains(m)).collect();
    assert!(
        undocumented.is_empty(),
        "methods without a `### ` heading in docs/protocol.md: {undocumented:?}"
    );
    let unknown: Vec<&&str> = named
        .iter()
        .filter(|m| !served.contains(m) && !notifications.contains(m))
        .collect();
    assert!(
        unknown.is_empty(),
        "docs/protocol.md documents methods the daemon does not serve: {unknown:?}"
    );

    // The example answer of `initialize` lists what the daemon serves and sends.
    let example = doc
        .lines()
        .find_map(|line| {
            line.strip_prefix("← ")
                .filter(|l| l.contains("\"serverInfo\""))
        })
        .expect("an example answer of initialize in docs/protocol.md");
    let example: serde_json::Value = serde_json::from_str(example).unwrap();
    let offered = &example["result"]["capabilities"];
    assert_eq!(
        offered["methods"],
        serde_json::json!(protocol::methods::ALL),
        "the initialize example's capabilities.methods differ from protocol::methods::ALL"
    );
    assert_eq!(
        offered["notifications"],
        serde_json::json!(notifications),
        "the initialize example's capabilities.notifications differ from the daemon's"
    );

    let capabilities =
        serde_json::to_value(protocol::daemon::ClientCapabilities::default()).unwrap();
    for field in capabilities.as_object().unwrap().keys() {
        assert!(
            doc.contains(&format!("| `{field}` |")),
            "the client capability `{field}` has no row in docs/protocol.md's initialize table"
        );
    }
}

/// Params types accept fields they do not know (a newer client talks to an older daemon), so
/// no type of the protocol crate refuses unknown fields.
#[test]
fn no_protocol_type_refuses_unknown_fields() {
    let mut found = Vec::new();
    for file in rust_files(&repo_root().join("protocol/src")) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in text.lines().enumerate() {
            if line.contains("deny_unknown_fields") && !line.trim_start().starts_with("//") {
                found.push(format!("{}:{}", file.display(), number + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "wire types must accept unknown fields (remove `deny_unknown_fields`):\n{}",
        found.join("\n")
    );
}

/// Wire types are named after their method: `<Resource><Verb>Params` / `…Result` (the method
/// `session/get` is `SessionGet`, its types `SessionGetParams` and `SessionGetResult`), the
/// subscribe and unsubscribe methods included.
#[test]
fn wire_types_are_named_after_their_method() {
    let table = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../protocol/src/methods.rs"),
    )
    .unwrap();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for line in table.lines() {
        // `    SessionGet = "session/get": SessionGetParams => SessionGetResult;`
        let Some((name, rest)) = line.trim().split_once(" = \"") else {
            continue;
        };
        let Some((_, types)) = rest.split_once("\": ") else {
            continue;
        };
        let Some((params, result)) = types.trim_end_matches(';').split_once(" => ") else {
            continue;
        };
        checked += 1;
        if params != format!("{name}Params") {
            wrong.push(format!("{name}: params {params}, expected {name}Params"));
        }
        if result != format!("{name}Result") {
            wrong.push(format!("{name}: result {result}, expected {name}Result"));
        }
    }
    assert!(
        checked >= 15,
        "the method table was not found ({checked} rows)"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
