//! The knowledge layer of agentd: what a session knows beyond its own history — the curated
//! memory stores (`memory`), the skills of a workspace (`skills`) — and what the model is sent
//! of that history (`context`). A separate crate above `agentd-core`, so nothing here can name
//! the daemon's policy, tools, agent or session code.

#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod context;
pub mod memory;
pub mod skills;
