//! Test support: the daemon harness, the scripted mock LLM server, an HTTP gate and the real
//! MCP servers (`mcp_servers`).

pub mod acp_client;
pub mod budgets;
pub mod counting_alloc;
pub mod extension;
pub mod gate;
pub mod harness;
pub mod mcp_scenario;
pub mod mcp_servers;
pub mod mcp_setup;
pub mod mock_llm;
pub mod oauth_server;
pub mod pty;
pub mod scenario;
pub mod sources;
pub mod subscription;
pub mod task_records;
pub mod terminal;
pub mod test_seams;
