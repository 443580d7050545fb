//! Tidy checks of the map and the sources it describes: every source file opens with a `//!`
//! header, ARCHITECTURE.md names every test module and only `a::b` paths that exist, and the
//! daemon serves exactly the methods of `protocol::methods::ALL`. Each check is a function over
//! a root directory, so a test beside it shows on a small tree that it catches what it checks.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use agentd_tests::harness::Daemon;
use agentd_tests::sources::{DAEMON_CRATES, daemon_source_dirs, rust_files};
use regex::Regex;
use serde_json::json;

/// The source dirs besides the daemon's crates' (`DAEMON_CRATES`).
const OTHER_SOURCE_DIRS: &[&str] = &[
    "agentctl/src",
    "protocol/src",
    "tests/src",
    "tests/tests",
    "tests/perf",
];

/// The crates besides the daemon's, with where their sources are.
const OTHER_CRATES: &[(&str, &str)] = &[
    ("protocol", "protocol/src"),
    ("agentctl", "agentctl/src"),
    ("agentd_tests", "tests/src"),
];

/// The directories whose every `.rs` file must open with a `//!` line.
fn source_dirs() -> Vec<&'static str> {
    daemon_source_dirs()
        .chain(OTHER_SOURCE_DIRS.iter().copied())
        .collect()
}

/// The crates an `a::b` path of the map may start with, and where their sources are.
fn crates() -> Vec<(&'static str, &'static str)> {
    DAEMON_CRATES
        .iter()
        .map(|(src, name, _)| (*name, *src))
        .chain(OTHER_CRATES.iter().copied())
        .collect()
}

/// The integration-test modules, each a file of this directory named in `all.rs`.
const TEST_MODULES: &str = "tests/tests";

/// The root of the workspace (the test crate's parent).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|err| panic!("read {}: {err}", path.display()))
}

/// `file:1: …` for every `.rs` file under `root`'s `dirs` whose first line is not `//!`.
fn files_without_header(root: &Path, dirs: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for dir in dirs {
        let dir = root.join(dir);
        assert!(dir.is_dir(), "no source dir {}", dir.display());
        for file in rust_files(&dir) {
            let text = read(&file);
            let first = text.lines().next().unwrap_or("");
            if !first.starts_with("//!") {
                found.push(format!(
                    "{}:1: opens with {first:?}: start the file with a `//!` line saying what it is for",
                    file.display()
                ));
            }
        }
    }
    found
}

#[test]
fn every_source_file_opens_with_a_module_header() {
    let found = files_without_header(&repo_root(), &source_dirs());
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The modules `all.rs` declares (`mod x;`), with their line numbers.
fn test_modules(all_rs: &str) -> Vec<(usize, String)> {
    all_rs
        .lines()
        .enumerate()
        .filter_map(|(number, line)| {
            let name = line.trim().strip_prefix("mod ")?.strip_suffix(';')?;
            Some((number + 1, name.to_owned()))
        })
        .collect()
}

/// Test modules of `all.rs` that the map does not name in backticks (`` `x` ``).
fn test_modules_missing_from_map(all_rs_path: &Path, map: &str) -> Vec<String> {
    test_modules(&read(all_rs_path))
        .into_iter()
        .filter(|(_, name)| !map.contains(&format!("`{name}`")))
        .map(|(line, name)| {
            format!(
                "{}:{line}: test module `{name}` is not named in ARCHITECTURE.md: \
                 add its line under the tests crate",
                all_rs_path.display()
            )
        })
        .collect()
}

#[test]
fn the_map_names_every_test_module() {
    let root = repo_root();
    let map = read(&root.join("ARCHITECTURE.md"));
    let all_rs = root.join(TEST_MODULES).join("all.rs");
    assert!(
        test_modules(&read(&all_rs)).len() >= 50,
        "the test modules were not found in {}",
        all_rs.display()
    );
    let found = test_modules_missing_from_map(&all_rs, &map);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The `a::b` paths the map names in backticks outside fenced blocks, with their line numbers.
fn map_paths(map: &str) -> Vec<(usize, String)> {
    let path = Regex::new(r"^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)+$").unwrap();
    let mut paths = Vec::new();
    let mut fenced = false;
    for (number, line) in map.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for (index, span) in line.split('`').enumerate() {
            let span = span.strip_suffix("()").unwrap_or(span);
            if index % 2 == 1 && path.is_match(span) {
                paths.push((number + 1, span.to_owned()));
            }
        }
    }
    paths
}

/// Whether `text` defines `name` as an item (`fn`, `struct`, `enum`, `trait`, `const`,
/// `static`, `type`, `mod`, a macro) or re-exports it (`pub use …name…;`).
fn defines_item(text: &str, name: &str) -> bool {
    let name = regex::escape(name);
    let item = Regex::new(&format!(
        r#"(?m)^\s*(pub(\([^)]*\))?\s+)?((async|unsafe|const|extern "C")\s+)*(fn|struct|enum|trait|const|static|type|mod|union)\s+{name}\b|macro_rules!\s*{name}\b"#
    ))
    .unwrap();
    let reexport = Regex::new(r"(?s)pub(\([^)]*\))?\s+use\s+[^;]*;").unwrap();
    let word = Regex::new(&format!(r"\b{name}\b")).unwrap();
    item.is_match(text)
        || reexport
            .find_iter(text)
            .any(|statement| word.is_match(statement.as_str()))
}

/// Whether `text` defines `name` as a member of a type: an item as above, a field
/// (`name: …`) or an enum variant (`Name,`, `Name {`, `Name(`).
fn defines_member(text: &str, name: &str) -> bool {
    let escaped = regex::escape(name);
    let member = Regex::new(&format!(
        r"(?m)^\s*(pub(\([^)]*\))?\s+)?{escaped}\s*(:[^:]|,|\{{|\(|=[^=>]|$)"
    ))
    .unwrap();
    defines_item(text, name) || member.is_match(text)
}

/// A child module `name` of the module whose file is `parent` and whose children are in `dir`:
/// its file (`dir/name.rs`, `dir/name/mod.rs`, or what a `#[path = "…"]` before `mod name;`
/// names beside `parent`) and the dir its own children are in.
fn module_at(parent: &Path, dir: &Path, name: &str) -> Option<(PathBuf, PathBuf)> {
    let file = dir.join(format!("{name}.rs"));
    let mod_rs = dir.join(name).join("mod.rs");
    if let Some(found) = [file, mod_rs].into_iter().find(|path| path.is_file()) {
        return Some((found, dir.join(name)));
    }
    let attribute = Regex::new(&format!(
        r#"#\[path\s*=\s*"([^"]+)"\]\s*(pub(\([^)]*\))?\s+)?mod\s+{}\s*;"#,
        regex::escape(name)
    ))
    .unwrap();
    let text = std::fs::read_to_string(parent).ok()?;
    let relative = attribute.captures(&text)?.get(1)?.as_str().to_owned();
    let found = parent.parent()?.join(relative);
    found.is_file().then(|| (found, dir.join(name)))
}

/// Why `segments` (below a module whose file is `file` and whose children are in `dir`) do
/// not resolve, or `None` when they do. `crate_src` is searched for members of a type.
fn unresolved_below(
    file: &Path,
    dir: &Path,
    segments: &[&str],
    crate_src: &Path,
) -> Option<String> {
    if segments.is_empty() {
        return None; // nothing left to look up: the path resolved
    }
    let (first, rest) = (&segments[0], &segments[1..]);
    if let Some((child, child_dir)) = module_at(file, dir, first) {
        return unresolved_below(&child, &child_dir, rest, crate_src);
    }
    if !defines_item(&read(file), first) {
        return Some(format!(
            "no module `{first}` in {} and no item `{first}` defined in {}",
            dir.display(),
            file.display()
        ));
    }
    // `Type::member…`: each member is defined in the module's file, or elsewhere in its crate
    // (an impl block in another file).
    let crate_files: Vec<PathBuf> = rust_files(crate_src);
    for member in rest {
        let here = defines_member(&read(file), member);
        let anywhere = here || crate_files.iter().any(|f| defines_member(&read(f), member));
        if !anywhere {
            return Some(format!(
                "`{first}` is defined in {}, but no `{member}` is defined in its crate",
                file.display()
            ));
        }
    }
    None
}

/// Why the map's path `path` resolves nowhere, or `None`. A path starting with a crate's name
/// (`protocol::…`) is looked up in that crate; otherwise in every crate with a top module of
/// that name and among the test modules (`daemon::…` is a module of agentd and of the tests).
fn unresolved(root: &Path, path: &str) -> Option<String> {
    let segments: Vec<&str> = path.split("::").collect();
    let crates = crates();
    let mut places: Vec<(PathBuf, PathBuf, Vec<&str>, PathBuf)> = Vec::new();
    if let Some((_, src)) = crates.iter().find(|(name, _)| *name == segments[0]) {
        let src = root.join(src);
        places.push((src.join("lib.rs"), src.clone(), segments[1..].to_vec(), src));
    } else {
        for (_, src) in &crates {
            let src = root.join(src);
            if module_at(&src.join("lib.rs"), &src, segments[0]).is_some() {
                places.push((src.join("lib.rs"), src.clone(), segments.clone(), src));
            }
        }
        let tests = root.join(TEST_MODULES);
        if tests.join(format!("{}.rs", segments[0])).is_file() {
            places.push((tests.join("all.rs"), tests.clone(), segments.clone(), tests));
        }
    }
    if places.is_empty() {
        let names: Vec<&str> = crates.iter().map(|(name, _)| *name).collect();
        return Some(format!(
            "`{}` is no crate ({}), no top module of one and no test module",
            segments[0],
            names.join(", ")
        ));
    }
    let mut why = Vec::new();
    for (file, dir, rest, crate_src) in &places {
        match unresolved_below(file, dir, rest, crate_src) {
            None => return None,
            Some(reason) => why.push(reason),
        }
    }
    Some(why.join("; "))
}

/// `ARCHITECTURE.md:line: …` for every path of `map` that does not resolve under `root`.
fn unresolved_map_paths(root: &Path, map: &str) -> Vec<String> {
    map_paths(map)
        .into_iter()
        .filter_map(|(line, path)| {
            let why = unresolved(root, &path)?;
            Some(format!(
                "ARCHITECTURE.md:{line}: `{path}` does not resolve ({why}): name the module or \
                 item where it is now, or drop it from the map"
            ))
        })
        .collect()
}

#[test]
fn every_path_the_map_names_resolves() {
    let root = repo_root();
    let map = read(&root.join("ARCHITECTURE.md"));
    assert!(
        map_paths(&map).len() >= 50,
        "too few `a::b` paths found in ARCHITECTURE.md: is the map there?"
    );
    let found = unresolved_map_paths(&root, &map);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The layers of the map's diagram (the first fenced block, top layer first, a row's further
/// modules on indented lines, up to the `─` rule), bottom first: `[layer, module, …]` each.
fn diagram_layers(map: &str) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let block = map
        .split("```")
        .nth(1)
        .expect("a fenced layer diagram in ARCHITECTURE.md");
    for line in block.lines().skip(1) {
        if line.contains('─') {
            break;
        }
        let words = line.split_whitespace().map(str::to_owned);
        match rows.last_mut() {
            Some(row) if line.starts_with(' ') => row.extend(words),
            _ if line.trim().is_empty() => {}
            _ => rows.push(words.collect()),
        }
    }
    rows.reverse();
    rows
}

/// The layers of `tidy.rs`'s `LAYERS` list, bottom first: its string literals, a layer's name
/// opening each `(` tuple.
fn tidy_layers(tidy_rs: &str) -> Vec<Vec<String>> {
    let start = tidy_rs
        .find("const LAYERS")
        .expect("a `const LAYERS` list in tests/tests/tidy.rs");
    let list = &tidy_rs[start..];
    let list = &list[..list.find("];").expect("the end of LAYERS")];
    let literal = Regex::new(r#"(\()?\s*"([a-z_]+)""#).unwrap();
    let mut layers: Vec<Vec<String>> = Vec::new();
    for captures in literal.captures_iter(list) {
        let name = captures[2].to_owned();
        match layers.last_mut() {
            Some(layer) if captures.get(1).is_none() => layer.push(name),
            _ => layers.push(vec![name]),
        }
    }
    layers
}

#[test]
fn the_layer_diagram_is_the_tidy_list() {
    let root = repo_root();
    let map = read(&root.join("ARCHITECTURE.md"));
    let declared = tidy_layers(&read(&root.join(TEST_MODULES).join("tidy.rs")));
    assert!(
        declared.len() >= 5,
        "LAYERS not read from tidy.rs: {declared:?}"
    );
    pretty_assertions::assert_eq!(
        diagram_layers(&map),
        declared,
        "ARCHITECTURE.md's layer diagram (bottom first here) differs from `LAYERS` in \
         tests/tests/tidy.rs: redraw the diagram from that list"
    );
}

/// The wire name of each method type in `protocol/src/methods.rs`'s table
/// (`SessionGet = "session/get": …`).
fn wire_names(methods_rs: &str) -> Vec<(String, String)> {
    let row = Regex::new(r#"^\s*([A-Za-z]+) = "([a-z/A-Z]+)":"#).unwrap();
    methods_rs
        .lines()
        .filter_map(|line| {
            let captures = row.captures(line)?;
            Some((captures[1].to_owned(), captures[2].to_owned()))
        })
        .collect()
}

/// How the method table registered in `rpc_mod` (`register::<SessionGet, _, _>(…)` lines)
/// differs from `all`, each difference with what to do.
fn served_methods_differ(rpc_mod: &Path, methods_rs: &str, all: &[&str]) -> Vec<String> {
    let names = wire_names(methods_rs);
    let register = Regex::new(r"register(_subscribe)?::<([A-Za-z]+)\s*,").unwrap();
    let mut served = BTreeSet::new();
    let mut found = Vec::new();
    for (number, line) in read(rpc_mod).lines().enumerate() {
        let Some(captures) = register.captures(line) else {
            continue;
        };
        let ty = &captures[2];
        if ty == "M" {
            continue; // the generic `register::<M, …>` inside the helpers
        }
        match names.iter().find(|(name, _)| name == ty) {
            Some((_, wire)) if all.contains(&wire.as_str()) => {
                served.insert(wire.clone());
            }
            Some((_, wire)) => found.push(format!(
                "{}:{}: `{wire}` is served but not in protocol::methods::ALL: add it to the \
                 `methods!` table of protocol/src/methods.rs",
                rpc_mod.display(),
                number + 1
            )),
            None => found.push(format!(
                "{}:{}: `{ty}` is registered but is no method of protocol/src/methods.rs",
                rpc_mod.display(),
                number + 1
            )),
        }
    }
    for method in all {
        if !served.contains(*method) {
            found.push(format!(
                "{}: `{method}` is in protocol::methods::ALL but has no handler: register one in \
                 `rpc::build`",
                rpc_mod.display()
            ));
        }
    }
    found
}

#[test]
fn the_dispatch_table_serves_exactly_the_protocols_methods() {
    let root = repo_root();
    let methods_rs = read(&root.join("protocol/src/methods.rs"));
    assert_eq!(
        wire_names(&methods_rs).len(),
        protocol::methods::ALL.len(),
        "the rows of protocol/src/methods.rs's table were not all found"
    );
    let found = served_methods_differ(
        &root.join("agentd/src/rpc/mod.rs"),
        &methods_rs,
        protocol::methods::ALL,
    );
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The table's names reach the wire: a live daemon knows every method of the list (an error
/// about the params, never "method not found"). `daemon/shutdown` goes last.
#[tokio::test]
async fn a_live_daemon_knows_every_method_of_the_list() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let mut methods: Vec<&str> = protocol::methods::ALL
        .iter()
        .copied()
        .filter(|method| *method != "initialize" && *method != "daemon/shutdown")
        .collect();
    methods.push("daemon/shutdown");
    for method in methods {
        // Params no method accepts whole: the answer is an error, or a result for the methods
        // that take nothing.
        let answer = client.request(method, json!({"sessionId": 7})).await;
        if let Err(err) = answer {
            assert_ne!(
                err.code,
                i64::from(protocol::error::METHOD_NOT_FOUND),
                "{method} is in protocol::methods::ALL but the daemon does not serve it: {err:?}"
            );
        }
    }
}

/// A small tree for the checks' own tests: `tests/tests/all.rs` and some sources.
fn fixture(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

#[test]
fn the_checks_catch_a_missing_header_a_missing_test_module_and_a_stale_path() {
    let tree = fixture(&[
        ("agentd/src/lib.rs", "//! The daemon.\npub mod session;\n"),
        (
            "agentd/src/session/mod.rs",
            "//! Sessions.\npub mod actor;\npub use actor::Session;\n#[path = \"session_tests.rs\"]\nmod tests;\n",
        ),
        (
            "agentd/src/session/session_tests.rs",
            "//! Unit tests.\n#[test]\nfn a_unit_test() {}\n",
        ),
        (
            "agentd/src/session/actor.rs",
            "use std::fmt;\n//! One session.\npub struct Session {\n    pub id: String,\n}\n",
        ),
        (
            "tests/tests/all.rs",
            "//! All.\nmod sessions;\nmod daemon;\n",
        ),
        (
            "tests/tests/sessions.rs",
            "//! Sessions.\nasync fn a_session_survives() {}\n",
        ),
        ("tests/tests/daemon.rs", "//! Daemon.\n"),
        ("protocol/src/lib.rs", "//! Wire.\n"),
        ("agentctl/src/lib.rs", "//! Client.\n"),
        ("tests/src/lib.rs", "//! Support.\n"),
        ("tests/perf/main.rs", "//! Counts.\n"),
    ]);
    let root = tree.path();
    for (src, _, _) in DAEMON_CRATES {
        let lib = root.join(src).join("lib.rs");
        if !lib.exists() {
            std::fs::create_dir_all(lib.parent().unwrap()).unwrap();
            std::fs::write(lib, "//! A crate of the daemon.\n").unwrap();
        }
    }

    let headers = files_without_header(root, &source_dirs());
    assert_eq!(headers.len(), 1, "{headers:?}");
    assert!(headers[0].contains("session/actor.rs:1:"), "{headers:?}");

    let map = "`sessions` and nothing else\n\
               `session::actor::Session::id` `session::Session` `sessions::a_session_survives` `session::tests::a_unit_test`\n\
               `session::actor::Gone` `session::mailbox` `tools::Tool` `session::Session::gone`\n\
               ```\n`not::checked`\n```\n";
    let missing = test_modules_missing_from_map(&root.join("tests/tests/all.rs"), map);
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert!(
        missing[0].contains("all.rs:3: test module `daemon`"),
        "{missing:?}"
    );

    let stale = unresolved_map_paths(root, map);
    let lines: Vec<&str> = stale
        .iter()
        .map(|line| line.split(" does not").next().unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            "ARCHITECTURE.md:3: `session::actor::Gone`",
            "ARCHITECTURE.md:3: `session::mailbox`",
            "ARCHITECTURE.md:3: `tools::Tool`",
            "ARCHITECTURE.md:3: `session::Session::gone`",
        ],
        "{stale:#?}"
    );
}

#[test]
fn the_layer_check_reads_both_lists_bottom_first() {
    let map = "text\n```\ntop     c\nbottom  a\n        b\n──\nprotocol\n```\n";
    let tidy = "const LAYERS: &[(&str, &[&str])] = &[\n    (\"bottom\", &[\"a\", \"b\"]),\n    \
                (\"top\", &[\"c\"]),\n];\n";
    let expected = vec![vec!["bottom", "a", "b"], vec!["top", "c"]];
    assert_eq!(diagram_layers(map), expected);
    assert_eq!(tidy_layers(tidy), expected);
    let moved = "```\ntop     c  a\nbottom  b\n──\n```\n";
    assert_ne!(diagram_layers(moved), tidy_layers(tidy));
}

#[test]
fn the_method_check_catches_a_method_served_twice_over_or_not_at_all() {
    let methods_rs = "    Initialize = \"initialize\": InitializeParams => InitializeResult;\n\
                      \x20   SessionGet = \"session/get\": SessionGetParams => SessionGetResult;\n\
                      \x20   TaskGet = \"task/get\": TaskGetParams => TaskGetResult;\n";
    let tree = fixture(&[(
        "rpc.rs",
        "fn register<M>() { module.register_async_method(M::NAME) }\n\
         register::<Initialize, _, _>(&mut module, initialize)?;\n\
         register_subscribe::<TaskGet, _, _>(&mut module, task::get)?;\n\
         register::<Unknown, _, _>(&mut module, unknown)?;\n",
    )]);
    let found = served_methods_differ(
        &tree.path().join("rpc.rs"),
        methods_rs,
        &["initialize", "session/get"],
    );
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found[0].contains("rpc.rs:3: `task/get` is served but not in"),
        "{found:?}"
    );
    assert!(
        found[1].contains("rpc.rs:4: `Unknown` is registered"),
        "{found:?}"
    );
    assert!(
        found[2].contains("`session/get` is in protocol::methods::ALL but has no handler"),
        "{found:?}"
    );
}
