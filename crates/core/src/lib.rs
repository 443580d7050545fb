//! The bottom layer of agentd: what every other part uses and that uses nothing of theirs —
//! conversation types and their wire forms, frontmatter, text positions and cuts, workspace
//! paths and the project's directories, reading files safely, the one atomic file writer, the
//! daemon's paths and logging, the config file editor, who answers approvals, and the test
//! seams. A separate crate, so nothing here can name a layer above it.

#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod answerers;
pub mod atomic_file;
pub mod config_edit;
pub mod conversation;
pub mod frontmatter;
pub mod interned;
pub mod logging;
pub mod parallel;
pub mod paths;
pub mod platform;
pub mod regular_file;
pub mod test_seam;
/// Helpers for unit tests of this crate and of the crates above it (`test-support` feature).
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
pub mod text_position;
pub mod truncate;
pub mod workspace;
