//! The protocol as JSON Schema, generated from this crate's types with schemars: one document
//! per method's params and result, per event, for the event notifications and for `error.data`.
//! The documents are checked in under `docs/schema/`; a test of the integration crate fails when
//! what this module generates differs from them (`UPDATE_SCHEMA=1` rewrites them).
//!
//! Params are described as the daemon reads them (fields with a default are optional), results,
//! events and notifications as the daemon writes them (fields it may leave out are optional).
//! `index.json` lists them with the protocol version; `compat` says whether a new schema only
//! adds to an old one.

pub mod compat;

use std::collections::BTreeSet;

use schemars::generate::{Contract, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value, json};

use crate::Method;
use crate::error::ErrorData;
use crate::event::{DAEMON_EVENT, Event, EventNotificationParams, SESSION_EVENT};

/// Where the index of the documents lives under `docs/schema/`.
pub const INDEX_PATH: &str = "index.json";

/// One JSON Schema document of the protocol (or the index of them all, [`INDEX_PATH`]).
#[derive(Clone, Debug, PartialEq)]
pub struct SchemaDocument {
    /// Where it lives under `docs/schema/`, `/`-separated: `methods/session.create.params.json`,
    /// `events/runStarted.json`, `notifications/session.event.json`, `error.data.json`.
    pub path: String,
    /// The schema (draft 2020-12), with a `title` naming what it describes.
    pub schema: Value,
}

impl SchemaDocument {
    /// The document as it is checked in: keys sorted at every level (the same text whatever
    /// serde_json's map order), two-space indents, a final newline.
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(&sorted(&self.schema)).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// Every schema document of the protocol: the methods' params and results in the order of
/// [`crate::methods::ALL`], then the events (the `Event` union and one document per event type),
/// the notifications, `error.data` and last the index.
pub fn all() -> Vec<SchemaDocument> {
    let mut documents: Vec<SchemaDocument> = crate::methods::SCHEMAS
        .iter()
        .flat_map(|method| method())
        .collect();
    let event = root::<Event>(Contract::Serialize);
    documents.extend(event_documents(&event));
    documents.push(document("events/event.json", "any session event", event));
    for name in [SESSION_EVENT, DAEMON_EVENT] {
        documents.push(document(
            &format!("notifications/{}.json", file_stem(name)),
            &format!("{name} notification params"),
            root::<EventNotificationParams>(Contract::Serialize),
        ));
    }
    documents.push(document(
        "error.data.json",
        "error data of an agentd error",
        root::<ErrorData>(Contract::Serialize),
    ));
    let index = index(&documents);
    documents.push(index);
    documents
}

/// The protocol version the index of `documents` names (`protocolVersion`), if it has one.
pub fn indexed_version(documents: &[SchemaDocument]) -> Option<crate::version::ProtocolVersion> {
    let index = documents.iter().find(|doc| doc.path == INDEX_PATH)?;
    crate::version::ProtocolVersion::parse(index.schema.get("protocolVersion")?.as_str()?)
}

/// What a client looks up first: the protocol version, and for each method, notification and
/// event type the path of its document.
fn index(documents: &[SchemaDocument]) -> SchemaDocument {
    let methods: Map<String, Value> = crate::methods::ALL
        .iter()
        .map(|name| {
            let stem = file_stem(name);
            let paths = json!({
                "params": format!("methods/{stem}.params.json"),
                "result": format!("methods/{stem}.result.json"),
            });
            ((*name).to_owned(), paths)
        })
        .collect();
    let notifications: Map<String, Value> = [SESSION_EVENT, DAEMON_EVENT]
        .iter()
        .map(|name| {
            let path = format!("notifications/{}.json", file_stem(name));
            ((*name).to_owned(), Value::String(path))
        })
        .collect();
    let events: Map<String, Value> = documents
        .iter()
        .filter_map(|doc| {
            let event_type = doc.path.strip_prefix("events/")?.strip_suffix(".json")?;
            (event_type != "event").then(|| (event_type.to_owned(), doc.path.clone().into()))
        })
        .collect();
    SchemaDocument {
        path: INDEX_PATH.to_owned(),
        schema: json!({
            "title": "agentd protocol: where the schema of each method, notification and event is",
            "protocolVersion": crate::PROTOCOL_VERSION,
            "methods": methods,
            "notifications": notifications,
            "events": events,
            "errorData": "error.data.json",
        }),
    }
}

/// The params and result documents of one method.
pub(crate) fn method_documents<M: Method>() -> [SchemaDocument; 2] {
    let stem = file_stem(M::NAME);
    [
        document(
            &format!("methods/{stem}.params.json"),
            &format!("{} params", M::NAME),
            root::<M::Params>(Contract::Deserialize),
        ),
        document(
            &format!("methods/{stem}.result.json"),
            &format!("{} result", M::NAME),
            root::<M::Result>(Contract::Serialize),
        ),
    ]
}

/// A method or notification name as a file name: `session/followUp` → `session.followUp`.
fn file_stem(name: &str) -> String {
    name.replace('/', ".")
}

fn root<T: JsonSchema>(contract: Contract) -> Schema {
    SchemaSettings::draft2020_12()
        .with(|settings| settings.contract = contract)
        .into_generator()
        .into_root_schema_for::<T>()
}

fn document(path: &str, title: &str, schema: Schema) -> SchemaDocument {
    let mut schema = schema.to_value();
    if let Value::Object(object) = &mut schema {
        object.insert("title".to_owned(), Value::String(title.to_owned()));
    }
    SchemaDocument {
        path: path.to_owned(),
        schema,
    }
}

/// One document per variant of the `Event` union, named by its `type`, carrying the
/// definitions it refers to.
fn event_documents(union: &Schema) -> Vec<SchemaDocument> {
    let definitions = union.get("$defs").and_then(Value::as_object);
    let variants = union
        .get("oneOf")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    variants
        .iter()
        .filter_map(|variant| {
            let event_type = variant.pointer("/properties/type/const")?.as_str()?;
            let mut schema = variant.clone();
            let object = schema.as_object_mut()?;
            if let Some(meta) = union.get("$schema") {
                object.insert("$schema".to_owned(), meta.clone());
            }
            if let Some(definitions) = definitions {
                let used = referenced_definitions(variant, definitions);
                if !used.is_empty() {
                    object.insert("$defs".to_owned(), Value::Object(used));
                }
            }
            Some(document(
                &format!("events/{event_type}.json"),
                &format!("{event_type} event"),
                Schema::try_from(schema).ok()?,
            ))
        })
        .collect()
}

/// The definitions `value` refers to (`#/$defs/NAME`), and those they refer to in turn.
fn referenced_definitions(value: &Value, definitions: &Map<String, Value>) -> Map<String, Value> {
    let mut names = BTreeSet::new();
    let mut pending = vec![value];
    while let Some(next) = pending.pop() {
        let mut found = Vec::new();
        collect_references(next, &mut found);
        for name in found {
            if let Some(definition) = definitions.get(&name)
                && names.insert(name)
            {
                pending.push(definition);
            }
        }
    }
    names
        .into_iter()
        .filter_map(|name| Some((name.clone(), definitions.get(&name)?.clone())))
        .collect()
}

fn collect_references(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(object) => {
            for (key, inner) in object {
                match (key.as_str(), inner) {
                    ("$ref", Value::String(reference)) => {
                        if let Some(name) = reference.strip_prefix("#/$defs/") {
                            found.push(name.to_owned());
                        }
                    }
                    _ => collect_references(inner, found),
                }
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| collect_references(item, found)),
        _ => {}
    }
}

/// `value` with the keys of every object in sorted order.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(object) => {
            let mut entries: Vec<(&String, &Value)> = object.iter().collect();
            entries.sort_by_key(|(key, _)| *key);
            Value::Object(
                entries
                    .into_iter()
                    .map(|(key, inner)| (key.clone(), sorted(inner)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find<'a>(documents: &'a [SchemaDocument], path: &str) -> &'a Value {
        &documents
            .iter()
            .find(|document| document.path == path)
            .unwrap_or_else(|| panic!("no {path}"))
            .schema
    }

    #[test]
    fn every_method_has_a_params_and_a_result_document() {
        let documents = all();
        for name in crate::methods::ALL {
            let stem = file_stem(name);
            for part in ["params", "result"] {
                let schema = find(&documents, &format!("methods/{stem}.{part}.json"));
                assert_eq!(schema["title"], format!("{name} {part}"));
            }
        }
    }

    #[test]
    fn params_are_described_as_read_and_results_as_written() {
        let documents = all();
        // `includeHistory` has a default: a client may leave it out.
        let get = find(&documents, "methods/session.get.params.json");
        assert_eq!(get["required"], serde_json::json!(["sessionId"]));
        // `usage` has a default when read but is always written.
        let listed = find(&documents, "methods/session.get.result.json");
        let info = &listed["$defs"]["SessionInfo"]["required"];
        assert!(info.as_array().unwrap().contains(&"usage".into()), "{info}");
    }

    #[test]
    fn every_event_type_has_its_document_with_the_definitions_it_uses() {
        let documents = all();
        let created = find(&documents, "events/sessionCreated.json");
        assert_eq!(created["properties"]["type"]["const"], "sessionCreated");
        let finished = find(&documents, "events/runFinished.json");
        assert!(finished["$defs"]["Usage"].is_object(), "{finished}");
        assert!(finished["$defs"]["RunStatus"].is_object(), "{finished}");
        assert!(finished["$defs"].get("TaskInfo").is_none(), "{finished}");
        let requested = find(&documents, "events/approvalRequested.json");
        // Reached through `PendingApproval`.
        assert!(requested["$defs"]["ApprovalDecision"].is_object());
    }

    #[test]
    fn the_text_is_the_same_whatever_the_key_order() {
        let one = SchemaDocument {
            path: "x.json".into(),
            schema: serde_json::json!({"b": 1, "a": {"d": 2, "c": 3}}),
        };
        assert_eq!(
            one.to_text(),
            "{\n  \"a\": {\n    \"c\": 3,\n    \"d\": 2\n  },\n  \"b\": 1\n}\n"
        );
    }
}
