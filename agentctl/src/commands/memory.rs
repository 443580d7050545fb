//! `agentctl memory show [DIR]`: the curated memory stores sessions in DIR (default: the current
//! directory) use, `MEMORY.md` and `USER.md`, with their entries and usage.

use std::path::PathBuf;

use protocol::memory::{MemoryGetParams, MemoryGetResult, MemoryScope, MemoryStore};
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

/// The stores as text: a line per store with its usage, then its entries.
pub fn render(result: &MemoryGetResult) -> String {
    let scope = match result.scope {
        MemoryScope::User => "the user's memory",
        MemoryScope::Project => "the project's memory",
    };
    let mut out = format!("{} ({scope})\n", result.dir);
    for (name, store) in [("MEMORY.md", &result.memory), ("USER.md", &result.user)] {
        out.push_str(&render_store(name, store));
    }
    out
}

fn render_store(name: &str, store: &MemoryStore) -> String {
    let mut out = format!(
        "\n{name}  {}/{} chars\n",
        thousands(store.usage_chars),
        thousands(store.limit_chars)
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

    #[test]
    fn renders_both_stores_with_usage_and_multiline_entries() {
        let store = |path: &str, entries: &[&str], usage, limit| MemoryStore {
            path: path.to_owned(),
            entries: entries.iter().map(|entry| (*entry).to_owned()).collect(),
            usage_chars: usage,
            limit_chars: limit,
            warning: None,
        };
        let result = MemoryGetResult {
            dir: "/p/.agents/memory".to_owned(),
            scope: MemoryScope::Project,
            memory: store("/p/.agents/memory/MEMORY.md", &["a\nb", "c"], 1474, 2200),
            user: store("/p/.agents/memory/USER.md", &[], 0, 1375),
        };
        assert_eq!(
            render(&result),
            "/p/.agents/memory (the project's memory)\n\
             \nMEMORY.md  1,474/2,200 chars\n  - a\n    b\n  - c\n\
             \nUSER.md  0/1,375 chars\n  (empty)\n"
        );
    }
}
