//! Test-only fault triggers ("seams"), compiled in only with the crate's `test-seams` feature.
//!
//! The integration tests must prove that a panicking request handler still gets an answer, that
//! a panicking run still ends with `runFinished{failed}` and that a full disk loses no session
//! line. Once the real triggers are fixed no input does these on purpose, so the tests name a
//! point here instead, through the daemon's environment (read once, at startup):
//!
//! - `AGENTD_TEST_PANIC_METHOD=<method>`: the handler of that method panics (e.g. `session/list`);
//! - `AGENTD_TEST_PANIC_TOOL=<tool name>`: a run panics when the model calls a tool of that name,
//!   after the call is in the history and before it is decided or run;
//! - `AGENTD_TEST_WRITE_FAULT=<file>`: while that file exists, every session-file write whose
//!   line contains the file's (trimmed) text fails like a full disk, after writing half of the
//!   line; an empty file fails every write. The file is read at each write (tests create and
//!   remove it while the daemon runs), on the log's blocking writer thread.
//! - `AGENTD_TEST_TASK_WRITE_FAULT=<file>`: the same for task record writes (`task::store`):
//!   while that file exists, every record whose encoded form contains the file's text fails
//!   to be written.
//!
//! Without the feature (every build a user makes: `cargo build`, `cargo install`) the same
//! functions are empty and none of these names is in the binary; the test command checks that
//! (`tests/no-test-seams.sh`). The `AGENTD_TEST_` prefix is kept for seams: every such name in
//! this crate's source must be absent from a binary built without the feature.

#[cfg(feature = "test-seams")]
pub use armed::{
    PANIC_METHOD_ENV, PANIC_TOOL_ENV, TASK_WRITE_FAULT_ENV, WRITE_FAULT_ENV, init_from_env,
    panic_in_method, panic_in_tool_call, task_write_fault, write_fault,
};
#[cfg(not(feature = "test-seams"))]
pub use inert::{
    init_from_env, panic_in_method, panic_in_tool_call, task_write_fault, write_fault,
};

/// The seams of a test build.
#[cfg(feature = "test-seams")]
mod armed {
    use std::io;
    use std::path::PathBuf;
    use std::sync::OnceLock;

    /// Names a request method whose handler panics.
    pub const PANIC_METHOD_ENV: &str = "AGENTD_TEST_PANIC_METHOD";
    /// Names a tool whose call makes a run panic.
    pub const PANIC_TOOL_ENV: &str = "AGENTD_TEST_PANIC_TOOL";
    /// Names a file that, while it exists, makes session-file writes fail like a full disk.
    pub const WRITE_FAULT_ENV: &str = "AGENTD_TEST_WRITE_FAULT";
    /// Names a file that, while it exists, makes task record writes fail like a full disk.
    pub const TASK_WRITE_FAULT_ENV: &str = "AGENTD_TEST_TASK_WRITE_FAULT";

    /// What the environment asked for; set once by `init_from_env`.
    #[derive(Debug, Default)]
    struct Triggers {
        method: Option<String>,
        tool: Option<String>,
        write_fault_file: Option<PathBuf>,
        task_write_fault_file: Option<PathBuf>,
    }

    static TRIGGERS: OnceLock<Triggers> = OnceLock::new();

    /// Read the trigger variables; later calls keep the first reading.
    pub fn init_from_env() {
        let read = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        let _ = TRIGGERS.set(Triggers {
            method: read(PANIC_METHOD_ENV),
            tool: read(PANIC_TOOL_ENV),
            write_fault_file: std::env::var_os(WRITE_FAULT_ENV).map(PathBuf::from),
            task_write_fault_file: std::env::var_os(TASK_WRITE_FAULT_ENV).map(PathBuf::from),
        });
    }

    /// Panic if the tests asked the handler of `method` to.
    pub fn panic_in_method(method: &str) {
        if TRIGGERS.get().and_then(|t| t.method.as_deref()) == Some(method) {
            panic!("test panic in the handler of {method} ({PANIC_METHOD_ENV})");
        }
    }

    /// Panic if the tests asked a run to when the model calls `tool`.
    pub fn panic_in_tool_call(tool: &str) {
        if TRIGGERS.get().and_then(|t| t.tool.as_deref()) == Some(tool) {
            panic!("test panic in a run calling {tool} ({PANIC_TOOL_ENV})");
        }
    }

    /// The error a session-file write of `line` fails with, if the tests asked for one.
    /// Blocking (it reads the fault file): called from the log's writer thread only.
    pub fn write_fault(line: &[u8]) -> Option<io::Error> {
        fault_of(
            TRIGGERS.get()?.write_fault_file.as_ref()?,
            line,
            WRITE_FAULT_ENV,
        )
    }

    /// The error a task record write of `bytes` fails with, if the tests asked for one.
    /// Blocking (it reads the fault file): called where records are written, on the blocking
    /// pool.
    pub fn task_write_fault(bytes: &[u8]) -> Option<io::Error> {
        fault_of(
            TRIGGERS.get()?.task_write_fault_file.as_ref()?,
            bytes,
            TASK_WRITE_FAULT_ENV,
        )
    }

    /// A full disk's error when `fault_file` exists and `line` holds its text.
    fn fault_of(fault_file: &PathBuf, line: &[u8], variable: &str) -> Option<io::Error> {
        let pattern = std::fs::read_to_string(fault_file).ok()?;
        let pattern = pattern.trim().as_bytes();
        let matches =
            pattern.is_empty() || line.windows(pattern.len()).any(|window| window == pattern);
        matches.then(|| {
            io::Error::new(
                io::ErrorKind::StorageFull,
                format!("no space left on device (injected by {variable})"),
            )
        })
    }
}

/// The same functions in every other build: they do nothing, and the optimiser removes them.
#[cfg(not(feature = "test-seams"))]
mod inert {
    /// Nothing to read.
    pub fn init_from_env() {}

    /// Never panics.
    pub fn panic_in_method(_method: &str) {}

    /// Never panics.
    pub fn panic_in_tool_call(_tool: &str) {}

    /// Never fails a write.
    pub fn write_fault(_line: &[u8]) -> Option<std::io::Error> {
        None
    }

    /// Never fails a write.
    pub fn task_write_fault(_bytes: &[u8]) -> Option<std::io::Error> {
        None
    }
}
