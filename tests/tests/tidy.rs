//! Tidy checks: rules of ARCHITECTURE.md that a reader relies on, checked on the source so
//! they cannot drift.

use std::path::{Path, PathBuf};

use agentd_tests::sources::{DAEMON_CRATES, rust_files};

/// agentd's modules in layers, bottom first. A module names (`crate::x`, `agentd_core::x`,
/// `super::…::x`, `use crate::{x, …}`) only modules listed before it: an edge upward, or
/// between two modules that name each other, fails
/// `the_module_graph_follows_the_declared_layers`. A new module must be placed here. The same
/// order is ARCHITECTURE.md's layer diagram.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "core",
        &[
            "platform",
            "answerers",
            "test_seam",
            "text_position",
            "frontmatter",
            "truncate",
            "conversation",
            "regular_file",
            "atomic_file",
            "config_edit",
            "paths",
            "logging",
            "workspace",
            "test_support",
            "interned",
            "parallel",
        ],
    ),
    ("policy", &["trust", "permission", "process", "approval"]),
    ("llm", &["llm"]),
    ("knowledge", &["memory", "skills", "context"]),
    (
        "work",
        &["checkpoint", "tools", "agents", "commands", "mcp"],
    ),
    ("agent", &["agent"]),
    ("tasks", &["task"]),
    ("assembly", &["config", "wire", "store"]),
    ("session", &["extension", "session"]),
    ("daemon", &["server", "state", "rpc", "daemon", "allocator"]),
];

/// Files that are only tests (their module is `#[cfg(test)]`), by name.
fn is_test_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| {
            name.ends_with("_tests.rs") || name == "tests.rs" || name == "test_support.rs"
        })
        || path.components().any(|part| part.as_os_str() == "tests")
}

/// The lines of `text` that are compiled outside tests, with their 1-based numbers: comments
/// and every item under `#[cfg(test)]` (a `mod tests { … }`, a `mod tests;`, a test-only
/// function) left out.
fn code_lines(text: &str) -> Vec<(usize, &str)> {
    let mut kept = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        if !trimmed.starts_with("#[cfg(test)]") {
            kept.push((index + 1, line));
            continue;
        }
        // Skip the item the attribute applies to: up to a `;` at depth 0 or its closing brace.
        let mut depth = 0i32;
        let mut opened = false;
        for (_, line) in lines.by_ref() {
            let code = line.split("//").next().unwrap_or("");
            for ch in code.chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            let trimmed = code.trim();
            if trimmed.starts_with("#[") && !opened {
                continue;
            }
            if (opened && depth <= 0) || (!opened && trimmed.ends_with(';')) {
                break;
            }
        }
    }
    kept
}

/// The first segments of the paths of a `use crate::{…}` group starting at `text` (just after
/// the `{`), across lines.
fn group_heads(text: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut current = String::new();
    for ch in text.chars() {
        match ch {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                heads.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        if depth == 0 {
            current.push(ch);
        }
    }
    heads.push(current);
    heads
        .into_iter()
        .filter_map(|head| {
            let head = head.split("::").next()?.trim().to_owned();
            (!head.is_empty()).then_some(head)
        })
        .collect()
}

/// The top-level modules `file` (module path `own`, e.g. `["session", "actor"]`) names in
/// code compiled outside tests, each with the line naming it. In a crate that is one layer
/// module as a whole (`whole`), its own paths (`crate::…`, `super::…`) are inside that module.
fn named_modules(file: &Path, own: &[String], whole: Option<&str>) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(file).unwrap();
    let lines = code_lines(&text);
    let code: String = lines.iter().map(|(_, line)| format!("{line}\n")).collect();
    let line_of = |offset: usize| {
        let index = code[..offset].matches('\n').count();
        lines[index].0
    };
    let mut found = Vec::new();
    let is_ident = |ch: char| ch.is_ascii_alphanumeric() || ch == '_';
    let roots = std::iter::once("crate::".to_owned())
        .chain(DAEMON_CRATES.iter().map(|(_, name, _)| format!("{name}::")));
    let mut starts: Vec<(usize, String)> = Vec::new();
    for root in roots {
        starts.extend(
            code.match_indices(root.as_str())
                .map(|(offset, _)| (offset, root.clone())),
        );
    }
    starts.sort();
    for (offset, root) in starts {
        let before = &code[..offset];
        if before.ends_with(|ch: char| is_ident(ch) || ch == ':' || ch == '$') {
            continue; // `$crate::`, `x::crate::`, `my_agentd_core::`: not a crate's root
        }
        let rest = &code[offset + root.len()..];
        if root == "crate::" && whole.is_some() {
            continue;
        }
        let crate_module = DAEMON_CRATES
            .iter()
            .find(|(_, name, _)| root == format!("{name}::"))
            .and_then(|(_, _, module)| *module);
        if let Some(module) = crate_module {
            found.push((line_of(offset), module.to_owned()));
        } else if let Some(group) = rest.strip_prefix('{') {
            for head in group_heads(group) {
                found.push((line_of(offset), head));
            }
        } else {
            let head: String = rest.chars().take_while(|&ch| is_ident(ch)).collect();
            found.push((line_of(offset), head));
        }
    }
    // `super::super::x` from a file `depth` modules deep reaches the root's `x`.
    if whole.is_some() {
        return found;
    }
    let climb = "super::".repeat(own.len());
    for (offset, _) in code.match_indices(&climb) {
        if code[..offset].ends_with("super::") {
            continue;
        }
        let rest = &code[offset + climb.len()..];
        let head: String = rest.chars().take_while(|&ch| is_ident(ch)).collect();
        found.push((line_of(offset), head));
    }
    found
}

/// The module path of a source file under `src` (`session/actor.rs` → `session::actor`).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if parts.last().is_some_and(|last| last == "mod") {
        parts.pop();
    }
    parts
}

/// The module graph of agentd follows `LAYERS`: each non-test line naming another top-level
/// module names one listed before its own, so no cycle and no upward edge can come back; and
/// every module of `lib.rs` is placed in a layer.
#[test]
fn the_module_graph_follows_the_declared_layers() {
    let order: Vec<&str> = LAYERS
        .iter()
        .flat_map(|(_, modules)| modules.iter().copied())
        .collect();
    let layer_of = |module: &str| {
        LAYERS
            .iter()
            .find(|(_, modules)| modules.contains(&module))
            .map(|(layer, _)| *layer)
    };
    let declared_in = |src: &str| -> Vec<String> {
        let lib = std::fs::read_to_string(repo_root().join(src).join("lib.rs")).unwrap();
        code_lines(&lib)
            .iter()
            .filter_map(|(_, line)| {
                let line = line.trim().strip_prefix("pub ").unwrap_or(line.trim());
                line.strip_prefix("mod ")?
                    .strip_suffix(';')
                    .map(str::to_owned)
            })
            .collect()
    };
    let mut core: Vec<String> = LAYERS[0]
        .1
        .iter()
        .map(|module| module.to_string())
        .collect();
    core.sort_unstable();
    let mut in_core = declared_in(DAEMON_CRATES[0].0);
    in_core.sort_unstable();
    assert_eq!(
        in_core, core,
        "the crate agentd_core holds exactly the core layer (LAYERS[0])"
    );
    let declared: Vec<String> = DAEMON_CRATES
        .iter()
        .flat_map(|(src, _, whole)| match whole {
            Some(module) => vec![module.to_string()],
            None => declared_in(src),
        })
        .collect();
    let unplaced: Vec<&String> = declared
        .iter()
        .filter(|module| !order.contains(&module.as_str()))
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules of the daemon's crates in no layer: {unplaced:?}; add each to LAYERS in \
         tests/tests/tidy.rs (and to ARCHITECTURE.md's layer diagram) above the modules it uses"
    );
    let gone: Vec<&&str> = order
        .iter()
        .filter(|module| !declared.iter().any(|declared| declared == *module))
        .collect();
    assert!(
        gone.is_empty(),
        "LAYERS names modules no lib.rs of the daemon's crates declares: {gone:?}"
    );

    let mut upward = Vec::new();
    let mut edges = 0;
    let files = DAEMON_CRATES.iter().flat_map(|(src, _, whole)| {
        let src = repo_root().join(src);
        rust_files(&src)
            .into_iter()
            .map(move |file| (src.clone(), file, *whole))
    });
    for (src, file, whole) in files {
        let own = match whole {
            Some(module) => vec![module.to_owned()],
            None => module_path(&src, &file),
        };
        if is_test_file(file.strip_prefix(&src).unwrap()) || own.is_empty() {
            continue;
        }
        let me = own[0].as_str();
        let Some(my_rank) = order.iter().position(|module| *module == me) else {
            continue; // lib.rs, main.rs
        };
        for (line, named) in named_modules(&file, &own, whole) {
            let Some(rank) = order.iter().position(|module| *module == named) else {
                continue; // a macro, `crate::Something` at the root
            };
            edges += 1;
            if rank > my_rank {
                upward.push(format!(
                    "{}:{line}: `{me}` (layer {}) names `{named}` (layer {}), which is above \
                     it in LAYERS",
                    file.strip_prefix(repo_root()).unwrap_or(&file).display(),
                    layer_of(me).unwrap_or("?"),
                    layer_of(&named).unwrap_or("?"),
                ));
            }
        }
    }
    assert!(
        edges > 100,
        "too few module references found ({edges}): is the scan broken?"
    );
    assert!(
        upward.is_empty(),
        "imports against the layer order (move the item down to a module both can use, or \
         pass it in from above):\n{}",
        upward.join("\n")
    );
}

/// The scanner the layer test relies on sees every form of naming a module, and nothing in
/// comments or under `#[cfg(test)]`.
#[test]
fn the_layer_scan_reads_every_form_of_naming_a_module() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("actor.rs");
    std::fs::write(
        &file,
        "//! about crate::doc\n\
         use crate::{\n    alpha::{A, B},\n    beta,\n};\n\
         use crate::gamma::C;\n\
         fn f() { crate::delta::go(); agentd_core::theta::t(); agentd_llm::Client::new(); super::super::epsilon::run(); super::sibling(); }\n\
         /// see crate::comment\n\
         #[cfg(test)]\n\
         fn only_tests() {\n    crate::hidden::x();\n}\n\
         #[cfg(test)]\n\
         mod tests {\n    use crate::hidden;\n}\n\
         fn after() { crate::zeta::z(); }\n",
    )
    .unwrap();
    let own = vec!["session".to_owned(), "actor".to_owned()];
    let named: Vec<String> = named_modules(&file, &own, None)
        .into_iter()
        .map(|(_, module)| module)
        .collect();
    assert_eq!(
        named,
        [
            "alpha", "beta", "gamma", "delta", "theta", "llm", "zeta", "epsilon"
        ],
        "lines: {:?}",
        named_modules(&file, &own, None)
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
