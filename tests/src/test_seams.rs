//! The daemon's test seams as the tests see them: the trigger variables of `agentd_core::test_seam`,
//! and a guard that a test arming one runs a daemon built with them.
//!
//! The seams are compiled in only with agentd's `test-seams` feature, which reaches the binary
//! only through this crate's dev-dependency: `cargo build --workspace --all-targets` builds the
//! daemon the tests run with them, a plain `cargo build --workspace` without (and then a test of a
//! seam would fail for a reason it does not name).

use std::sync::OnceLock;

/// Names a request method whose handler panics.
pub const PANIC_METHOD: &str = "AGENTD_TEST_PANIC_METHOD";
/// Names a tool whose call makes a run panic.
pub const PANIC_TOOL: &str = "AGENTD_TEST_PANIC_TOOL";
/// Names a file that, while it exists, makes session-file writes fail like a full disk.
pub const WRITE_FAULT: &str = "AGENTD_TEST_WRITE_FAULT";

/// Names a file that, while it exists, makes task record writes fail like a full disk.
pub const TASK_WRITE_FAULT: &str = "AGENTD_TEST_TASK_WRITE_FAULT";

/// Every seam variable.
pub const ALL: [&str; 4] = [PANIC_METHOD, PANIC_TOOL, WRITE_FAULT, TASK_WRITE_FAULT];

/// If `name` is a seam variable, panic with what to do when the daemon under test lacks it.
pub fn require_if_seam(name: &str) {
    if !ALL.contains(&name) {
        return;
    }
    let agentd = crate::harness::binary("agentd");
    assert!(
        built_in().iter().any(|seam| seam == name),
        "{} has no test seam {name}: it was built without agentd's `test-seams` feature; build \
         the binaries the tests run with `cargo build --workspace --all-targets`",
        agentd.display()
    );
}

/// The seam variables named in the daemon binary, found once per test process (by grep: a
/// scan in unoptimised test code takes seconds).
fn built_in() -> &'static [String] {
    static BUILT_IN: OnceLock<Vec<String>> = OnceLock::new();
    BUILT_IN.get_or_init(|| {
        let mut grep = std::process::Command::new("grep");
        grep.arg("-aoF");
        for name in ALL {
            grep.args(["-e", name]);
        }
        let output = grep
            .arg(crate::harness::binary("agentd"))
            .output()
            .expect("run grep on the agentd binary");
        // 0: some found, 1: none found; anything else is an error.
        assert!(
            matches!(output.status.code(), Some(0 | 1)),
            "grep on the agentd binary failed: {output:?}"
        );
        let mut names: Vec<String> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        names.sort();
        names.dedup();
        names
    })
}
