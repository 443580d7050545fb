//! The registry: what a registration must look like, names that clash, scopes, a peer that
//! goes away, and the merge patch of `beforeProviderRequest`.

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;

use super::*;
use protocol::extension::{ExtensionScope, ExtensionToolSpec};

/// A peer that answers every request with `answer`, until it is gone.
struct FakePeer {
    gone: AtomicBool,
    answer: serde_json::Value,
}

impl FakePeer {
    fn new(answer: serde_json::Value) -> Arc<FakePeer> {
        Arc::new(FakePeer {
            gone: AtomicBool::new(false),
            answer,
        })
    }
}

impl ExtensionPeer for FakePeer {
    fn request(
        &self,
        _method: &'static str,
        _params: serde_json::Value,
        _deadline: Duration,
    ) -> BoxFuture<'_, Result<serde_json::Value, PeerError>> {
        let answer = if self.gone.load(Ordering::SeqCst) {
            Err(PeerError::Gone)
        } else {
            Ok(self.answer.clone())
        };
        Box::pin(async move { answer })
    }

    fn is_gone(&self) -> bool {
        self.gone.load(Ordering::SeqCst)
    }
}

fn tool(name: &str) -> ExtensionToolSpec {
    ExtensionToolSpec {
        name: name.to_owned(),
        description: "d".to_owned(),
        input_schema: json!({"type": "object", "properties": {}}),
        read_only: true,
    }
}

fn params(name: &str, tools: &[&str]) -> ExtensionRegisterParams {
    ExtensionRegisterParams {
        name: name.to_owned(),
        tools: tools.iter().map(|t| tool(t)).collect(),
        ..ExtensionRegisterParams::default()
    }
}

fn refusal(extensions: &Extensions, params: ExtensionRegisterParams) -> String {
    match extensions.register(params, None, FakePeer::new(json!({})), 1) {
        Ok(result) => panic!("registered: {result:?}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn bad_declarations_are_refused_saying_what_to_change() {
    let extensions = Extensions::new(DEFAULT_CALL_TIMEOUT);
    let cases: Vec<(ExtensionRegisterParams, &str)> = vec![
        (params("", &[]), "extension name: it is empty"),
        (params("a__b", &[]), "holds \"__\""),
        (
            params("-a", &[]),
            "must start and end with a letter or digit",
        ),
        (params("a b", &[]), "may hold only ASCII letters"),
        (params(&"x".repeat(33), &[]), "is over 32 chars"),
        (params("a", &["t", "t"]), "the tool \"t\" is declared twice"),
        (params("a", &["bad.name"]), "tool name:"),
        (
            params(&"n".repeat(30), &[&"t".repeat(30)]),
            "chars: the limit is 64",
        ),
    ];
    for (params, expected) in cases {
        let message = refusal(&extensions, params);
        assert!(message.contains(expected), "{message:?} lacks {expected:?}");
    }
    let mut not_object = params("a", &["t"]);
    not_object.tools[0].input_schema = json!({"type": "string"});
    assert!(refusal(&extensions, not_object).contains("must describe an object"));
    let mut not_schema = params("a", &["t"]);
    not_schema.tools[0].input_schema = json!([1]);
    assert!(refusal(&extensions, not_schema).contains("must be a JSON Schema object"));
    let many = params(
        "a",
        &(0..=validate::MAX_TOOLS).map(|_| "t").collect::<Vec<_>>(),
    );
    assert!(refusal(&extensions, many).contains("tools declared, the limit is 32"));
    let mut twice = params("a", &[]);
    twice.events = vec![ExtensionEventKind::Input, ExtensionEventKind::Input];
    assert!(refusal(&extensions, twice).contains("the event \"input\" is listed twice"));
    assert!(extensions.in_scope(Path::new("/")).is_empty());
}

#[test]
fn names_are_unique_among_live_extensions_and_free_again_once_gone() {
    let extensions = Extensions::new(DEFAULT_CALL_TIMEOUT);
    let peer = FakePeer::new(json!({}));
    let registered = extensions
        .register(params("lint", &["check"]), None, peer.clone(), 1)
        .unwrap();
    assert_eq!(registered.tools, ["ext__lint__check"]);
    assert!(registered.extension_id.starts_with("ext_"));
    let message = refusal(&extensions, params("lint", &[]));
    assert!(message.contains("already registered"), "{message}");
    peer.gone.store(true, Ordering::SeqCst);
    extensions
        .register(params("lint", &[]), None, FakePeer::new(json!({})), 2)
        .unwrap();
}

#[test]
fn a_command_name_belongs_to_one_extension() {
    let extensions = Extensions::new(DEFAULT_CALL_TIMEOUT);
    let mut first = params("one", &[]);
    first.commands = vec![protocol::extension::ExtensionCommandSpec {
        name: "deploy".to_owned(),
        description: "ship it".to_owned(),
        argument_hint: Some("[env]".to_owned()),
    }];
    let mut second = params("two", &[]);
    second.commands = first.commands.clone();
    extensions
        .register(first, None, FakePeer::new(json!({})), 1)
        .unwrap();
    assert!(refusal(&extensions, second).contains("already registered by the extension \"one\""));
    assert_eq!(
        extensions.commands_for(Path::new("/anywhere")),
        [ExtensionCommand {
            extension: "one".to_owned(),
            name: "deploy".to_owned(),
            description: "ship it".to_owned(),
            argument_hint: Some("[env]".to_owned()),
        }]
    );
}

#[test]
fn a_connection_registers_a_bounded_number() {
    let extensions = Extensions::new(DEFAULT_CALL_TIMEOUT);
    for i in 0..MAX_EXTENSIONS_PER_CONNECTION {
        extensions
            .register(
                params(&format!("e{i}"), &[]),
                None,
                FakePeer::new(json!({})),
                7,
            )
            .unwrap();
    }
    let refused = extensions
        .register(params("more", &[]), None, FakePeer::new(json!({})), 7)
        .unwrap_err();
    assert!(matches!(refused, RegisterError::TooMany(_)), "{refused}");
    // Another connection may.
    extensions
        .register(params("more", &[]), None, FakePeer::new(json!({})), 8)
        .unwrap();
}

#[test]
fn a_scope_holds_the_sessions_inside_its_directory() {
    let extensions = Arc::new(Extensions::new(DEFAULT_CALL_TIMEOUT));
    let mut scoped = params("scoped", &["t"]);
    scoped.scope = ExtensionScope {
        cwd: Some("/work/project".to_owned()),
    };
    let peer = FakePeer::new(json!({}));
    extensions
        .register(
            scoped,
            Some(PathBuf::from("/work/project")),
            peer.clone(),
            1,
        )
        .unwrap();
    let names = |cwd: &str| -> Vec<String> {
        extensions
            .tools_for(Path::new(cwd))
            .tools()
            .iter()
            .map(|tool| tool.name().to_owned())
            .collect()
    };
    assert_eq!(names("/work/project/sub"), ["ext__scoped__t"]);
    assert_eq!(names("/work/project"), ["ext__scoped__t"]);
    assert!(names("/work/projectile").is_empty());
    assert!(names("/elsewhere").is_empty());
    // No event listed: no interceptor at all, so runs pay nothing.
    assert!(
        extensions
            .interceptor(Path::new("/work/project"), "ses_1")
            .is_none()
    );
    peer.gone.store(true, Ordering::SeqCst);
    assert!(names("/work/project").is_empty());
}

#[tokio::test]
async fn a_command_runs_on_the_extension_that_declared_it() {
    let extensions = Extensions::new(DEFAULT_CALL_TIMEOUT);
    let mut with_command = params("ops", &[]);
    with_command.commands = vec![protocol::extension::ExtensionCommandSpec {
        name: "status".to_owned(),
        description: String::new(),
        argument_hint: None,
    }];
    let peer = FakePeer::new(json!({"output": "all green"}));
    extensions
        .register(with_command, None, peer.clone(), 1)
        .unwrap();
    let ran = extensions
        .run_command(Path::new("/w"), Some("ses_1"), "status", "")
        .await
        .unwrap();
    assert_eq!(ran.output.as_deref(), Some("all green"));
    let missing = extensions
        .run_command(Path::new("/w"), None, "nope", "")
        .await
        .unwrap_err();
    assert!(missing.contains("has the command \"nope\""), "{missing}");
    peer.gone.store(true, Ordering::SeqCst);
    assert!(
        extensions
            .run_command(Path::new("/w"), None, "status", "")
            .await
            .is_err()
    );
}

#[test]
fn a_merge_patch_merges_objects_removes_nulls_and_replaces_the_rest() {
    let mut body = json!({"model": "m", "stream": true, "tools": [1], "meta": {"a": 1, "b": 2}});
    events::merge_patch(
        &mut body,
        json!({"model": "other", "tools": null, "meta": {"b": null, "c": 3}, "new": [1]}),
    );
    assert_eq!(
        body,
        json!({"model": "other", "stream": true, "meta": {"a": 1, "c": 3}, "new": [1]})
    );
}
