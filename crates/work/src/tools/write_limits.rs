//! The hard limits on where `write_file` and `edit_file` may write, judged on the path a
//! write really reaches (shared by the platforms' [`super::write_target`]).

use std::path::{Path, PathBuf};

use agentd_core::workspace::{PROTECTED_PATHS, protected_component};

/// The hard limits on the path a write really reaches.
pub(super) fn check_limits(real: &Path, workspace: &Path, path: &str) -> Result<(), String> {
    if !real.starts_with(workspace) {
        return Err(escapes(path, real, workspace));
    }
    if let Some(protected) = protected_component(real, workspace) {
        return Err(format!(
            "{path}: `{protected}` is protected (the path leads there through a symlink); \
             tools never write {PROTECTED_PATHS}, whatever the rules or mode"
        ));
    }
    Ok(())
}

pub(super) fn escapes(path: &str, real: &Path, workspace: &Path) -> String {
    format!(
        "path escapes the workspace: {path} resolves to {}, outside {}; file tools only work \
         under the workspace root",
        real.display(),
        workspace.display()
    )
}

/// The workspace's real path, or why it cannot be written in.
pub(super) fn canonical_workspace(workspace: &Path) -> Result<PathBuf, String> {
    workspace.canonicalize().map_err(|error| {
        format!(
            "workspace {} is not accessible: {error}",
            workspace.display()
        )
    })
}
