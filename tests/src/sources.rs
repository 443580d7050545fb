//! The workspace's sources, for the tests that check them: the daemon's crates in layer order
//! and every `.rs` file of a directory.

/// The daemon's crates, bottom first: the source dir (from the workspace root), the name other
/// crates use, and the layer module the crate is as a whole (None: its top-level modules are
/// layer modules, as `tests/tests/tidy.rs`'s `LAYERS` places them). The crate `agentd_core` is
/// the core layer, `agentd_policy` the policy layer, `agentd_llm` the module `llm`,
/// `agentd_knowledge` the knowledge layer, `agentd_work` the work layer, `agentd_agent` the
/// module `agent`; the rest are `agentd`'s modules. The layer test, the map's checks and the
/// scans of the daemon's code read this list: a new crate is one line here.
pub const DAEMON_CRATES: &[(&str, &str, Option<&str>)] = &[
    ("crates/core/src", "agentd_core", None),
    ("crates/policy/src", "agentd_policy", None),
    ("crates/llm/src", "agentd_llm", Some("llm")),
    ("crates/knowledge/src", "agentd_knowledge", None),
    ("crates/work/src", "agentd_work", None),
    ("crates/agent/src", "agentd_agent", Some("agent")),
    ("agentd/src", "agentd", None),
];

/// The source dirs of the daemon's crates, bottom first.
pub fn daemon_source_dirs() -> impl Iterator<Item = &'static str> {
    DAEMON_CRATES.iter().map(|(src, _, _)| *src)
}

/// Every `.rs` file under `dir`, recursively, sorted (for checks on the source).
pub fn rust_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read source dir") {
            let path = entry.expect("source dir entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}
