//! The workspace and its project: containment and protected paths, hard limits no permission
//! rule overrides (every path a file tool touches is resolved through `..` and symlinks and must
//! stay under the workspace root, and no file tool writes inside a protected path), and where a
//! project's own files are looked for ([`project_dirs`]: settings, notes, skills, agents, memory).

use std::io;
use std::path::{Component, Path, PathBuf};

/// Resolves `path` (relative to the workspace, or absolute) to an absolute path under the
/// workspace, following symlinks.
///
/// The deepest existing ancestor is canonicalised and the remaining (not yet existing) normal
/// components are appended, so paths of files about to be created resolve too. A `..` after a
/// non-existent directory, a dangling symlink, and any result outside the workspace are refused
/// with a message written for the model.
///
/// Blocking (it touches the file system); async code calls [`resolve_in_workspace_async`].
pub fn resolve_in_workspace(workspace: &Path, path: &str) -> Result<PathBuf, String> {
    if path.trim().is_empty() {
        return Err("path is empty; give a path relative to the workspace root".to_owned());
    }
    let workspace = workspace.canonicalize().map_err(|error| {
        format!(
            "workspace {} is not accessible: {error}",
            workspace.display()
        )
    })?;
    let requested = Path::new(path);
    let joined = if requested.is_absolute() {
        requested.to_path_buf()
    } else {
        workspace.join(requested)
    };

    let (existing, rest) = deepest_existing_ancestor(&joined)?;
    let mut resolved = existing.canonicalize().map_err(|error| {
        if error.kind() == io::ErrorKind::NotFound {
            format!("{path}: a symlink on the way points to a path that does not exist")
        } else {
            format!("{path}: cannot resolve: {error}")
        }
    })?;
    for component in rest.components() {
        match component {
            Component::Normal(name) => resolved.push(name),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(format!(
                    "{path}: `..` follows a directory that does not exist; give a path without it"
                ));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!("{path}: cannot resolve"));
            }
        }
    }
    if !resolved.starts_with(&workspace) {
        return Err(format!(
            "path escapes the workspace: {path} resolves to {}, outside {}; file tools only work \
             under the workspace root",
            resolved.display(),
            workspace.display()
        ));
    }
    Ok(resolved)
}

/// [`resolve_in_workspace`] on the blocking pool.
pub async fn resolve_in_workspace_async(workspace: &Path, path: &str) -> Result<PathBuf, String> {
    let workspace = workspace.to_path_buf();
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || resolve_in_workspace(&workspace, &path))
        .await
        .map_err(|error| format!("path resolution failed: {error}"))?
}

/// Files and directories no tool writes, however it is allowed: the repository (its hooks and
/// config included), agent settings (which hold the rules themselves), and the project's MCP
/// servers (`.mcp.json`, read from every directory from the session's cwd up to the git root,
/// so at any depth of the workspace). Matched by name, whether or not the path exists.
const PROTECTED_ANYWHERE: &[&str] = &[".git", ".agents", ".claude", ".mcp.json"];
/// Protected only as the first component under the workspace root.
const PROTECTED_AT_ROOT: &[&str] = &["skills"];
/// The protected paths as messages name them.
pub const PROTECTED_PATHS: &str =
    ".git (its hooks and config included), .agents, .claude, .mcp.json or skills/";

/// Project notes, read into every session's system prompt from each directory between the git
/// root and the session's cwd (`agent::prompt`), in this order of preference. The file tools
/// write them only after an approval that names them ([`notes_file`]).
pub const NOTES_FILES: &[&str] = &["AGENTS.md", "CLAUDE.md"];

/// The first protected component of `resolved` under `workspace`, as the path up to it (ASCII
/// case-insensitive, for case-insensitive file systems). The permission gate asks it of the
/// path a call names; `write_file` and `edit_file` ask it again of the directory they opened.
pub fn protected_component(resolved: &Path, workspace: &Path) -> Option<String> {
    let relative = resolved.strip_prefix(workspace).ok()?;
    let mut prefix = PathBuf::new();
    for (index, component) in relative.components().enumerate() {
        let Component::Normal(name) = component else {
            continue;
        };
        prefix.push(name);
        let name = name.to_string_lossy().to_ascii_lowercase();
        if PROTECTED_ANYWHERE.contains(&name.as_str())
            || (index == 0 && PROTECTED_AT_ROOT.contains(&name.as_str()))
        {
            return Some(prefix.display().to_string());
        }
    }
    None
}

/// `resolved` relative to `workspace` when it is a notes file ([`NOTES_FILES`], by its last
/// component, ASCII case-insensitive), at any depth: a session started in that directory reads
/// it into its prompt.
pub fn notes_file(resolved: &Path, workspace: &Path) -> Option<String> {
    let relative = resolved.strip_prefix(workspace).ok()?;
    is_notes_name(relative.file_name()?).then(|| relative.display().to_string())
}

/// Whether `name` is one of [`NOTES_FILES`] (ASCII case-insensitive).
pub fn is_notes_name(name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy();
    NOTES_FILES
        .iter()
        .any(|notes| notes.eq_ignore_ascii_case(&name))
}

/// The refusal of a write that reaches a notes file through a link of another name.
pub fn notes_through_link(path: &str, notes: &str) -> String {
    format!(
        "{path} leads to `{notes}` through a symlink; `{notes}` is read into every session's \
         prompt, so it is written only by its own name, after an approval that names it"
    )
}

/// `path` relative to the workspace for messages ("." for the root), or as is when outside.
pub fn display_path(workspace: &Path, path: &Path) -> String {
    match path.strip_prefix(workspace) {
        Ok(relative) if relative.as_os_str().is_empty() => ".".to_owned(),
        Ok(relative) => relative.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// Splits `path` into its deepest ancestor that exists (as a file, directory or symlink) and the
/// rest.
fn deepest_existing_ancestor(path: &Path) -> Result<(PathBuf, PathBuf), String> {
    for ancestor in path.ancestors() {
        if ancestor.as_os_str().is_empty() || ancestor.symlink_metadata().is_err() {
            continue;
        }
        let rest = path
            .strip_prefix(ancestor)
            .map_err(|error| format!("{}: cannot resolve: {error}", path.display()))?;
        return Ok((ancestor.to_path_buf(), rest.to_path_buf()));
    }
    Err(format!("{}: no part of the path exists", path.display()))
}

/// Where a project's files are looked for: see [`project_dirs`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectDirs {
    /// The workspace, then its parents up to the git root, innermost first; without a git
    /// root, every parent the walk crossed.
    pub dirs: Vec<PathBuf>,
    /// Whether the walk found a git root (the last of `dirs`).
    pub in_repository: bool,
}

impl ProjectDirs {
    /// The directories project settings are looked for in: up to the git root, or the
    /// workspace alone outside a repository.
    pub fn settings_dirs(&self) -> &[PathBuf] {
        if self.in_repository {
            &self.dirs
        } else {
            &self.dirs[..self.dirs.len().min(1)]
        }
    }

    /// Where files found in `dir` (one of `dirs`) may lead through symlinks: the git root in a
    /// repository, else `dir` itself (outside a repository the walk may have reached the home
    /// directory, which is no project).
    pub fn containment_for<'a>(&'a self, dir: &'a Path) -> &'a Path {
        match self.dirs.last() {
            Some(root) if self.in_repository => root,
            _ => dir,
        }
    }
}

/// Walks from `workspace` up to the git root (a directory holding `.git`), innermost first.
/// The walk never enters a parent that belongs to another user: a `.git`, settings and notes
/// planted by someone else in a shared, world-writable parent (their `/tmp/x` above our
/// `/tmp/x/work`) make no project of the workspace. The workspace itself is always the first
/// directory (the user chose it); the files read in any of them are checked one by one
/// (`regular_file::read_own_text`). Blocking (metadata of each parent).
pub fn project_dirs(workspace: &Path) -> ProjectDirs {
    let mut dirs = Vec::new();
    for directory in workspace.ancestors() {
        if !dirs.is_empty() && !crate::regular_file::is_own_dir(directory) {
            break;
        }
        dirs.push(directory.to_path_buf());
        if directory.join(".git").exists() {
            return ProjectDirs {
                dirs,
                in_repository: true,
            };
        }
    }
    ProjectDirs {
        dirs,
        in_repository: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir(&root).unwrap();
        (dir, root)
    }

    #[test]
    fn relative_and_absolute_paths_inside_resolve() {
        let (_dir, root) = workspace();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/main.rs"), "").unwrap();
        assert_eq!(
            resolve_in_workspace(&root, "src/main.rs").unwrap(),
            root.join("src/main.rs")
        );
        assert_eq!(
            resolve_in_workspace(&root, root.join("src/./main.rs").to_str().unwrap()).unwrap(),
            root.join("src/main.rs")
        );
        assert_eq!(resolve_in_workspace(&root, ".").unwrap(), root);
        assert_eq!(
            resolve_in_workspace(&root, "src/../src/main.rs").unwrap(),
            root.join("src/main.rs")
        );
    }

    #[test]
    fn new_file_paths_resolve_under_the_workspace() {
        let (_dir, root) = workspace();
        assert_eq!(
            resolve_in_workspace(&root, "new/dir/file.txt").unwrap(),
            root.join("new/dir/file.txt")
        );
    }

    #[test]
    fn dot_dot_escapes_are_refused() {
        let (_dir, root) = workspace();
        let error = resolve_in_workspace(&root, "../outside.txt").unwrap_err();
        assert!(error.starts_with("path escapes the workspace"), "{error}");
        let error = resolve_in_workspace(&root, "/etc/passwd").unwrap_err();
        assert!(error.starts_with("path escapes the workspace"), "{error}");
        let error = resolve_in_workspace(&root, "missing/../../outside").unwrap_err();
        assert!(error.contains("`..`"), "{error}");
    }

    #[test]
    fn symlink_escapes_are_refused() {
        let (dir, root) = workspace();
        let outside = dir.path().canonicalize().unwrap().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("secret"), "x").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        for path in ["link/secret", "link/new-file", "link"] {
            let error = resolve_in_workspace(&root, path).unwrap_err();
            assert!(
                error.starts_with("path escapes the workspace"),
                "{path}: {error}"
            );
        }
    }

    #[test]
    fn dangling_symlinks_are_refused() {
        let (dir, root) = workspace();
        let target = dir.path().join("nowhere/file");
        std::os::unix::fs::symlink(&target, root.join("dangling")).unwrap();
        let error = resolve_in_workspace(&root, "dangling").unwrap_err();
        assert!(error.contains("does not exist"), "{error}");
    }

    #[test]
    fn symlinks_inside_the_workspace_are_followed() {
        let (_dir, root) = workspace();
        std::fs::create_dir(root.join("real")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("alias")).unwrap();
        assert_eq!(
            resolve_in_workspace(&root, "alias/x").unwrap(),
            root.join("real/x")
        );
    }

    #[test]
    fn project_configuration_is_protected_by_name_at_any_depth() {
        let (_dir, root) = workspace();
        let protected = |path: &str| protected_component(&root.join(path), &root);
        assert_eq!(protected(".mcp.json").as_deref(), Some(".mcp.json"));
        assert_eq!(protected("web/.MCP.json").as_deref(), Some("web/.MCP.json"));
        assert_eq!(protected(".git/hooks/pre-commit").as_deref(), Some(".git"));
        assert_eq!(protected("sub/.Claude/x").as_deref(), Some("sub/.Claude"));
        assert_eq!(protected("skills/x/SKILL.md").as_deref(), Some("skills"));
        assert_eq!(protected("docs/skills/x.md"), None);
        assert_eq!(protected("docs/mcp.json"), None);
        assert_eq!(protected("AGENTS.md"), None);
    }

    #[test]
    fn notes_files_are_named_at_any_depth() {
        let (_dir, root) = workspace();
        let notes = |path: &str| notes_file(&root.join(path), &root);
        assert_eq!(notes("AGENTS.md").as_deref(), Some("AGENTS.md"));
        assert_eq!(
            notes("web/app/claude.MD").as_deref(),
            Some("web/app/claude.MD")
        );
        assert_eq!(notes("AGENTS.md.bak"), None);
        assert_eq!(notes("AGENTS.md/x"), None);
        assert_eq!(notes_file(Path::new("/elsewhere/AGENTS.md"), &root), None);
    }

    #[test]
    fn empty_path_is_refused() {
        let (_dir, root) = workspace();
        assert!(resolve_in_workspace(&root, " ").is_err());
    }
}
