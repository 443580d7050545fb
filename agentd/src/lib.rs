//! The agentd daemon library: everything but argument parsing lives here so tests can drive it.

pub mod config;
pub mod conversation;
pub mod llm;
pub mod process;
pub mod tools;
