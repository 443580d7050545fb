//! All integration tests, in one binary: they start the real daemon and clients.

mod cli;
mod daemon;
mod llm;
