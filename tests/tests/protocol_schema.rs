//! The checked-in JSON Schema of the protocol (`docs/schema/`) is what `protocol::schema`
//! generates from the wire types: a type that changes without its schema fails here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use protocol::schema::SchemaDocument;

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
        update(&dir, &documents);
    }
    let problems = drift(&dir, &documents);
    assert!(
        problems.is_empty(),
        "docs/schema/ is out of date with the types in protocol/:\n  {}\nregenerate it with:\n  {REGENERATE}\nand commit the result (and a docs/protocol.md changelog line for a change clients see)",
        problems.join("\n  ")
    );
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
