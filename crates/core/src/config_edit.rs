//! Edits of the user's config file made on the user's behalf (an "always allow" answer),
//! keeping the file's comments and layout. One writer: edits of this process are serialised,
//! each replaces the config whole (`atomic_file`), so concurrent answers keep every rule and a
//! crash leaves the old or the new file.

use std::path::Path;
use std::sync::Mutex;

use anyhow::{Context, Result};
use toml_edit::{Array, DocumentMut, Item, Table, value};

/// Serialises every read-modify-write of the config in this process. A blocking mutex, taken
/// on the blocking thread that does the edit: a caller that goes away cannot release it early.
static CONFIG_WRITER: Mutex<()> = Mutex::new(());

/// Append `rule` to `[permissions] allow` in the config file at `path` (created if missing).
/// A rule already present is not added twice. See [`append_allow_rule_blocking`].
pub async fn append_allow_rule(path: &Path, rule: &str) -> Result<()> {
    let path = path.to_path_buf();
    let rule = rule.to_owned();
    tokio::task::spawn_blocking(move || append_allow_rule_blocking(&path, &rule))
        .await
        .context("config edit task failed")?
}

/// As [`append_allow_rule`], on the calling thread (blocking): takes the one-writer lock, reads
/// the file and replaces it with the edited text (`atomic_file::replace_atomically`).
pub fn append_allow_rule_blocking(path: &Path, rule: &str) -> Result<()> {
    append_rule_blocking(path, "allow", rule)
}

/// Like `append_allow_rule_blocking`, for `permissions.deny` ("deny always").
pub fn append_deny_rule_blocking(path: &Path, rule: &str) -> Result<()> {
    append_rule_blocking(path, "deny", rule)
}

/// Adds `rule` to `permissions.<list>` of the config file at `path` (see
/// `append_allow_rule_blocking`).
fn append_rule_blocking(path: &Path, list: &str, rule: &str) -> Result<()> {
    let _writer = CONFIG_WRITER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", path.display())),
    };
    let updated = with_rule(&text, list, rule)
        .with_context(|| format!("cannot update {}", path.display()))?;
    if updated == text {
        return Ok(());
    }
    let dir = path.parent().context("config path has no directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // The same permissions as the config it replaces (the umask applies), else 0600.
    let mode = std::fs::metadata(path)
        .map(|meta| crate::platform::mode_of(&meta))
        .unwrap_or(0o600);
    crate::atomic_file::replace_atomically(path, updated.as_bytes(), mode)
        .with_context(|| format!("cannot replace {}", path.display()))
}

/// The config text with `rule` in `[permissions] allow`.
#[cfg(test)]
fn with_allow_rule(text: &str, rule: &str) -> Result<String> {
    with_rule(text, "allow", rule)
}

/// `text` with `rule` in `permissions.<list>` (kept once; comments and layout kept).
fn with_rule(text: &str, list: &str, rule: &str) -> Result<String> {
    let mut document: DocumentMut = text.parse().context("the config file is not valid TOML")?;
    let permissions = document
        .entry("permissions")
        .or_insert_with(|| Item::Table(Table::new()));
    let permissions = permissions
        .as_table_like_mut()
        .context("`permissions` is not a table")?;
    let allow = permissions.entry(list).or_insert(value(Array::new()));
    let allow = allow
        .as_array_mut()
        .with_context(|| format!("`permissions.{list}` is not an array"))?;
    if !allow.iter().any(|existing| existing.as_str() == Some(rule)) {
        allow.push(rule);
    }
    Ok(document.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_the_rule_keeping_comments_and_other_settings() {
        let text = "# my config\nmax_steps = 7 # steps\n\n[permissions]\nallow = [\"Read\"]\n";
        let updated = with_allow_rule(text, "Bash(npm test)").unwrap();
        assert!(updated.contains("# my config"));
        assert!(updated.contains("max_steps = 7 # steps"));
        assert!(
            updated.contains(r#"allow = ["Read", "Bash(npm test)"]"#),
            "{updated}"
        );
        assert_eq!(
            with_allow_rule(&updated, "Bash(npm test)").unwrap(),
            updated
        );
    }

    #[test]
    fn creates_the_section_when_missing() {
        let updated = with_allow_rule("", "run_shell(ls)").unwrap();
        let parsed: toml::Table = toml::from_str(&updated).unwrap();
        assert_eq!(
            parsed["permissions"]["allow"][0].as_str(),
            Some("run_shell(ls)")
        );
    }

    #[tokio::test]
    async fn concurrent_edits_keep_every_rule_and_leave_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "# mine\n").unwrap();
        let edits: Vec<_> = (0..16)
            .map(|n| {
                let path = path.clone();
                tokio::spawn(async move { append_allow_rule(&path, &format!("Edit(f{n})")).await })
            })
            .collect();
        for edit in edits {
            edit.await.unwrap().unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let parsed: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(
            parsed["permissions"]["allow"].as_array().unwrap().len(),
            16,
            "{text}"
        );
        assert!(text.contains("# mine"), "{text}");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["config.toml"]);
    }

    #[tokio::test]
    async fn writes_the_file_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agentd").join("config.toml");
        append_allow_rule(&path, "Edit(src/**)").await.unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("Edit(src/**)"), "{text}");
    }
}
