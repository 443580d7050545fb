//! Configuration: config.toml and environment quick start.
