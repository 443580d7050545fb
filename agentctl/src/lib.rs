//! agentctl library.
