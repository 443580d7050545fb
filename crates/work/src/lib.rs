//! agentd's work layer: what a run acts with. `tools` (the tool trait, the registry, the batch
//! executor and the built-in tools), `agents` (subagent definitions), `commands` (slash command files) and `mcp` (the MCP servers
//! the daemon owns, and their tools). It names only the layers below it: core, policy, llm and
//! knowledge; what it needs of tasks and subagents it names as traits the daemon implements.

// Test code writes its fixtures with `std::fs::write` and starts plain children; the
// disallowed-methods rules of clippy.toml are for the layer's own code, which the non-test
// build of this crate checks.
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod agents;
pub mod checkpoint;
pub mod commands;
pub mod mcp;
pub mod tools;
