//! Test-only panic triggers, read once from the environment at startup.
//!
//! The integration tests must prove that a panicking request handler still gets an answer and
//! that a panicking run still ends with `runFinished{failed}`. Once the real triggers are fixed
//! no input makes the daemon panic on purpose, so the tests name a point here instead:
//!
//! - `AGENTD_TEST_PANIC_METHOD=<method>`: the handler of that method panics (e.g. `session/list`);
//! - `AGENTD_TEST_PANIC_TOOL=<tool name>`: a run panics when the model calls a tool of that name,
//!   after the call is in the history and before it is decided or run.
//!
//! Both are unset in normal use, and then nothing here ever panics.

use std::sync::OnceLock;

/// What the environment asked for; set once by `init_from_env`.
#[derive(Debug, Default)]
struct Triggers {
    method: Option<String>,
    tool: Option<String>,
}

static TRIGGERS: OnceLock<Triggers> = OnceLock::new();

/// Read the trigger variables; later calls keep the first reading.
pub fn init_from_env() {
    let read = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
    let _ = TRIGGERS.set(Triggers {
        method: read("AGENTD_TEST_PANIC_METHOD"),
        tool: read("AGENTD_TEST_PANIC_TOOL"),
    });
}

/// Panic if the tests asked the handler of `method` to.
pub fn panic_in_method(method: &str) {
    if TRIGGERS.get().and_then(|t| t.method.as_deref()) == Some(method) {
        panic!("test panic in the handler of {method} (AGENTD_TEST_PANIC_METHOD)");
    }
}

/// Panic if the tests asked a run to when the model calls `tool`.
pub fn panic_in_tool_call(tool: &str) {
    if TRIGGERS.get().and_then(|t| t.tool.as_deref()) == Some(tool) {
        panic!("test panic in a run calling {tool} (AGENTD_TEST_PANIC_TOOL)");
    }
}
