//! The one list of every method: its wire name, params type and result type.

use serde::{Serialize, de::DeserializeOwned};

use crate::daemon::*;

/// A JSON-RPC method of the agentd protocol.
pub trait Method {
    /// The wire name, `resource/verb`.
    const NAME: &'static str;
    type Params: Serialize + DeserializeOwned;
    type Result: Serialize + DeserializeOwned;
}

macro_rules! methods {
    ($( $(#[$doc:meta])* $ty:ident = $name:literal : $params:ty => $result:ty; )*) => {
        $(
            $(#[$doc])*
            pub struct $ty;
            impl Method for $ty {
                const NAME: &'static str = $name;
                type Params = $params;
                type Result = $result;
            }
        )*
        /// Every method name, in the order of this list.
        pub const ALL: &[&str] = &[$($name),*];
    };
}

methods! {
    /// Handshake; must be the first call on a connection.
    Initialize = "initialize": InitializeParams => InitializeResult;
    /// Version, pid, uptime, paths, counts and connected clients.
    DaemonStatus = "daemon/status": StatusParams => StatusResult;
    /// Graceful stop: stop accepting, finish in-flight requests, remove the socket, exit 0.
    DaemonShutdown = "daemon/shutdown": ShutdownParams => ShutdownResult;
}
