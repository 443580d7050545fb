//! `agentctl memory show [DIR]`: the curated memory stores sessions in DIR (default: the current
//! directory) use, `MEMORY.md` and `USER.md`, each with its file, whose it is (the project
//! root's or the user's), its entries and usage; and whether memory is on.

use std::path::PathBuf;

use protocol::memory::{MemoryGetParams, MemoryGetResult, MemoryStore};
use protocol::methods::MemoryGet;

use crate::Context;
use crate::output::{CommandError, print_json};

/// `agentctl memory show [DIR]`.
pub async fn show(ctx: &Context, dir: Option<PathBuf>) -> Result<(), CommandError> {
    let cwd = std::env::current_dir()
        .map_err(|err| CommandError::failed(format!("cannot read the current directory: {err}")))?;
    let cwd = match dir {
        Some(dir) => cwd.join(dir),
        None => cwd,
    };
    let params = MemoryGetParams {
        cwd: cwd.display().to_string(),
    };
    let connection = ctx.connect().await?;
    let result = connection.request::<MemoryGet>(&params).await?;
    if ctx.json {
        print_json(&result);
    } else {
        crate::say_raw!("{}", render(&result));
    }
    Ok(())
}

/// The stores as text: whether memory is off, then a block per store: its name, whose it is
/// and its usage, its file, its entries.
pub fn render(result: &MemoryGetResult) -> String {
    let mut out = String::new();
    if !result.enabled {
        out.push_str(
            "memory is off ([memory] enabled = false in config.toml): sessions neither see nor save it\n",
        );
    }
    for (name, store) in [("MEMORY.md", &result.memory), ("USER.md", &result.user)] {
        out.push_str(&render_store(name, store));
    }
    out
}

fn render_store(name: &str, store: &MemoryStore) -> String {
    let mut out = format!(
        "\n{name}  {}  {}/{} chars\n  file: {}\n",
        store.whose(),
        thousands(store.usage_chars),
        thousands(store.limit_chars),
        store.path
    );
    if let Some(warning) = &store.warning {
        out.push_str(&format!("  warning: {warning}\n"));
    }
    if store.entries.is_empty() {
        out.push_str("  (empty)\n");
    }
    for entry in &store.entries {
        for (index, line) in entry.lines().enumerate() {
            let lead = if index == 0 { "- " } else { "  " };
            out.push_str(&format!("  {lead}{line}\n"));
        }
    }
    out
}

/// `2200` → `2,200`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::memory::MemoryScope;

    #[test]
    fn renders_both_stores_with_usage_and_multiline_entries() {
        let store = |path: &str, entries: &[&str], usage, limit, scope| MemoryStore {
            path: path.to_owned(),
            scope: Some(scope),
            project_root: (scope == MemoryScope::Project).then(|| "/p".to_owned()),
            in_repository: false,
            entries: entries.iter().map(|entry| (*entry).to_owned()).collect(),
            usage_chars: usage,
            limit_chars: limit,
            warning: None,
        };
        let mut result = MemoryGetResult {
            dir: "/s/memory/projects/p-0123".to_owned(),
            scope: MemoryScope::Project,
            enabled: true,
            memory: store(
                "/s/memory/projects/p-0123/MEMORY.md",
                &["a\nb", "c"],
                1474,
                2200,
                MemoryScope::Project,
            ),
            user: store("/d/memory/USER.md", &[], 0, 1375, MemoryScope::User),
        };
        assert_eq!(
            render(&result),
            "\nMEMORY.md  project /p  1,474/2,200 chars\n  file: /s/memory/projects/p-0123/MEMORY.md\n  - a\n    b\n  - c\n\
             \nUSER.md  the user's, seen in every project  0/1,375 chars\n  file: /d/memory/USER.md\n  (empty)\n"
        );
        result.enabled = false;
        assert!(render(&result).starts_with("memory is off"));
    }
}
