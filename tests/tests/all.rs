//! All integration tests, in one binary: they start the real daemon and clients.

mod daemon;
mod llm;
