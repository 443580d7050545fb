//! Tests of project settings loading (`[permissions]` of config.toml is tested with config).

use agentd_core::workspace::{ProjectDirs, project_dirs};

use pretty_assertions::assert_eq;

use super::settings::PROJECT_SETTINGS_FILES;
use super::{PermissionMode, load_project_settings};
use agentd_core::test_support::give_to_other_user;

/// The settings of `workspace` with every file trusted as it is now.
fn load_trusted(
    workspace: &std::path::Path,
) -> Result<super::ProjectSettings, super::SettingsError> {
    let trust = crate::trust::ProjectTrust::pin_as_found(workspace);
    load_project_settings(workspace, &trust)
}

fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn errors_of(
    dir: &tempfile::TempDir,
    workspace: &str,
) -> (usize, Option<PermissionMode>, Vec<String>) {
    let settings = load_trusted(&dir.path().join(workspace)).unwrap();
    let root = dir.path().display().to_string();
    let errors = settings
        .errors
        .iter()
        .map(|error| error.to_string().replace(&root, "P"))
        .collect();
    let count = settings.rules.allow.len() + settings.rules.ask.len() + settings.rules.deny.len();
    (count, settings.default_mode, errors)
}

#[test]
fn json_settings_in_claude_shape() {
    let dir = project(&[(
        ".agents/settings.json",
        r#"{"hooks": {}, "permissions": {"allow": ["Bash(npm test:*)", "Bsh"], "deny": ["Read(.env)", 3],
            "defaultMode": "acceptEdits", "additionalDirectories": []}}"#,
    )]);
    let (count, mode, mut errors) = errors_of(&dir, "");
    assert_eq!(count, 2);
    assert_eq!(mode, Some(PermissionMode::AcceptEdits));
    // In the order of the JSON object's keys, which depends on serde_json's features (a
    // workspace build may turn on `preserve_order`): compared sorted.
    errors.sort();
    assert_eq!(
        errors,
        vec![
            r#"P/.agents/settings.json: permissions.additionalDirectories "[]": unknown setting (expected allow, ask, deny or defaultMode); ignored"#,
            r#"P/.agents/settings.json: permissions.allow[1] "Bsh": unknown tool "Bsh"; did you mean "Bash"?"#,
            r#"P/.agents/settings.json: permissions.deny[1] "3": must be a string"#,
        ]
    );
}

#[test]
fn toml_settings_report_line_and_column_and_refuse_bypass() {
    let dir = project(&[(
        ".agents/settings.toml",
        "[permissions]\nallow = [\"Read\",\n  \"Bassh(ls)\"]\ndefault_mode = \"bypass\"\n\n[hooks]\n",
    )]);
    let (count, mode, errors) = errors_of(&dir, "");
    assert_eq!(count, 1);
    assert_eq!(mode, None);
    assert_eq!(
        errors,
        vec![
            r#"P/.agents/settings.toml:3:3: permissions.allow[1] "Bassh(ls)": unknown tool "Bassh"; did you mean "Bash"?"#,
            r#"P/.agents/settings.toml:4:16: permissions.default_mode "bypass": bypass can only be chosen in the user config or for a session"#,
        ]
    );
}

#[test]
fn settings_are_found_up_to_the_git_root_and_syntax_errors_fail() {
    let dir = project(&[
        (
            ".agents/settings.toml",
            "[permissions]\ndeny = [\"Bash(rm:*)\"]\n",
        ),
        ("sub/dir/file", ""),
    ]);
    let (count, _, errors) = errors_of(&dir, "sub/dir");
    assert_eq!((count, errors.len()), (1, 0));

    let none = tempfile::tempdir().unwrap();
    assert!(load_trusted(none.path()).unwrap().sources.is_empty());

    let bad = project(&[(
        ".agents/settings.toml",
        "[permissions]\nallow = [\"Read\"\n",
    )]);
    let error = load_trusted(bad.path()).unwrap_err();
    assert_eq!(error.line, 2, "{error}");
    let unknown = project(&[(".agents/settings.toml", "[permissions]\nallw = []\n")]);
    let error = load_trusted(unknown.path()).unwrap_err().to_string();
    assert!(error.contains(":2:1: unknown field `allw`"), "{error}");
}

/// config.toml and a project's settings.toml share one `[permissions]` shape; what only the
/// user may set is refused in a project's, naming where, and nothing of the file applies.
#[test]
fn a_project_cannot_set_the_approval_timeout() {
    let dir = project(&[(
        ".agents/settings.toml",
        "[permissions]\nallow = [\"Read\"]\napproval_timeout_secs = 5\n",
    )]);
    let error = load_trusted(dir.path()).unwrap_err().to_string();
    assert!(
        error.contains(":3:25: permissions.approval_timeout_secs is a user setting"),
        "{error}"
    );
}

/// A parent of another user ends the walk: its `.git` makes no repository of the workspace
/// and its settings do not apply; the same parent of our own is the git root.
#[test]
fn the_walk_stops_at_a_parent_of_another_user() {
    let dir = project(&[
        (
            ".agents/settings.toml",
            "[permissions]\ndefault_mode = \"acceptEdits\"\n",
        ),
        ("work/file", ""),
    ]);
    let work = dir.path().join("work");
    assert_eq!(
        project_dirs(&work),
        ProjectDirs {
            dirs: vec![work.clone(), dir.path().to_path_buf()],
            in_repository: true,
        }
    );
    assert_eq!(errors_of(&dir, "work").1, Some(PermissionMode::AcceptEdits));
    if !give_to_other_user("the_walk_stops_at_a_parent_of_another_user", dir.path()) {
        return;
    }
    assert_eq!(
        project_dirs(&work),
        ProjectDirs {
            dirs: vec![work.clone()],
            in_repository: false,
        }
    );
    let settings = load_trusted(&work).unwrap();
    assert_eq!(settings.default_mode, None);
    assert!(settings.sources.is_empty() && settings.refused.is_empty());
}

/// Another user's settings file, whichever of the names, is not read and does not count as
/// the project's settings: a file planted in a subdirectory cannot hide the repository's own
/// deny rules.
#[test]
fn another_users_settings_file_is_refused_and_the_walk_goes_on() {
    for name in PROJECT_SETTINGS_FILES {
        let planted = if name.ends_with(".json") {
            r#"{"permissions": {"allow": ["Bash"]}}"#
        } else {
            "[permissions]\nallow = [\"Bash\"]\n"
        };
        let dir = project(&[
            (
                ".agents/settings.toml",
                "[permissions]\ndeny = [\"Bash(rm:*)\"]\n",
            ),
            (&format!("sub/{name}"), planted),
        ]);
        let theirs = dir.path().join("sub").join(name);
        let test = "another_users_settings_file_is_refused_and_the_walk_goes_on";
        if !give_to_other_user(test, &theirs) {
            return;
        }
        let settings = load_trusted(&dir.path().join("sub")).unwrap();
        assert_eq!(
            settings.sources,
            vec![dir.path().join(".agents/settings.toml")]
        );
        assert_eq!(
            (settings.rules.allow.len(), settings.rules.deny.len()),
            (0, 1)
        );
        assert_eq!(settings.refused.len(), 1, "{:?}", settings.refused);
        assert!(
            settings.refused[0].contains(&theirs.display().to_string())
                && settings.refused[0].contains("another user"),
            "{:?}",
            settings.refused
        );
    }
}
