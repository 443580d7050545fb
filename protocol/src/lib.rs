//! Wire types of the agentd JSON-RPC 2.0 protocol: method names with their params and result
//! types, event payloads and error codes. Serde (and schemars: every type derives `JsonSchema`,
//! `schema` turns them into the checked-in JSON Schema) only: no tokio, no I/O. The daemon and
//! the clients convert their own types into these; nothing else derives `Serialize` for the wire.
//!
//! Framing (newline-delimited JSON) and the envelope (`jsonrpc`, `id`, `error`) are handled by
//! the transports on top of jsonrpsee; this crate describes what goes inside.
//!
//! The contract: params types accept fields they do not know (a newer client works with an
//! older daemon; new behaviour is gated on capabilities) and results may gain fields, so no
//! type here uses `deny_unknown_fields`; clients ignore fields and event types they do not know.

pub mod agents;
pub mod approval;
pub mod budget;
pub mod checkpoint;
pub mod commands;
pub mod daemon;
pub mod elicitation;
pub mod error;
pub mod event;
pub mod extension;
pub mod id;
pub mod mcp;
pub mod memory;
pub mod methods;
pub mod project;
pub mod schema;
pub mod session;
pub mod skills;
pub mod socket;
pub mod task;
pub mod todo;
pub mod version;

pub use methods::Method;

/// Version of the protocol described by this crate, `MAJOR.MINOR`. A client sends the version
/// it speaks in `initialize`; the daemon answers with the lower of the two and refuses a
/// different major version (`version::negotiate`). A minor version only adds; each one has its
/// line in the changelog of `docs/protocol.md`.
pub const PROTOCOL_VERSION: &str = "1.3";

/// The major part of [`PROTOCOL_VERSION`]: versions with the same major are compatible.
pub fn protocol_major(version: &str) -> &str {
    version.split('.').next().unwrap_or(version)
}
