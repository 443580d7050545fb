//! Tools: the tool trait, the registry, the batch executor and the built-in tools.
