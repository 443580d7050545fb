//! Notes files (`AGENTS.md`, `CLAUDE.md`), read into every session's prompt: which write of a
//! file tool changes one, and why such a write asks every time, whatever the mode or allow
//! rules (see `Policy::evaluate`).

use std::path::Path;

use super::ToolRequest;
use agentd_core::workspace::{is_notes_name, notes_file, resolve_in_workspace};

/// Whether `request` writes a notes file (`AGENTS.md`, `CLAUDE.md`): such a call asks every
/// time (see [`super::Policy::evaluate`]), so its approval offers neither "allow for session" nor
/// "allow always", and an answer that would remember it is taken as "allow once". Blocking
/// (resolves the path).
pub fn asks_every_time(request: &ToolRequest<'_>) -> bool {
    if !matches!(request.tool, "write_file" | "edit_file") {
        return false;
    }
    let Some(path) = request
        .input
        .get("path")
        .and_then(serde_json::Value::as_str)
    else {
        return false;
    };
    let Ok(resolved) = resolve_in_workspace(request.workspace, path) else {
        return false;
    };
    let workspace = request
        .workspace
        .canonicalize()
        .unwrap_or_else(|_| request.workspace.to_path_buf());
    !matches!(notes_written(path, &resolved, &workspace), Ok(None))
}

/// The notes file a write of `path` (resolved to `resolved`) changes, named as the call names
/// it. A notes name is the file the prompt reads, even when it is a link to another file (the
/// prompt follows it); a notes file reached through a link of another name is refused, so the
/// approval always names the file as the write reaches it (`write_target` refuses the same at
/// execution).
pub(super) fn notes_written(
    path: &str,
    resolved: &Path,
    workspace: &Path,
) -> Result<Option<String>, String> {
    let named = Path::new(path).file_name().is_some_and(is_notes_name);
    match notes_file(resolved, workspace) {
        Some(notes) if !named => Err(agentd_core::workspace::notes_through_link(path, &notes)),
        Some(notes) => Ok(Some(notes)),
        None if named => Ok(Some(path.trim_start_matches("./").to_owned())),
        None => Ok(None),
    }
}

/// Why a write of a notes file asks, whatever the mode and allow rules.
pub(super) fn notes_reason(action: &str, notes: &str) -> String {
    format!(
        "approval needed to {action}: `{notes}` is read into every session's prompt, so it is \
         changed only when you approve each write (no mode or allow rule covers it)"
    )
}
