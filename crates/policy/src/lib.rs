//! The policy layer of agentd: which projects are trusted (`trust`), whether a tool call runs,
//! asks or is refused (`permission`), the one wrapper for child processes and their sandbox
//! (`process`), and the broker where calls that need a person wait (`approval`). A separate
//! crate above agentd_core, so nothing here can name a layer above it.

// Test code writes its fixtures with `std::fs::write` and starts plain children; the
// disallowed-methods rules of clippy.toml are for the layer's own code.
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod approval;
pub mod permission;
pub mod process;
pub mod trust;
