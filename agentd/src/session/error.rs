//! The error of a session request (`SessionError`), which the RPC layer maps to a JSON-RPC
//! error, with the method that helps the user recover.

/// Why a session request failed; mapped to JSON-RPC errors by the RPC layer. Messages name
/// no client's commands: what to do next is [`SessionError::suggested_method`], sent as
/// `error.data`.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{0}")]
    NotFound(String),
    /// A session id outside the `ses_…` grammar.
    #[error("{0}")]
    InvalidId(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    InvalidParams(String),
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Internal(String),
    /// The model endpoint failed a request the daemon made for the user (a summary).
    #[error("{0}")]
    Upstream(String),
}

impl SessionError {
    pub fn not_found(id: &str) -> Self {
        SessionError::NotFound(format!(
            "session not found: {}; list the sessions to see which exist",
            protocol::error::echo(id)
        ))
    }

    /// The method whose result helps the user recover from this error, if one does.
    pub fn suggested_method(&self) -> Option<&'static str> {
        use protocol::Method;
        match self {
            SessionError::NotFound(_) | SessionError::InvalidId(_) => {
                Some(protocol::methods::SessionList::NAME)
            }
            SessionError::Conflict(_)
            | SessionError::InvalidParams(_)
            | SessionError::Config(_)
            | SessionError::Internal(_)
            | SessionError::Upstream(_) => None,
        }
    }
}
