//! The checked-in JSON Schema of the protocol (`docs/schema/`) is what `protocol::schema`
//! generates from the wire types: a type that changes without its schema fails here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use protocol::schema::SchemaDocument;
use protocol::schema::compat::breaking_changes;
use protocol::version::ProtocolVersion;

/// How to bring `docs/schema/` up to date, printed with every drift.
const REGENERATE: &str = "UPDATE_SCHEMA=1 cargo test -p agentd-tests --test all -- protocol_schema";

fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/schema")
}

/// The `.json` files under `dir`, as `/`-separated paths relative to it.
fn json_files(dir: &Path) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "json") {
                let relative = path.strip_prefix(dir).unwrap();
                found.insert(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    found
}

/// The documents checked in under `dir`.
fn checked_in(dir: &Path) -> Vec<SchemaDocument> {
    json_files(dir)
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(dir.join(&path)).unwrap();
            let schema = serde_json::from_str(&text)
                .unwrap_or_else(|err| panic!("docs/schema/{path} is not JSON: {err}"));
            SchemaDocument { path, schema }
        })
        .collect()
}

/// What in `documents` breaks clients of the schema checked in under `dir`, unless the major
/// version changed since (then anything goes).
fn breaks(dir: &Path, documents: &[SchemaDocument]) -> Vec<String> {
    let old = checked_in(dir);
    let current = ProtocolVersion::current();
    match protocol::schema::indexed_version(&old) {
        Some(version) if version.major != current.major => Vec::new(),
        _ => breaking_changes(&old, documents),
    }
}

/// Rewrites `dir` from `documents`, refusing what would break clients of the same major
/// version.
fn regenerate(dir: &Path, documents: &[SchemaDocument]) -> Result<(), String> {
    let breaking = breaks(dir, documents);
    if !breaking.is_empty() {
        return Err(format!(
            "refusing to regenerate docs/schema/: within protocol {}.x a change only adds, and these break its clients:\n  {}\nmake them additive (an optional param with a default, a new result field, a new method) or, when the break is meant, make it the next major version (protocol::PROTOCOL_VERSION)",
            ProtocolVersion::current().major,
            breaking.join("\n  ")
        ));
    }
    update(dir, documents);
    Ok(())
}

/// Writes every document and removes the `.json` files no document names any more.
fn update(dir: &Path, documents: &[SchemaDocument]) {
    let wanted: BTreeSet<String> = documents.iter().map(|doc| doc.path.clone()).collect();
    for stale in json_files(dir).difference(&wanted) {
        std::fs::remove_file(dir.join(stale)).unwrap();
    }
    for document in documents {
        let path = dir.join(&document.path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, document.to_text()).unwrap();
    }
}

/// What differs between the documents and the files under `dir`, one line each.
fn drift(dir: &Path, documents: &[SchemaDocument]) -> Vec<String> {
    let mut problems = Vec::new();
    let wanted: BTreeSet<String> = documents.iter().map(|doc| doc.path.clone()).collect();
    for stale in json_files(dir).difference(&wanted) {
        problems.push(format!(
            "{stale}: no protocol type has this schema any more"
        ));
    }
    for document in documents {
        match std::fs::read_to_string(dir.join(&document.path)) {
            Err(_) => problems.push(format!("{}: missing", document.path)),
            Ok(text) if text != document.to_text() => problems.push(format!(
                "{}: differs from the protocol types",
                document.path
            )),
            Ok(_) => {}
        }
    }
    problems
}

#[test]
fn the_checked_in_schema_is_generated_from_the_protocol_types() {
    let documents = protocol::schema::all();
    let dir = schema_dir();
    if std::env::var_os("UPDATE_SCHEMA").is_some_and(|value| value == "1") {
        regenerate(&dir, &documents).unwrap_or_else(|refusal| panic!("{refusal}"));
    }
    let problems = drift(&dir, &documents);
    let breaking = breaks(&dir, &documents);
    let warning = if breaking.is_empty() {
        String::new()
    } else {
        format!(
            "\nthese changes break clients of the checked-in version (regenerating refuses them):\n  {}",
            breaking.join("\n  ")
        )
    };
    assert!(
        problems.is_empty(),
        "docs/schema/ is out of date with the types in protocol/:\n  {}{warning}\nregenerate it with:\n  {REGENERATE}\nand commit the result (and a docs/protocol.md changelog line for a change clients see)",
        problems.join("\n  ")
    );
}

#[test]
fn regenerating_refuses_a_breaking_change_within_a_major_version() {
    let dir = tempfile::tempdir().unwrap();
    let documents = protocol::schema::all();
    regenerate(dir.path(), &documents).unwrap();

    // A new method and a new optional result field only add.
    let mut added = documents.clone();
    added[1].schema["properties"]["later"] = serde_json::json!({"type": "string"});
    added.push(SchemaDocument {
        path: "methods/thing.new.params.json".into(),
        schema: serde_json::json!({"type": "object"}),
    });
    regenerate(dir.path(), &added).unwrap();

    // `initialize` answering without `serverInfo` breaks 1.x clients.
    let mut broken = added.clone();
    let result = broken
        .iter_mut()
        .find(|doc| doc.path == "methods/initialize.result.json")
        .unwrap();
    let required = result.schema["required"].as_array_mut().unwrap();
    required.retain(|name| name != "serverInfo");
    let refusal = regenerate(dir.path(), &broken).unwrap_err();
    assert!(
        refusal.contains(
            "methods/initialize.result.json: `serverInfo` may be missing now; a client of the old version relies on it"
        ),
        "{refusal}"
    );
    assert!(refusal.contains("next major version"), "{refusal}");
    assert_eq!(
        drift(dir.path(), &added),
        Vec::<String>::new(),
        "nothing was written"
    );

    // Once the checked-in index names another major version, the break is allowed.
    let index = dir.path().join(protocol::schema::INDEX_PATH);
    let text = std::fs::read_to_string(&index).unwrap();
    let old_major = text.replace(&format!("\"{}\"", protocol::PROTOCOL_VERSION), "\"0.9\"");
    assert_ne!(text, old_major);
    std::fs::write(&index, old_major).unwrap();
    regenerate(dir.path(), &broken).unwrap();
}

#[test]
fn a_changed_type_a_removed_method_and_a_stray_file_are_each_drift() {
    let dir = tempfile::tempdir().unwrap();
    let documents = protocol::schema::all();
    update(dir.path(), &documents);
    assert_eq!(drift(dir.path(), &documents), Vec::<String>::new());

    let mut changed = documents.clone();
    changed[0].schema["description"] = "a field was added".into();
    let stray = dir.path().join("methods/session.gone.params.json");
    std::fs::write(&stray, "{}\n").unwrap();
    std::fs::remove_file(dir.path().join(&documents[1].path)).unwrap();

    let problems = drift(dir.path(), &changed);
    assert_eq!(
        problems,
        vec![
            "methods/session.gone.params.json: no protocol type has this schema any more"
                .to_owned(),
            format!("{}: differs from the protocol types", documents[0].path),
            format!("{}: missing", documents[1].path),
        ]
    );
}

#[test]
fn every_method_and_every_event_type_has_a_schema_document() {
    let paths: BTreeSet<String> = protocol::schema::all()
        .into_iter()
        .map(|doc| doc.path)
        .collect();
    for method in protocol::methods::ALL {
        let stem = method.replace('/', ".");
        assert!(
            paths.contains(&format!("methods/{stem}.params.json")),
            "{method}"
        );
        assert!(
            paths.contains(&format!("methods/{stem}.result.json")),
            "{method}"
        );
    }
    // One per variant of `Event`: a sample of each kind, spelled as on the wire.
    for event in [
        protocol::event::Event::Lagged {},
        protocol::event::Event::Warning {
            message: "w".into(),
        },
        protocol::event::Event::SessionDeleted {},
    ] {
        let value = serde_json::to_value(&event).unwrap();
        let kind = value["type"].as_str().unwrap();
        assert!(paths.contains(&format!("events/{kind}.json")), "{kind}");
    }
    let events = paths.iter().filter(|p| p.starts_with("events/")).count();
    let union = protocol::schema::all()
        .into_iter()
        .find(|doc| doc.path == "events/event.json")
        .unwrap();
    let variants = union.schema["oneOf"].as_array().unwrap().len();
    assert_eq!(
        events,
        variants + 1,
        "one document per event type and the union"
    );
}

/// Every wire type of `protocol/` derives `JsonSchema` beside serde, also one that no method or
/// event reaches yet (the trait bound of `Method` only reaches params and results).
#[test]
fn every_serde_type_of_the_protocol_crate_derives_json_schema() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../protocol/src");
    let mut missing = Vec::new();
    for file in agentd_tests::sources::rust_files(&src) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in text.lines().enumerate() {
            let derive = line.trim_start().starts_with("#[derive(");
            let serde = line.contains("Serialize") || line.contains("Deserialize");
            if derive && serde && !line.contains("JsonSchema") {
                missing.push(format!(
                    "{}:{}: {}",
                    file.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "add `JsonSchema` (schemars) to these derives, then regenerate the schema:\n  {}",
        missing.join("\n  ")
    );
}
