//! Edits of the user's config file made on the user's behalf (an "always allow" answer),
//! keeping the file's comments and layout.

use std::path::Path;

use anyhow::{Context, Result};
use toml_edit::{Array, DocumentMut, Item, Table, value};

/// Append `rule` to `[permissions] allow` in the config file at `path` (created if missing).
/// A rule already present is not added twice. The write is atomic (temp file + rename).
pub async fn append_allow_rule(path: &Path, rule: &str) -> Result<()> {
    let path = path.to_path_buf();
    let rule = rule.to_owned();
    tokio::task::spawn_blocking(move || append_allow_rule_blocking(&path, &rule))
        .await
        .context("config edit task failed")?
}

fn append_allow_rule_blocking(path: &Path, rule: &str) -> Result<()> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", path.display())),
    };
    let updated = with_allow_rule(&text, rule)
        .with_context(|| format!("cannot update {}", path.display()))?;
    if updated == text {
        return Ok(());
    }
    let dir = path.parent().context("config path has no directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let temp = path.with_extension("toml.tmp");
    {
        use std::io::Write;
        let mut file = std::fs::File::create(&temp)
            .with_context(|| format!("cannot write {}", temp.display()))?;
        file.write_all(updated.as_bytes())?;
        file.sync_all()?;
    }
    std::fs::rename(&temp, path).with_context(|| format!("cannot replace {}", path.display()))
}

/// The config text with `rule` in `[permissions] allow`.
fn with_allow_rule(text: &str, rule: &str) -> Result<String> {
    let mut document: DocumentMut = text.parse().context("the config file is not valid TOML")?;
    let permissions = document
        .entry("permissions")
        .or_insert_with(|| Item::Table(Table::new()));
    let permissions = permissions
        .as_table_like_mut()
        .context("`permissions` is not a table")?;
    let allow = permissions.entry("allow").or_insert(value(Array::new()));
    let allow = allow
        .as_array_mut()
        .context("`permissions.allow` is not an array")?;
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
    async fn writes_the_file_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agentd").join("config.toml");
        append_allow_rule(&path, "Edit(src/**)").await.unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("Edit(src/**)"), "{text}");
    }
}
