//! Tidy checks: rules of ARCHITECTURE.md that a reader relies on, checked on the source so
//! they cannot drift.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
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
