//! Whether a new schema of the protocol only adds to an old one: what would break a client of
//! the old one within its major version. Params may gain optional fields, results and events
//! may gain fields, methods and event types may be added; anything else is listed.
//!
//! Objects are compared by their properties and required lists (the document's root and each
//! of its `$defs`), string enums of params by their values. A property whose type changes is
//! not detected.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::SchemaDocument;

/// What in `new` breaks a client of `old`, one sentence each; empty when `new` only adds.
pub fn breaking_changes(old: &[SchemaDocument], new: &[SchemaDocument]) -> Vec<String> {
    let new_by_path: BTreeMap<&str, &Value> = new
        .iter()
        .map(|doc| (doc.path.as_str(), &doc.schema))
        .collect();
    let mut changes = Vec::new();
    for old_doc in old {
        let path = old_doc.path.as_str();
        if path == super::INDEX_PATH {
            continue;
        }
        let Some(new_schema) = new_by_path.get(path) else {
            changes.push(format!("{path}: removed"));
            continue;
        };
        let read_by_daemon = path.ends_with(".params.json");
        let old_objects = objects(&old_doc.schema);
        let new_objects = objects(new_schema);
        for (name, old_object) in &old_objects {
            let Some(new_object) = new_objects.get(name) else {
                continue;
            };
            let place = if name.is_empty() {
                path.to_owned()
            } else {
                format!("{path} {name}")
            };
            compare(&place, old_object, new_object, read_by_daemon, &mut changes);
        }
    }
    changes
}

/// An object schema's properties and required names, or a string enum's values.
#[derive(Default)]
struct Shape {
    properties: BTreeSet<String>,
    required: BTreeSet<String>,
    values: BTreeSet<String>,
}

/// The shapes of a document: its root (named "") and each definition.
fn objects(schema: &Value) -> BTreeMap<String, Shape> {
    let mut found = BTreeMap::new();
    found.insert(String::new(), shape(schema));
    if let Some(definitions) = schema.get("$defs").and_then(Value::as_object) {
        for (name, definition) in definitions {
            found.insert(name.clone(), shape(definition));
        }
    }
    found
}

fn shape(schema: &Value) -> Shape {
    let names = |key: &str| -> BTreeSet<String> {
        match schema.get(key) {
            Some(Value::Object(object)) => object.keys().cloned().collect(),
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_owned))
                .collect(),
            _ => BTreeSet::new(),
        }
    };
    let mut values = names("enum");
    for variant in ["oneOf", "anyOf"]
        .iter()
        .filter_map(|key| schema.get(*key).and_then(Value::as_array))
        .flatten()
    {
        if let Some(value) = variant.get("const").and_then(Value::as_str) {
            values.insert(value.to_owned());
        }
        if let Some(Value::Array(items)) = variant.get("enum") {
            values.extend(items.iter().filter_map(|i| i.as_str().map(str::to_owned)));
        }
    }
    Shape {
        properties: names("properties"),
        required: names("required"),
        values,
    }
}

fn compare(place: &str, old: &Shape, new: &Shape, read_by_daemon: bool, changes: &mut Vec<String>) {
    if read_by_daemon {
        for name in new.required.difference(&old.required) {
            changes.push(format!(
                "{place}: `{name}` is required now; a client of the old version does not send it"
            ));
        }
        for name in old.properties.difference(&new.properties) {
            changes.push(format!(
                "{place}: `{name}` is no longer read; a client of the old version still sends it"
            ));
        }
        for value in old.values.difference(&new.values) {
            changes.push(format!(
                "{place}: `{value}` is no longer accepted; a client of the old version sends it"
            ));
        }
    } else {
        for name in old.required.difference(&new.required) {
            changes.push(format!(
                "{place}: `{name}` may be missing now; a client of the old version relies on it"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(path: &str, schema: Value) -> SchemaDocument {
        SchemaDocument {
            path: path.to_owned(),
            schema,
        }
    }

    fn params(properties: &[&str], required: &[&str]) -> Value {
        let properties: serde_json::Map<String, Value> = properties
            .iter()
            .map(|p| ((*p).to_owned(), json!({"type": "string"})))
            .collect();
        json!({"type": "object", "properties": properties, "required": required})
    }

    #[test]
    fn additions_do_not_break() {
        let old = [
            doc("methods/a.params.json", params(&["x"], &["x"])),
            doc("methods/a.result.json", params(&["y"], &["y"])),
        ];
        let new = [
            doc("methods/a.params.json", params(&["x", "z"], &["x"])),
            doc("methods/a.result.json", params(&["y", "w"], &["y", "w"])),
            doc("methods/b.params.json", params(&["q"], &["q"])),
        ];
        assert_eq!(breaking_changes(&old, &new), Vec::<String>::new());
        assert_eq!(breaking_changes(&old, &old), Vec::<String>::new());
    }

    #[test]
    fn new_required_params_removed_params_and_fewer_result_fields_break() {
        let old = [
            doc("methods/a.params.json", params(&["x", "old"], &["x"])),
            doc("methods/a.result.json", params(&["y"], &["y"])),
            doc("events/gone.json", params(&[], &[])),
        ];
        let new = [
            doc("methods/a.params.json", params(&["x", "z"], &["x", "z"])),
            doc("methods/a.result.json", params(&["y"], &[])),
        ];
        assert_eq!(
            breaking_changes(&old, &new),
            [
                "methods/a.params.json: `z` is required now; a client of the old version does not send it",
                "methods/a.params.json: `old` is no longer read; a client of the old version still sends it",
                "methods/a.result.json: `y` may be missing now; a client of the old version relies on it",
                "events/gone.json: removed",
            ]
        );
    }

    #[test]
    fn definitions_and_enum_values_of_params_are_compared_too() {
        let mode = |values: &[&str]| {
            json!({"$defs": {"Mode": {"oneOf": values.iter().map(|v| json!({"const": v})).collect::<Vec<_>>()},
                             "Info": params(&["a"], &["a"])}})
        };
        let old = [doc("methods/m.params.json", mode(&["one", "two"]))];
        let mut new = [doc("methods/m.params.json", mode(&["one"]))];
        new[0].schema["$defs"]["Info"] = params(&["a", "b"], &["a", "b"]);
        assert_eq!(
            breaking_changes(&old, &new),
            [
                "methods/m.params.json Info: `b` is required now; a client of the old version does not send it",
                "methods/m.params.json Mode: `two` is no longer accepted; a client of the old version sends it",
            ]
        );
    }

    #[test]
    fn the_protocol_only_adds_to_itself() {
        let documents = super::super::all();
        assert_eq!(
            breaking_changes(&documents, &documents),
            Vec::<String>::new()
        );
    }
}
