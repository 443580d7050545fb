//! Test support: the daemon harness and the scripted mock LLM server.

pub mod harness;
pub mod mock_llm;
pub mod scenario;
