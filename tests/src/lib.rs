//! Test support: the daemon harness, the scripted mock LLM server and an HTTP gate.

pub mod gate;
pub mod harness;
pub mod mock_llm;
pub mod scenario;
pub mod subscription;
