//! All integration tests.

mod llm;
