//! The one place that speaks rmcp: connecting to a server (a child process through
//! `process::ChildProcess`-style spawning, or streamable HTTP), listing tools, calling them
//! with progress and cancellation, and noticing when the server goes away.
//!
//! SKELETON: filled in by the MCP runtime work.
