//! `[checkpoints]` of config.toml: whether the workspace's files are checkpointed before runs
//! and writing tool batches, and the limits (`agentd_work::checkpoint`).

use std::path::Path;

use agentd_work::checkpoint::{CheckpointSettings, DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES};

use super::ConfigError;

/// The most `[checkpoints] max_file_bytes` may be: each checkpointed file is hashed and kept.
const MAX_CHECKPOINT_FILE_BYTES: u64 = 1024 * 1024 * 1024;
/// The most `[checkpoints] max_files` may be.
const MAX_CHECKPOINT_FILES: u64 = 10_000_000;

/// `[checkpoints]` as written.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CheckpointsSection {
    enabled: Option<bool>,
    max_file_bytes: Option<u64>,
    max_files: Option<u64>,
}

impl CheckpointsSection {
    /// The settings, or which value is out of bounds (in `path`).
    pub(super) fn resolve(&self, path: &Path) -> Result<CheckpointSettings, ConfigError> {
        Ok(CheckpointSettings {
            enabled: self.enabled.unwrap_or(true),
            max_file_bytes: super::file::bounded(
                path,
                "checkpoints.max_file_bytes",
                self.max_file_bytes,
                DEFAULT_MAX_FILE_BYTES,
                MAX_CHECKPOINT_FILE_BYTES,
                "bytes",
            )?,
            max_files: super::file::bounded(
                path,
                "checkpoints.max_files",
                self.max_files,
                DEFAULT_MAX_FILES as u64,
                MAX_CHECKPOINT_FILES,
                "files",
            )? as usize,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    fn load(text: &str) -> Result<crate::config::Config, crate::config::ConfigError> {
        crate::config::from_text(Some(Path::new("/c/config.toml")), Some(text), &|_| None)
    }

    #[test]
    fn the_section_sets_the_limits_and_refuses_what_is_out_of_bounds() {
        let config =
            load("[checkpoints]\nenabled = false\nmax_file_bytes = 1000\nmax_files = 5\n").unwrap();
        assert!(!config.checkpoints.enabled);
        assert_eq!(config.checkpoints.max_file_bytes, 1000);
        assert_eq!(config.checkpoints.max_files, 5);
        assert!(load("").unwrap().checkpoints.enabled);
        let error = load("[checkpoints]\nmax_file_bytes = 99999999999\n").unwrap_err();
        assert!(
            error.to_string().contains("checkpoints.max_file_bytes"),
            "{error}"
        );
        let error = load("[checkpoints]\nmax_filez = 1\n").unwrap_err();
        assert!(error.to_string().contains("max_filez"), "{error}");
    }
}
