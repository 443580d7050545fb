//! Wire types of the agentd protocol.
