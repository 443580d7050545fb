//! Tests of config.toml's sections as `config::file` checks them: `[permissions]`, `[hooks]`,
//! `[memory]`, `[shell]`.

use std::io::Write;

use agentd_policy::permission::PermissionMode;
use pretty_assertions::assert_eq;

/// `[permissions]` of config.toml: rules and mode are read, the timeout defaults and is
/// bounded, and every bad rule and mode is reported with its position.
#[test]
fn config_toml_permissions_section() {
    let load = |text: &str| {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        let result = crate::config::load(Some(file.path()), &|_| None);
        let path = file.path().display().to_string();
        result.map_err(|error| error.to_string().replace(&path, "config.toml"))
    };
    let config = load(
        "[permissions]\nallow = [\"Bash(npm test:*)\"]\ndeny = [\"Read(./secrets/**)\"]\ndefault_mode = \"bypassPermissions\"\n",
    )
    .unwrap();
    assert_eq!(config.permissions.default_mode, PermissionMode::Bypass);
    assert_eq!(config.permissions.approval_timeout_secs, 600);
    assert_eq!(config.permissions.rules.deny.len(), 1);
    assert_eq!(
        load("").unwrap().permissions.default_mode,
        PermissionMode::Default
    );

    let error = load(
        "[permissions]\nask = [\"Bsh\"]\ndefault_mode = \"yolo\"\napproval_timeout_secs = 30\n",
    )
    .unwrap_err();
    assert_eq!(
        error,
        "config.toml:2:8: permissions.ask[0] \"Bsh\": unknown tool \"Bsh\"; did you mean \"Bash\"?\n\
         config.toml:3:16: permissions.default_mode \"yolo\": unknown permission mode \"yolo\"; expected default, acceptEdits, plan or bypass"
    );
    let error = load("[permissions]\nallow_all = true\n").unwrap_err();
    assert!(
        error.starts_with("config.toml:2:1: unknown field `allow_all`"),
        "{error}"
    );
    let error = load("[permissions]\napproval_timeout_secs = 0\n").unwrap_err();
    assert!(
        error.contains("approval_timeout_secs must be at least 1"),
        "{error}"
    );
}

/// `[hooks]` of config.toml: Claude Code's shape in TOML; an unknown event or a hook without a
/// command refuses the file at the event's position, a bad matcher is a warning of each run.
#[test]
fn config_toml_hooks_section() {
    let load = |text: &str| {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        let result = crate::config::load(Some(file.path()), &|_| None);
        let path = file.path().display().to_string();
        result.map_err(|error| error.to_string().replace(&path, "config.toml"))
    };
    let config = load(
        "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\nhooks = [{ type = \"command\", command = \"check.sh\", timeout = 5 }]\n\n[[hooks.Stop]]\nhooks = [{ type = \"command\", command = \"stop.sh\" }]\n",
    )
    .unwrap();
    assert_eq!(config.hooks.len(), 2);
    assert_eq!(config.hooks[0].command, "check.sh");
    assert_eq!(config.hooks[0].timeout, std::time::Duration::from_secs(5));
    assert_eq!(
        config.hooks[1].timeout,
        agentd_agent::hooks::DEFAULT_HOOK_TIMEOUT
    );
    assert_eq!(config.hook_warnings, Vec::<String>::new());

    let error = load("max_steps = 3\n[[hooks.PreToolUze]]\nhooks = []\n").unwrap_err();
    assert!(
        error.starts_with("config.toml:2:9: hooks.PreToolUze: unknown event"),
        "{error}"
    );
    let error = load("[[hooks.Stop]]\nhooks = [{ type = \"command\" }]\n").unwrap_err();
    assert!(
        error.contains("hooks.Stop[0].hooks[0].command: must be a command line"),
        "{error}"
    );
    let config =
        load("[[hooks.PreToolUse]]\nmatcher = \"(\"\nhooks = [{ command = \"x\" }]\n").unwrap();
    assert!(config.hooks.is_empty());
    assert!(
        config.hook_warnings[0].contains("not a valid regex"),
        "{:?}",
        config.hook_warnings
    );
}

/// `[memory]`: on by default, per project, the limits bounded; `enabled`, `scope` read.
#[test]
fn config_toml_memory_section() {
    let load = |text: &str| {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        crate::config::load(Some(file.path()), &|_| None)
    };
    let defaults = load("").unwrap();
    assert_eq!(
        defaults.memory,
        agentd_knowledge::memory::MemorySettings::default()
    );
    assert_eq!(
        defaults.memory.scope,
        agentd_knowledge::memory::Scope::Project
    );
    assert!(!defaults.memory.disabled);
    let set = load("[memory]\nmemory_chars = 4000\n").unwrap();
    assert_eq!(set.memory.limits.memory_chars, 4000);
    assert_eq!(
        set.memory.limits.user_chars,
        agentd_knowledge::memory::DEFAULT_USER_CHARS
    );
    let set = load("[memory]\nenabled = false\nscope = \"user\"\n").unwrap();
    assert!(set.memory.disabled);
    assert_eq!(set.memory.scope, agentd_knowledge::memory::Scope::User);
    for (text, expected) in [
        ("user_chars = 0", "memory.user_chars must be at least 1"),
        (
            "memory_chars = 100001",
            "memory.memory_chars = 100001 is too large (at most 100000 characters)",
        ),
        ("chars = 5", "unknown field `chars`"),
        (
            "scope = \"global\"",
            "memory.scope = \"global\" is not a scope",
        ),
    ] {
        let error = load(&format!("[memory]\n{text}\n"))
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{text}: {error}");
    }
}

/// `[shell] windows`: PowerShell unless set; a name of no shell is refused with the choices.
#[test]
fn config_toml_shell_section() {
    use agentd_policy::process::shell_program::WindowsShell;
    let load = |text: &str| {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        crate::config::load(Some(file.path()), &|_| None).map_err(|error| error.to_string())
    };
    assert_eq!(load("").unwrap().windows_shell, WindowsShell::Powershell);
    assert_eq!(
        load("[shell]\nwindows = \"cmd\"\n").unwrap().windows_shell,
        WindowsShell::Cmd
    );
    assert_eq!(
        load("[shell]\nwindows = \"sh\"\n").unwrap().windows_shell,
        WindowsShell::Sh
    );
    let error = load("[shell]\nwindows = \"bash\"\n").unwrap_err();
    assert!(
        error.contains("unknown variant `bash`") && error.contains("powershell"),
        "{error}"
    );
    let error = load("[shell]\nunix = \"sh\"\n").unwrap_err();
    assert!(error.contains("unknown field `unix`"), "{error}");
}
